// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "lib/common/memory_budget.h"
#include "probes/fabric/probe.h"
#include "probes/fabric/responder.h"

namespace efawatch::fabric {

/// Limits on what one request may ask for. Values beyond them are INVALID_ARGUMENT, not clamped,
/// so a caller learns the limit instead of getting a different probe than it asked for.
struct ProbeLimits {
  uint32_t max_count = 100000;
  size_t max_message_bytes = 8u << 20;
  std::chrono::milliseconds max_deadline{120000};
  size_t max_sizes = 16;
  uint32_t max_window = 64;
  std::chrono::milliseconds max_per_size{10000};
  size_t max_running = 8;  ///< Probes at once (any kind); more is RESOURCE_EXHAUSTED.
};

/// Latest result per peer, bounded; what the metrics edge reads.
struct PeerProbeState {
  std::string peer;  ///< Printable fabric address.
  std::optional<PingResult> ping;
  std::optional<BandwidthResult> bandwidth;
  std::chrono::system_clock::time_point last_run{};
  uint64_t failures = 0;  ///< Probes that ended other than kCompleted, or failed to start.
};

struct FabricServiceOptions {
  EndpointOptions endpoint;  ///< Providers and interface, for the responder and every probe.
  bool responder = true;     ///< Run the always-on responder.
  ResponderOptions responder_options;  ///< Its `endpoint` is replaced by `endpoint` above.
  ProbeLimits limits;
  /// Every probe reserves its buffers' worst case here before it starts (RESOURCE_EXHAUSTED when
  /// they do not fit); null: no budget. Outlives the service.
  common::MemoryBudget* budget = nullptr;
  size_t max_peers = 64;  ///< Peers kept in the per-peer table (least recently probed dropped).
  /// Called on the probe's thread after each probe's result is recorded (the app re-evaluates
  /// its fabric findings). Must not call back into StartPing/StartBandwidth synchronously.
  std::function<void()> on_probe_done;
};

/// The agent's fabric side: the responder plus on-demand probes, each run on its own jthread so
/// callers (gRPC handlers) never block. One bandwidth probe at a time per service (one NIC): a
/// second waits until the first ends or its own deadline passes, then gets RESOURCE_EXHAUSTED.
/// Thread-safe. Stop() (and the destructor) cancels running probes through their stop_token and
/// joins their threads.
class FabricService {
 public:
  using PingDone = std::function<void(absl::StatusOr<PingResult>)>;
  using BandwidthDone = std::function<void(absl::StatusOr<BandwidthResult>)>;

  static absl::StatusOr<std::unique_ptr<FabricService>> Create(const FabricServiceOptions& options,
                                                               const common::Clock& clock);
  ~FabricService();
  void Stop();

  /// The responder, or null when it is off.
  const Responder* responder() const { return responder_.get(); }

  /// INVALID_ARGUMENT with a message when `o` exceeds the limits.
  absl::Status Validate(const PingOptions& o) const;
  absl::Status Validate(const BandwidthOptions& o) const;

  /// Starts a probe; `done` runs exactly once, on the probe's thread (or inline when the start
  /// itself fails). The endpoint options of `o` are replaced by the service's. `cancel` (the
  /// caller gave up) stops the probe as Stop() does: it ends kCancelled within a poll and its
  /// slot is free for the next one; a bandwidth probe still waiting for the NIC ends CANCELLED.
  void StartPing(PingOptions o, PingDone done, std::stop_token cancel = {});
  void StartBandwidth(BandwidthOptions o, BandwidthDone done, std::stop_token cancel = {});

  std::vector<PeerProbeState> PeerStates() const;

  /// Bytes this agent's own bandwidth probes moved, sent and received (the responder's sink
  /// included), since start. The EFA fallback check subtracts them from the ethernet bytes when
  /// the fabric is an IP provider, so our own probes never look like a job on TCP.
  uint64_t OwnTrafficBytes() const;
  /// OwnTrafficBytes() when the responder's provider is an IP one (tcp, sockets), else 0: only
  /// an IP provider's probes show on the ethernet counters.
  uint64_t OwnEthernetTrafficBytes() const;

 private:
  FabricService(const FabricServiceOptions& options, const common::Clock& clock)
      : options_(options), clock_(clock) {}
  bool Launch(std::function<void(std::stop_token)> work);
  /// A lease of `bytes` from the budget (an empty one without a budget), or RESOURCE_EXHAUSTED.
  absl::StatusOr<std::shared_ptr<common::MemoryBudget::Lease>> Reserve(uint64_t bytes,
                                                                       std::string_view what) const;
  void Record(const std::string& peer, const PingResult* ping, const BandwidthResult* bw,
              bool failed);
  void Notify() const;

  const FabricServiceOptions options_;
  const common::Clock& clock_;
  std::unique_ptr<Responder> responder_;

  mutable std::mutex mu_;
  std::condition_variable_any bw_free_;  // Any: a waiting probe also wakes on its stop token.
  bool bw_busy_ = false;                 // Guarded by mu_.
  bool stopping_ = false;                // Guarded by mu_.
  std::list<std::pair<std::jthread, std::shared_ptr<std::atomic<bool>>>> workers_;  // mu_
  std::map<std::string, PeerProbeState> peers_;  // Guarded by mu_.
  std::atomic<uint64_t> probe_bytes_{0};
};

}  // namespace efawatch::fabric
