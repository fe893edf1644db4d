// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "daemon/rpc/grpc_edge.h"
#include "lib/common/collector.h"
#include "lib/common/memory_budget.h"

namespace efawatch::rpc {

/// Exports what the gRPC edge's limits refused and how close it is to them (docs/limits.md).
/// Reads atomics only; safe on the scrape thread. `counters` and `budget` outlive the collector.
class LimitsCollector final : public common::Collector {
 public:
  LimitsCollector(const GrpcEdgeCounters& counters, const ConnectionGateCounters& gate,
                  const common::MemoryBudget& budget)
      : counters_(counters), gate_(gate), budget_(budget) {}
  std::string_view Name() const override { return "rpc_limits"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  const GrpcEdgeCounters& counters_;
  const ConnectionGateCounters& gate_;
  const common::MemoryBudget& budget_;
};

}  // namespace efawatch::rpc
