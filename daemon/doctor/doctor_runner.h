// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "lib/common/findings_board.h"
#include "lib/doctor/doctor.h"

namespace efawatch::doctor {

struct ProcessReport {
  pid_t pid = 0;
  std::string namespace_name, pod;  // empty when not in a pod the agent knows
  std::string container_id;
  std::vector<Check> checks;
};

/// One run of the agent's doctor.
struct Report {
  std::chrono::system_clock::time_point ran_at{};
  std::vector<Check> node;
  std::vector<ProcessReport> processes;
  unsigned processes_skipped = 0;
};

struct DoctorRunnerOptions {
  std::filesystem::path sysfs = "/sys";
  std::filesystem::path procfs = "/proc";
  std::filesystem::path pod_log_root = "/var/log/pods";  ///< <ns>_<pod>_<uid> names pods
  std::chrono::milliseconds interval{3600 * 1000};       ///< 0: at start and on demand only
  unsigned max_processes = 32;  ///< NCCL processes checked per run (bounded cost)
  /// Called on the run's thread with each run's report (the node-state board's publisher).
  std::function<void(const Report&)> on_report;
};

/// Runs lib/doctor's checks for the node (driver, peermem, EFA devices from the host's /sys and
/// /proc) and all of them for every process of the host that has libnccl mapped (visible with
/// hostPID), each attributed to its pod through its cgroup. At start, every `interval`, and on
/// demand (RunNow). Exports efawatch_doctor_checks{check,status} for the node and
/// efawatch_doctor_pod_failures{namespace,pod}; publishes one finding per FAIL (owner "doctor"),
/// replaced at each run, so a fixed problem clears.
class DoctorRunner final : public common::Collector {
 public:
  DoctorRunner(DoctorRunnerOptions options, common::FindingsBoard* findings,
               const common::Clock& clock);
  ~DoctorRunner() override;
  void Start();
  void Stop();

  /// Runs the checks on the caller's thread and returns (and keeps) the report.
  Report RunNow();

  /// The latest run's report; null before the first. Any thread.
  std::shared_ptr<const Report> Latest() const {
    std::lock_guard lock(mu_);
    return last_;
  }

  /// Asks the runner's thread for a run and calls `done` with its report, on that thread.
  /// RESOURCE_EXHAUSTED (at once) with kMaxWaiting requests already waiting; UNAVAILABLE for
  /// the ones still waiting at Stop().
  using Done = std::function<void(absl::StatusOr<Report>)>;
  void RunAsync(Done done);
  static constexpr size_t kMaxWaiting = 8;

  std::string_view Name() const override { return "doctor"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  void Run(const std::stop_token& stop);
  void Publish(const Report& r);

  const DoctorRunnerOptions options_;
  common::FindingsBoard* const findings_;
  const common::Clock& clock_;
  std::mutex run_mu_;  // one run at a time
  mutable std::mutex mu_;
  std::shared_ptr<const Report> last_;  // guarded by mu_
  std::mutex wait_mu_;
  std::condition_variable_any wake_;
  std::vector<Done> waiting_;  // guarded by wait_mu_
  std::jthread thread_;
};

/// The processes below `procfs` that have a libnccl mapped (pids ascending).
std::vector<pid_t> NcclProcesses(const std::filesystem::path& procfs);

}  // namespace efawatch::doctor
