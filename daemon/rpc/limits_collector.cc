// SPDX-License-Identifier: Apache-2.0
#include "daemon/rpc/limits_collector.h"

namespace efawatch::rpc {

absl::Status LimitsCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                      common::MetricSink& sink) {
  sink.Add(metrics::M::kRpcWatchStreams, {}, static_cast<double>(counters_.watch_streams));
  sink.Add(metrics::M::kRpcRefusedTotal, {{"limit", "watch_streams"}},
           static_cast<double>(counters_.watch_streams_refused));
  sink.Add(metrics::M::kMemoryBudgetBytes, {}, static_cast<double>(budget_.total()));
  sink.Add(metrics::M::kMemoryBudgetInUseBytes, {}, static_cast<double>(budget_.in_use()));
  sink.Add(metrics::M::kRpcRefusedTotal, {{"limit", "memory"}},
           static_cast<double>(budget_.refused()));
  common::AddCounters(
      sink, metrics::M::kRpcConnectionsTotal, "outcome",
      {{"accepted", &gate_.accepted}, {"refused", &gate_.refused}, {"evicted", &gate_.evicted}});
  return absl::OkStatus();
}

}  // namespace efawatch::rpc
