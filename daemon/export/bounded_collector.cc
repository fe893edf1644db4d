// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/bounded_collector.h"

#include <condition_variable>
#include <exception>

#include "absl/strings/str_cat.h"

namespace efawatch::exporter {

void RecordedSamples::Add(metrics::Metric metric, const common::Labels& labels, double value) {
  samples_.push_back({metric, labels, value});
}

void RecordedSamples::AddHistogram(metrics::Metric metric, const common::Labels& labels,
                                   const common::HistogramSample& sample) {
  samples_.push_back({metric, labels, sample});
}

void RecordedSamples::WriteTo(common::MetricSink& sink) const {
  for (const Sample& s : samples_) {
    if (const double* v = std::get_if<double>(&s.value)) {
      sink.Add(s.metric, s.labels, *v);
    } else {
      sink.AddHistogram(s.metric, s.labels, std::get<common::HistogramSample>(s.value));
    }
  }
}

// One run, shared by the worker that writes it and the scrape that waits for it: a scrape that
// stopped waiting leaves it to the worker alone.
struct BoundedCollector::Run {
  std::mutex mu;
  std::condition_variable ended_cv;
  bool ended = false;  // guarded by mu
  absl::Status status;
  RecordedSamples samples;  // the worker's until `ended`
};

BoundedCollector::~BoundedCollector() = default;  // the jthread joins a run in flight

absl::Status BoundedCollector::Collect(std::chrono::steady_clock::time_point deadline,
                                       std::chrono::nanoseconds wait, common::MetricSink& sink) {
  if (run_ != nullptr) {
    std::lock_guard lock(run_->mu);
    if (!run_->ended) {
      return absl::DeadlineExceededError(
          "still running from an earlier scrape, past its time budget (not started again)");
    }
  }
  if (worker_.joinable()) worker_.join();  // the previous run's thread, which has ended
  auto run = std::make_shared<Run>();
  run_ = run;
  worker_ = std::jthread([run, deadline, &c = collector_] {
    absl::Status st;
    try {
      st = c.Collect(deadline, run->samples);
    } catch (const std::exception& e) {
      st = absl::InternalError(absl::StrCat("collector threw: ", e.what()));
    }
    {
      std::lock_guard lock(run->mu);
      run->status = std::move(st);
      run->ended = true;
    }
    run->ended_cv.notify_all();
  });
  std::unique_lock lock(run->mu);
  if (!run->ended_cv.wait_for(lock, wait, [&] { return run->ended; })) {
    return absl::DeadlineExceededError(
        "cut off at its time budget; its samples are dropped (--collector-budget-ms)");
  }
  run->samples.WriteTo(sink);
  return run->status;
}

}  // namespace efawatch::exporter
