// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "lib/common/collector.h"

namespace efawatch::exporter {

/// Samples written to a MetricSink, kept in order to be written to another later: a collector
/// that runs on a worker writes here, and only a run that ended in time reaches the scrape.
/// Not thread-safe (one run writes, then the scrape reads).
class RecordedSamples final : public common::MetricSink {
 public:
  void Add(metrics::Metric metric, const common::Labels& labels, double value) override;
  void AddHistogram(metrics::Metric metric, const common::Labels& labels,
                    const common::HistogramSample& sample) override;
  /// Writes every sample to `sink`, in the order they came.
  void WriteTo(common::MetricSink& sink) const;

 private:
  struct Sample {
    metrics::Metric metric;
    common::Labels labels;
    std::variant<double, common::HistogramSample> value;
  };
  std::vector<Sample> samples_;
};

/// Runs one collector on a worker thread so that a scrape stops waiting for it at its deadline
/// (node_exporter waits for a slow collector as long as it takes; a blocked read would stall
/// every scrape). At most one run per collector is in flight: a run still going when the next
/// scrape comes is not started again, and that scrape reports the collector failed too. A late
/// run's samples are dropped. Collect() is called by one scrape at a time; the collector's calls
/// stay serialized (it needs not be thread-safe). The destructor waits for a run in flight: a
/// collector must return by itself, if late. Owned by the Prometheus edge's scraper.
class BoundedCollector {
 public:
  explicit BoundedCollector(common::Collector& collector) : collector_(collector) {}
  ~BoundedCollector();
  BoundedCollector(const BoundedCollector&) = delete;
  BoundedCollector& operator=(const BoundedCollector&) = delete;

  common::Collector& collector() const { return collector_; }

  /// Runs the collector with `deadline` (passed to it, on the edge's clock) and waits for it at
  /// most `wait` of real time (a condition variable cannot wait on a test's clock). Its samples
  /// go to `sink` when it ended in time; DEADLINE_EXCEEDED, and none of them, when it did not
  /// or when the previous run is still going. A collector's own error (or exception, as
  /// INTERNAL) is returned with the samples it wrote.
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       std::chrono::nanoseconds wait, common::MetricSink& sink);

 private:
  struct Run;
  common::Collector& collector_;
  std::shared_ptr<Run> run_;  // the latest; shared with its worker
  std::jthread worker_;       // the latest run's
};

}  // namespace efawatch::exporter
