// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/collective_collector.h"

#include "lib/common/metric_table.h"

namespace efawatch::collective {

absl::Status CollectiveCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                          common::MetricSink& sink) {
  sink.Add(metrics::M::kCollectiveInProgress, {}, participant_.busy() ? 1.0 : 0.0);
  sink.Add(metrics::M::kCollectiveRunning, {}, participant_.running() ? 1.0 : 0.0);
  return absl::OkStatus();
}

}  // namespace efawatch::collective
