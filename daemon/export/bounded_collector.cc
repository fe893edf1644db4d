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
  bool ended = false;       // guarded by mu
  absl::Status status;      // the worker's until `ended`
  RecordedSamples samples;  // the worker's until `ended`
};

CollectorWorkers::~CollectorWorkers() {
  std::vector<std::jthread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (std::jthread& t : threads) t.request_stop();
  // Each joins when its job in flight, if any, has returned.
}

void CollectorWorkers::Post(std::function<void()> work, std::function<void()> done) {
  std::lock_guard lock(mu_);
  jobs_.push_back({std::move(work), std::move(done)});
  // Jobs already queued have idle workers about to take them; a worker more when none is left,
  // idle from its start.
  if (idle_ < jobs_.size()) {
    ++idle_;
    threads_.emplace_back([this](const std::stop_token& stop) { Work(stop); });
  } else {
    cv_.notify_one();
  }
}

std::size_t CollectorWorkers::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

void CollectorWorkers::Work(const std::stop_token& stop) {
  std::unique_lock lock(mu_);
  while (cv_.wait(lock, stop, [&] { return !jobs_.empty(); })) {
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    --idle_;
    lock.unlock();
    job.work();
    lock.lock();
    ++idle_;
    lock.unlock();
    job.done();
    lock.lock();
  }
}

BoundedCollector::~BoundedCollector() = default;

absl::Status BoundedCollector::Collect(std::chrono::steady_clock::time_point deadline,
                                       std::chrono::nanoseconds wait, common::MetricSink& sink) {
  if (run_ != nullptr) {
    std::lock_guard lock(run_->mu);
    if (!run_->ended) {
      return absl::DeadlineExceededError(
          "still running from an earlier scrape, past its time budget (not started again)");
    }
  }
  auto run = std::make_shared<Run>();
  run_ = run;
  workers_.Post(
      [run, deadline, &c = collector_] {
        // The worker's alone until `ended`: the scrape reads status and samples after it.
        try {
          run->status = c.Collect(deadline, run->samples);
        } catch (const std::exception& e) {
          run->status = absl::InternalError(absl::StrCat("collector threw: ", e.what()));
        }
      },
      [run] {
        {
          std::lock_guard lock(run->mu);
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
