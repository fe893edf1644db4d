// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "daemon/logs/container_verdict.h"
#include "daemon/logs/pod_analysis.h"
#include "lib/common/collector.h"

namespace efawatch::logs {

/// The container's series: line counts always; the verdict's series once NCCL lines were seen,
/// and one efawatch_nccl_communicator_info per exported communicator.
/// The Prometheus mapping of the verdict record, in one place (tests/unit/records checks that
/// every field reaches it or is listed as left out).
void WriteVerdictMetrics(const ContainerVerdict& v, common::MetricSink& sink);

/// Exports every container's verdict (WriteVerdictMetrics) and the analysis's drop counters at
/// scrape time, reading PodAnalysis's verdict table under its lock. `pods` outlives it.
class VerdictCollector final : public common::Collector {
 public:
  explicit VerdictCollector(const PodAnalysis& pods) : pods_(pods) {}
  std::string_view Name() const override { return "nccl_logs"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  const PodAnalysis& pods_;
};

}  // namespace efawatch::logs
