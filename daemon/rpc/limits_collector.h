#pragma once

#include "daemon/rpc/grpc_edge.h"
#include "lib/common/collector.h"

namespace efawatch::rpc {

/// Exports what the gRPC edge's limits refused and how close it is to them (docs/limits.md).
/// Reads atomics only; safe on the scrape thread. `counters` outlives the collector.
class LimitsCollector final : public common::Collector {
 public:
  explicit LimitsCollector(const GrpcEdgeCounters& counters) : counters_(counters) {}
  std::string_view Name() const override { return "rpc_limits"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  const GrpcEdgeCounters& counters_;
};

}  // namespace efawatch::rpc
