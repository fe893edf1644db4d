// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>

#include "lib/common/collector.h"

namespace efawatch::common {

/// The agent's own resource use (RSS, CPU time, open fds) from `<proc>/self`, so operators can
/// hold the agent to its budget. Reads this process's procfs, not the host root: inside a pod
/// the host's /proc is mounted elsewhere, but our own /proc/self is always at /proc.
class ProcessCollector final : public Collector {
 public:
  explicit ProcessCollector(std::filesystem::path self_dir = "/proc/self")
      : self_dir_(std::move(self_dir)) {}
  std::string_view Name() const override { return "process"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline, MetricSink& sink) override;

 private:
  std::filesystem::path self_dir_;
};

}  // namespace efawatch::common
