// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "daemon/logs/tailer.h"
#include "lib/common/collector.h"

namespace efawatch::logs {

/// Exports what the tailer did (files watched, bytes and lines read, rotations, checkpoints,
/// bytes skipped and why) from its counters at scrape time. The counters are atomics the tailer
/// updates; reading them never blocks it. `counters` outlives the collector.
class TailerCollector final : public common::Collector {
 public:
  explicit TailerCollector(const TailerCounters& counters) : counters_(counters) {}
  std::string_view Name() const override { return "log_tailer"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  const TailerCounters& counters_;
};

}  // namespace efawatch::logs
