// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "daemon/efa/health_rules.h"
#include "daemon/efa/sysfs_reader.h"
#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "lib/common/findings_board.h"

namespace efawatch::efa {

struct EfaMonitorOptions {
  std::filesystem::path sysfs_root = "/sys";
  std::filesystem::path procfs_root = "/proc";
  std::vector<std::string> interface_prefixes = {"eth", "ens", "enp", "eno"};
  /// Each read of port counters costs the device admin commands: never more often than this.
  std::chrono::milliseconds min_read_interval{1000};
  /// How often the health rules run, in the monitor's own thread.
  std::chrono::seconds evaluate_interval{15};
  HealthOptions health;
  /// The node's allocatable vpc.amazonaws.com/efa when known (Kubernetes API); may be empty.
  /// Called on the monitor thread at each evaluation: it must not block.
  std::function<std::optional<unsigned>()> advertised;
  /// Called with the EFA device count when a read finds it changed (the node-state board takes
  /// it); on the reading thread (scrape or monitor).
  std::function<void(unsigned)> on_efa_devices;
};

/// EFA and RDMA device health. Owns a cache of device reads (at most one per device per
/// min_read_interval, whoever asks), a collector that exports every counter at scrape time, and
/// a thread that runs the health rules and publishes findings as owner "efa".
///
/// Thread-safe: Collect() runs on the scrape thread, EvaluateOnce() on the monitor thread (or a
/// test), accessors from anywhere.
class EfaMonitor final : public common::Collector {
 public:
  /// `nccl_active` says whether NCCL jobs run on the node now (from the log analyzer; may be
  /// empty: the fallback rule then stays silent). `own_probe_bytes` returns the bytes our own
  /// probes moved over TCP, so they do not look like a fallback (may be empty).
  EfaMonitor(EfaMonitorOptions options, const common::Clock& clock, common::FindingsBoard* board,
             std::function<bool()> nccl_active, std::function<uint64_t()> own_probe_bytes);
  ~EfaMonitor() override;

  /// Starts the evaluation thread; it stops with the monitor.
  void Start();

  std::string_view Name() const override { return "efa"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

  /// Reads (through the cache) and runs the health rules once; publishes the findings.
  void EvaluateOnce();

  unsigned efa_devices() const { return efa_devices_.load(); }

 private:
  struct Cached {
    std::chrono::steady_clock::time_point read_at;
    DeviceSnapshot snapshot;
  };
  /// Current snapshots of every device, re-reading those older than min_read_interval while
  /// before `deadline`. `complete` is false when some device was served stale or not at all.
  std::vector<DeviceSnapshot> Read(std::chrono::steady_clock::time_point deadline, bool* complete);

  const EfaMonitorOptions options_;
  const common::Clock& clock_;
  common::FindingsBoard* board_;
  std::function<bool()> nccl_active_;
  std::function<uint64_t()> own_probe_bytes_;

  std::mutex cache_mu_;
  std::map<std::string, Cached> cache_;

  std::mutex rules_mu_;
  HealthRules rules_;

  std::atomic<unsigned> efa_devices_{0};
  std::atomic<uint64_t> device_reads_{0};
  std::jthread thread_;
};

}  // namespace efawatch::efa
