#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/common/collector.h"

namespace efawatch::efa {

struct RdmaDevice {
  std::string name;    // e.g. rdmap16s27 or efa_0
  std::string driver;  // basename of device/driver, e.g. efa, mlx5_core; empty when unknown
  bool is_efa = false;
};

/// Lists `<sysfs_root>/class/infiniband/*`. A missing class directory is not an error: the node
/// simply has no RDMA devices (the usual case off AWS), reported as an empty list.
absl::StatusOr<std::vector<RdmaDevice>> ScanRdmaDevices(const std::filesystem::path& sysfs_root);

/// Reports how many RDMA and EFA devices the node has. Remembers the last count for the node
/// health snapshot. Collect() is called by one scrape at a time; efa_devices() from any thread.
class DevicePresenceCollector final : public common::Collector {
 public:
  explicit DevicePresenceCollector(std::filesystem::path sysfs_root)
      : sysfs_root_(std::move(sysfs_root)) {}
  std::string_view Name() const override { return "efa_presence"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;
  unsigned efa_devices() const { return efa_devices_.load(); }

 private:
  std::filesystem::path sysfs_root_;
  std::atomic<unsigned> efa_devices_{0};
};

}  // namespace efawatch::efa
