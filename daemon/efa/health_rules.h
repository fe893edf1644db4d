// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/efa/netdev.h"
#include "daemon/efa/sysfs_reader.h"
#include "lib/common/finding.h"

namespace efawatch::efa {

/// How many EFA devices the node must keep (--efa-expected-devices).
enum class Expectation {
  kAuto,   ///< what the node was given: devices at the first evaluation, or advertised if more
  kNone,   ///< no device-count check
  kCount,  ///< `expected_devices`, whatever the node was given (also the instance type's count)
};

/// Thresholds of the EFA health rules. Defaults and their reasons are in docs/findings.md.
struct HealthOptions {
  /// A rising-counter finding clears after the counter has not risen for this long.
  std::chrono::seconds clear_after{600};
  /// Minimum rise between two evaluations that raises a finding, per counter. Counters not
  /// listed use 1 if the driver marks them as trouble (counters.cc), and are ignored otherwise.
  std::map<std::string, uint64_t> rise_thresholds = {{"rx_drops", 100}};
  Expectation expectation = Expectation::kAuto;
  /// kCount: the devices the node must have (0: no check).
  unsigned expected_devices = 0;
  /// EFA interfaces the instance type supports (0: none or unknown) and its name: with
  /// kAuto, such a type on a node given no EFA raises the info finding efa_not_attached.
  unsigned type_supports = 0;
  std::string instance_type;
  /// The log-free fallback check: over `fallback_window`, ethernet bytes (minus our own probes'
  /// traffic) rose by at least `fallback_ethernet_bytes` while all EFA tx+rx bytes rose by less
  /// than `fallback_efa_bytes`, and NCCL jobs were active.
  std::chrono::seconds fallback_window{120};
  uint64_t fallback_ethernet_bytes = 1ull << 30;
  uint64_t fallback_efa_bytes = 16ull << 20;
};

/// One evaluation's input: what was read at `when`.
struct HealthInput {
  std::chrono::steady_clock::time_point when;
  std::vector<DeviceSnapshot> devices;
  std::map<std::string, InterfaceCounters> interfaces;
  uint64_t own_probe_tcp_bytes = 0;  // bytes our own probes moved through the kernel stack
  bool nccl_active = false;
  /// The node's allocatable vpc.amazonaws.com/efa (the EFA device plugin's count), when the
  /// Kubernetes API said; nullopt when unknown.
  std::optional<unsigned> advertised;
};

/// Turns successive samples into findings: rising error counters, a wedged admin queue,
/// missing or vanished devices, unreadable counters, and EFA idle while TCP is busy. Findings
/// clear themselves when their condition has gone (for rising counters: `clear_after` without a
/// rise). Counter decreases are resets: the counter is re-baselined, never reported as a rise.
/// Not thread-safe; one owner calls Evaluate() with increasing times.
class HealthRules {
 public:
  explicit HealthRules(HealthOptions options) : options_(std::move(options)) {}

  std::vector<common::Finding> Evaluate(const HealthInput& input);

  /// Counter decreases seen so far (resets), for a metric.
  uint64_t resets() const { return resets_; }

  /// The EFA devices the node must have, as of the latest evaluation (0: no check).
  unsigned expected() const { return expected_; }

 private:
  struct Rising {
    std::chrono::steady_clock::time_point last_rise;
    common::Finding finding;
  };
  struct Totals {
    std::chrono::steady_clock::time_point when;
    uint64_t efa_bytes;
    uint64_t ethernet_bytes;
  };

  void CheckCounter(const std::string& device, int port, const std::string& counter, uint64_t value,
                    std::chrono::steady_clock::time_point now);
  // The rules of one device: its counters (and its ports'), unreadable counters and a stuck
  // admin queue. Returns its EFA tx+rx bytes (0 for a device that is not EFA).
  uint64_t CheckDevice(const DeviceSnapshot& d, std::chrono::steady_clock::time_point now,
                       std::vector<common::Finding>& out);
  // Devices gone since the first evaluation, fewer EFA devices than expected, and a type that
  // supports EFA on a node given none.
  void CheckDeviceCount(const std::set<std::string>& present, unsigned efa_devices,
                        std::optional<unsigned> advertised, std::vector<common::Finding>& out);
  // The rising-counter findings still active at `now`; drops those that have cleared.
  void ReportRising(std::chrono::steady_clock::time_point now, std::vector<common::Finding>& out);
  // EFA idle while ethernet is busy with NCCL jobs active, over the sliding window.
  void CheckFallback(const HealthInput& input, uint64_t efa_bytes, unsigned efa_devices,
                     std::vector<common::Finding>& out);

  HealthOptions options_;
  std::map<std::string, uint64_t> last_;  // "device/port/counter" -> last value
  std::map<std::string, Rising> rising_;  // same key -> active finding
  std::set<std::string> devices_at_start_;
  unsigned efa_at_start_ = 0;
  unsigned expected_ = 0;
  bool first_ = true;
  std::deque<Totals> window_;
  uint64_t resets_ = 0;
};

}  // namespace efawatch::efa
