// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "daemon/signals/fabric_ready.h"
#include "lib/common/clock.h"
#include "probes/fabric/endpoint.h"

namespace efawatch::agent {

/// Pings this agent's own fabric responder through its own fabric (a fresh endpoint of the
/// responder's providers and interface), at start and every `interval`: the proof FabricReady
/// asks for that the node's fabric (provider, device, driver) carries messages. Ten small
/// messages as a background probe, a mesh ping's cost. Run directly, not through the fabric
/// service, so the node's own address never shows among the per-peer probe results.
/// Thread-safe: Latest() from any thread; Start() and Stop() from the owner's. Stop() cancels a
/// ping in flight and returns within a poll.
class SelfPing {
 public:
  /// `responder_address`: the responder's raw fabric address; empty when no responder runs
  /// (Latest() then says kNoResponder for good). `on_change`, if set, is called on the ping's
  /// thread with each new result (the node-state board's publisher).
  SelfPing(fabric::EndpointOptions endpoint, std::string responder_address,
           std::chrono::milliseconds interval, const common::Clock& clock,
           std::function<void(const signals::SelfPingState&)> on_change = {});
  ~SelfPing();
  SelfPing(const SelfPing&) = delete;
  SelfPing& operator=(const SelfPing&) = delete;

  void Start();
  void Stop();
  signals::SelfPingState Latest() const;

 private:
  void Run(const std::stop_token& stop);

  const fabric::EndpointOptions endpoint_;
  const std::string address_;
  const std::chrono::milliseconds interval_;
  const common::Clock& clock_;
  const std::function<void(const signals::SelfPingState&)> on_change_;
  mutable std::mutex mu_;
  signals::SelfPingState state_;  // guarded by mu_
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace efawatch::agent
