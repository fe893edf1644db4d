// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "probes/collective/participant.h"
#include "probes/collective/types.h"

namespace efawatch::agent {

class Coordination;

/// How one scheduled run ended: efawatch_collective_probe_runs_total{result}.
enum class ScheduledRunResult {
  kOk,
  kFailed,          ///< The collective did not complete (dead peer, deadline, data error...).
  kSkippedBusy,     ///< RESOURCE_EXHAUSTED: a collective slot (here or at a peer) was taken.
  kSkippedNoPeers,  ///< mesh:N and the mesh had no reachable peer yet.
};
inline constexpr std::array kScheduledRunResults = {
    ScheduledRunResult::kOk, ScheduledRunResult::kFailed, ScheduledRunResult::kSkippedBusy,
    ScheduledRunResult::kSkippedNoPeers};
/// The label value: ok, failed, skipped_busy, skipped_no_peers.
std::string_view ResultName(ScheduledRunResult r);

/// The schedule's state after its latest run. Immutable once published; scrapes read it.
struct ScheduleSnapshot {
  std::array<uint64_t, kScheduledRunResults.size()> runs{};  ///< By ScheduledRunResult.
  bool completed_any = false;  ///< A run ended ok or failed (skips do not count).
  bool last_ok = false;        ///< Of the latest run that was not skipped.
  double last_duration_seconds = 0;
  uint32_t consecutive_failures = 0;  ///< Failed runs since the last ok one; skips leave it.
  std::string last_error;             ///< Of the latest failed run.
  std::chrono::system_clock::time_point last_success{};  ///< Epoch: never.
  /// Configured size (bytes) and busbw (bytes a second) of the latest ok run, by size.
  std::vector<std::pair<uint64_t, double>> busbw;
};

struct CollectiveScheduleOptions {
  std::chrono::milliseconds interval{15 * 60 * 1000};
  /// Each wait is interval x (1 +- jitter), and the first run comes at a uniform point of the
  /// first interval: a fleet restarted together (a DaemonSet rollout) does not probe in step.
  double jitter = 0.1;
  /// This agent's gRPC address as it dials itself: rank 0 of every run.
  std::string self_agent;
  /// Op, sizes, backend, iterations and deadline; participants are filled per run.
  collective::RunRequest request;
  uint64_t seed = 0;  ///< Of the jitter; 0: std::random_device.
};

/// How the schedule's thread waits for its next run: until `when` on the schedule's clock or a
/// stop, whichever comes first; false when stopped. Thread-safe.
class Waiter {
 public:
  virtual ~Waiter() = default;
  virtual bool WaitUntil(std::chrono::steady_clock::time_point when,
                         const std::stop_token& stop) = 0;
};

/// The agent's waiter: a condition variable woken by the stop token, for the time `clock` says is
/// left (a real clock: the two agree).
class ClockWaiter final : public Waiter {
 public:
  explicit ClockWaiter(const common::Clock& clock) : clock_(clock) {}
  bool WaitUntil(std::chrono::steady_clock::time_point when, const std::stop_token& stop) override;

 private:
  const common::Clock& clock_;
  std::mutex mu_;
  std::condition_variable_any cv_;
};

/// The scheduled collective probe: every interval (jittered) it runs one collective across this
/// agent and its peers through the same coordination path as RunCollective, and keeps the latest
/// result as an immutable snapshot for /metrics (it is a Collector). At most one run at a time
/// (one thread); a run refused because a collective slot is taken is a skip, counted, not a
/// failure. Off unless built (the agent builds it only with --collective-probe-interval-ms).
///
/// One std::jthread between Start and Stop. Snapshot and Collect are thread-safe; RunOnce is for
/// tests that drive the schedule without its thread.
class CollectiveSchedule final : public common::Collector {
 public:
  /// This run's peers (gRPC addresses, this agent left out); called on the schedule's thread.
  using PeersFn = std::function<std::vector<std::string>()>;
  /// Runs one collective and returns its result; must return soon after `stop` is requested.
  using RunFn = std::function<absl::StatusOr<collective::Result>(const collective::RunRequest&,
                                                                 const std::stop_token&)>;

  /// INVALID_ARGUMENT for a zero interval, no self address, or a request the limits refuse.
  static absl::StatusOr<std::unique_ptr<CollectiveSchedule>> Create(
      CollectiveScheduleOptions options, const collective::CollectiveLimits& limits, PeersFn peers,
      RunFn run, const common::Clock& clock, Waiter& waiter);
  ~CollectiveSchedule() override;
  void Start();
  /// Requests a stop and joins the thread: returns once a run in flight has returned.
  void Stop();

  std::shared_ptr<const ScheduleSnapshot> Snapshot() const;

  /// One run now, on the caller's thread.
  void RunOnce(const std::stop_token& stop);

  std::string_view Name() const override { return "collective_probe"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  CollectiveSchedule(CollectiveScheduleOptions options, PeersFn peers, RunFn run,
                     const common::Clock& clock, Waiter& waiter);
  void Loop(const std::stop_token& stop);

  const CollectiveScheduleOptions options_;
  const PeersFn peers_;
  const RunFn run_;
  const common::Clock& clock_;
  Waiter& waiter_;
  mutable std::mutex mu_;
  std::shared_ptr<const ScheduleSnapshot> snap_;  // guarded by mu_
  std::jthread thread_;
};

/// The RunFn of the agent: hands the request to `coordination` (as gRPC RunCollective does) and
/// waits for its answer, at most its deadline and ten seconds more; CANCELLED when stopped first
/// (the coordination itself is cancelled by Coordination::Stop).
CollectiveSchedule::RunFn CoordinationRunner(Coordination& coordination);

/// --collective-probe-peers: a static list of gRPC addresses, or mesh:N.
struct ProbePeers {
  std::vector<std::string> agents;  ///< Static list.
  size_t from_mesh = 0;             ///< N of mesh:N (then `agents` is empty).
};
absl::StatusOr<ProbePeers> ParseProbePeers(std::string_view spec);

/// The request of --collective-probe-sizes/-op/-backend/-iters/-deadline-ms: at most 8 sizes;
/// checked against `limits` as a two-agent run would be.
absl::StatusOr<collective::RunRequest> ProbeRequest(std::string_view sizes, std::string_view op,
                                                    std::string_view backend, uint32_t iters,
                                                    std::chrono::milliseconds deadline,
                                                    const collective::CollectiveLimits& limits);

}  // namespace efawatch::agent
