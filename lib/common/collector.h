// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "lib/common/metric_table.h"

namespace efawatch::common {

using Labels = std::vector<std::pair<std::string, std::string>>;

/// One histogram series: cumulative counts per upper bound (ascending, +Inf implied by `count`).
struct HistogramSample {
  std::vector<double> bounds;
  std::vector<uint64_t> cumulative;  ///< Same length as `bounds`.
  double sum = 0;
  uint64_t count = 0;
};

/// Where a collector writes samples. A metric is named by its handle from the metric table
/// (lib/common/metric_table.h), which gives its type, help and label names; the labels passed
/// here must be exactly those names, in that order. Implemented by the Prometheus edge, and by
/// tests that record samples. Not thread-safe: one collection writes to one sink.
class MetricSink {
 public:
  virtual ~MetricSink() = default;
  virtual void Add(metrics::Metric metric, const Labels& labels, double value) = 0;
  /// A histogram series of a metric the table declares as a histogram.
  virtual void AddHistogram(metrics::Metric metric, const Labels& labels,
                            const HistogramSample& sample) = 0;
};

/// One series of `metric` (one label, `label`) per (label value, counter) of `counters`: the
/// counters a module keeps as atomics, read relaxed (a scrape needs no ordering with them).
inline void AddCounters(
    MetricSink& sink, metrics::Metric metric, const std::string& label,
    std::initializer_list<std::pair<const char*, const std::atomic<uint64_t>*>> counters) {
  for (const auto& [value, n] : counters) {
    sink.Add(metric, {{label, value}}, static_cast<double>(n->load(std::memory_order_relaxed)));
  }
}

/// A cheap, scrape-time source of metrics (node_exporter's collector pattern). Collect() runs
/// on the scrape thread, must return by `deadline` (check it between reads, and cache what is
/// expensive), and reports failure as a Status: the edge turns it into
/// efawatch_collector_success{collector} = 0 and keeps whatever samples were written. Calls to one
/// collector are serialized by the caller.
class Collector {
 public:
  virtual ~Collector() = default;
  virtual std::string_view Name() const = 0;
  virtual absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                               MetricSink& sink) = 0;
};

}  // namespace efawatch::common
