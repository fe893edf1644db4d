// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stop_token>
#include <thread>

#include "daemon/signals/fabric_ready.h"
#include "probes/fabric/fabric_service.h"

namespace efawatch::agent {

/// Pings this agent's own fabric responder through its own fabric endpoint, at start and every
/// `interval`: the proof FabricReady asks for that the node's fabric (provider, device, driver)
/// carries messages. A few small messages as a background probe, so the cost is a mesh ping's.
/// The result also shows among the fabric probe's per-peer results, as the node's own address.
/// Thread-safe: Latest() from any thread; Start() and Stop() from the owner's. The fabric
/// service must outlive this object (Stop() waits for the probe in flight to report).
class SelfPing {
 public:
  SelfPing(fabric::FabricService& fabric, std::chrono::milliseconds interval);
  ~SelfPing();
  SelfPing(const SelfPing&) = delete;
  SelfPing& operator=(const SelfPing&) = delete;

  void Start();
  void Stop();
  signals::SelfPingState Latest() const;

 private:
  // What the probe's callback writes; shared with it so a late report never touches a gone
  // object.
  struct Shared {
    std::mutex mu;
    std::condition_variable_any done_cv;
    signals::SelfPingState state{signals::SelfPingState::Outcome::kPending, ""};
    uint64_t reports = 0;
  };
  void Run(const std::stop_token& stop);

  fabric::FabricService& fabric_;
  const std::chrono::milliseconds interval_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::jthread thread_;
};

}  // namespace efawatch::agent
