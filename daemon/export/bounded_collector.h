// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
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

/// The threads collectors run on, kept from scrape to scrape. A thread started per collector run
/// cost every scrape a clone, a stack and its page faults for each of the collectors: with a
/// scrape every 15 s that was a third of the idle agent's CPU. A scrape runs its collectors one
/// after another, so one worker serves them all; a run still going past its budget keeps its
/// worker, and the next run gets another: one thread, plus one per late run (at most one per
/// collector). An idle worker sleeps on a condition variable: no wake-ups. Thread-safe. The
/// destructor waits for the runs in flight.
class CollectorWorkers {
 public:
  CollectorWorkers() = default;
  ~CollectorWorkers();
  CollectorWorkers(const CollectorWorkers&) = delete;
  CollectorWorkers& operator=(const CollectorWorkers&) = delete;

  /// Runs `work` on an idle worker, or on a new one when every worker is busy, then `done`
  /// once the worker counts as idle again: whoever waits for `done` and posts the next job
  /// finds that worker free, and no thread is added for a run that follows another.
  void Post(std::function<void()> work, std::function<void()> done);
  /// How many worker threads there are (for tests).
  std::size_t threads() const;

 private:
  struct Job {
    std::function<void()> work;
    std::function<void()> done;
  };
  void Work(const std::stop_token& stop);

  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Job> jobs_;               // guarded by mu_
  std::size_t idle_ = 0;               // workers not in a job's work, new ones included; mu_
  std::vector<std::jthread> threads_;  // guarded by mu_
};

/// Runs one collector on a worker thread so that a scrape stops waiting for it at its deadline
/// (node_exporter waits for a slow collector as long as it takes; a blocked read would stall
/// every scrape). At most one run per collector is in flight: a run still going when the next
/// scrape comes is not started again, and that scrape reports the collector failed too. A late
/// run's samples are dropped. Collect() is called by one scrape at a time; the collector's calls
/// stay serialized (it needs not be thread-safe). The destructor waits for a run in flight: a
/// collector must return by itself, if late (the workers' destructor waits). Owned by the
/// Prometheus edge's scraper.
class BoundedCollector {
 public:
  BoundedCollector(common::Collector& collector, CollectorWorkers& workers)
      : collector_(collector), workers_(workers) {}
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
  CollectorWorkers& workers_;
  std::shared_ptr<Run> run_;  // the latest; shared with its worker
};

}  // namespace efawatch::exporter
