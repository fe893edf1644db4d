// SPDX-License-Identifier: Apache-2.0
// The Prometheus edge's collector deadline, over real HTTP on 127.0.0.1: a collector that blocks
// past its budget is cut off (the scrape does not wait for it), reported failed, and not run
// again while it still runs; the others' output is unchanged.
#include "daemon/export/prometheus_edge.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/export/bounded_collector.h"
#include "tests/support/subprocess.h"

namespace efawatch::exporter {
namespace {

using std::chrono::milliseconds;

// Writes one sample of efawatch_process_open_fds; with `block`, waits until Release() first.
class TestCollector final : public common::Collector {
 public:
  TestCollector(std::string name, double value, bool block)
      : name_(std::move(name)), value_(value), block_(block) {}
  ~TestCollector() override { Release(); }

  std::string_view Name() const override { return name_; }
  absl::Status Collect(std::chrono::steady_clock::time_point, common::MetricSink& sink) override {
    ++runs_;
    if (block_) {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return released_; });
    }
    sink.Add(metrics::M::kProcessOpenFds, {}, value_);
    ++ended_;
    return absl::OkStatus();
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  int runs() const { return runs_; }
  int ended() const { return ended_; }

 private:
  const std::string name_;
  const double value_;
  const bool block_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::atomic<int> runs_{0};
  std::atomic<int> ended_{0};
};

// Releases a blocked collector before whatever waits for its run goes (declared after it).
struct ReleaseFirst {
  TestCollector& c;
  ~ReleaseFirst() { c.Release(); }
};

bool Has(const std::string& body, const std::string& line) {
  return body.find(line + "\n") != std::string::npos;
}

TEST(PrometheusEdgeTest, CutsOffACollectorPastItsBudgetAndKeepsTheOthers) {
  TestCollector slow("slow", 7, /*block=*/true);
  TestCollector fast("fast", 3, /*block=*/false);
  common::CollectorStatusBoard status;
  PrometheusEdgeOptions o;
  o.listen = "127.0.0.1:0";
  o.collector_budget = milliseconds(200);
  // The edge's clock is the real one: the cut-off waits on real time whatever the clock.
  auto edge = PrometheusEdge::Create(o, {&slow, &fast}, &status, common::SystemClock::Get());
  ASSERT_TRUE(edge.ok()) << edge.status();
  // The edge waits for a run in flight when it goes: a failed assertion must not leave it blocked.
  ReleaseFirst release_first{slow};

  const auto start = std::chrono::steady_clock::now();
  auto [code, body] = testing::HttpGet((*edge)->port(), "/metrics");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(code, 200);
  EXPECT_LT(took, milliseconds(200 + 1500)) << "the scrape waited for the blocked collector";
  EXPECT_TRUE(Has(body, "efawatch_collector_success{collector=\"slow\"} 0")) << body;
  EXPECT_TRUE(Has(body, "efawatch_collector_success{collector=\"fast\"} 1")) << body;
  EXPECT_TRUE(Has(body, "efawatch_process_open_fds 3")) << body;
  EXPECT_FALSE(Has(body, "efawatch_process_open_fds 7")) << body;
  bool reported = false;
  for (const auto& s : status.Snapshot()) {
    if (s.name != "slow") continue;
    reported = true;
    EXPECT_FALSE(s.ok);
    EXPECT_NE(s.last_error.find("cut off"), std::string::npos) << s.last_error;
  }
  EXPECT_TRUE(reported);

  // Still running at the next scrape: failed again, and not started a second time.
  std::tie(code, body) = testing::HttpGet((*edge)->port(), "/metrics");
  ASSERT_EQ(code, 200);
  EXPECT_TRUE(Has(body, "efawatch_collector_success{collector=\"slow\"} 0")) << body;
  EXPECT_TRUE(Has(body, "efawatch_collector_success{collector=\"fast\"} 1")) << body;
  EXPECT_EQ(slow.runs(), 1);
  EXPECT_EQ(fast.runs(), 2);

  // Once it returns, its late samples are dropped and the next scrape runs it again, in time.
  slow.Release();
  for (int i = 0; i < 300 && slow.ended() < 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(slow.ended(), 1);
  std::tie(code, body) = testing::HttpGet((*edge)->port(), "/metrics");
  ASSERT_EQ(code, 200);
  EXPECT_TRUE(Has(body, "efawatch_collector_success{collector=\"slow\"} 1")) << body;
  EXPECT_TRUE(Has(body, "efawatch_process_open_fds 7")) << body;
  EXPECT_EQ(slow.runs(), 2);
}

// Samples reach the scrape in the order the collector wrote them, histograms included: the
// output of a collector that ends in time is what it was when it wrote to the scrape directly.
TEST(BoundedCollectorTest, PassesAnInTimeRunsSamplesOnInOrder) {
  class Writer final : public common::Collector {
   public:
    std::string_view Name() const override { return "writer"; }
    absl::Status Collect(std::chrono::steady_clock::time_point, common::MetricSink& s) override {
      s.Add(metrics::M::kProcessOpenFds, {}, 1);
      s.AddHistogram(metrics::M::kProcessOpenFds, {},
                     {.bounds = {1}, .cumulative = {2}, .sum = 3, .count = 4});
      s.Add(metrics::M::kProcessOpenFds, {}, 5);
      return absl::InternalError("partial");
    }
  } writer;
  struct Sink final : common::MetricSink {
    std::vector<double> seen;
    void Add(metrics::Metric, const common::Labels&, double v) override { seen.push_back(v); }
    void AddHistogram(metrics::Metric, const common::Labels&,
                      const common::HistogramSample& h) override {
      seen.push_back(h.sum);
    }
  } sink;
  CollectorWorkers workers;
  BoundedCollector bounded(writer, workers);
  const absl::Status st = bounded.Collect(std::chrono::steady_clock::now() + milliseconds(5000),
                                          milliseconds(5000), sink);
  EXPECT_EQ(st.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(sink.seen, (std::vector<double>{1, 3, 5}));
}

// Collectors run on threads kept from run to run: many scrapes of several collectors start no
// thread per run (that cost the idle agent a third of its CPU), and a run that blocks past its
// budget keeps its worker while the others go on on another.
TEST(CollectorWorkersTest, ReusesItsThreadsAndAddsOneForALateRun) {
  struct Sink final : common::MetricSink {
    int samples = 0;
    void Add(metrics::Metric, const common::Labels&, double) override { ++samples; }
    void AddHistogram(metrics::Metric, const common::Labels&,
                      const common::HistogramSample&) override {}
  } sink;
  TestCollector a("a", 1, false), b("b", 2, false), c("c", 3, false);
  TestCollector slow("slow", 4, true);
  CollectorWorkers workers;
  // The workers wait for the blocked run when they go: a failed assertion must not hang.
  ReleaseFirst release_first{slow};
  BoundedCollector ba(a, workers), bb(b, workers), bc(c, workers), bslow(slow, workers);
  const auto collect = [&](BoundedCollector& bounded, milliseconds wait) {
    return bounded.Collect(std::chrono::steady_clock::now() + wait, wait, sink);
  };
  for (int scrape = 0; scrape < 50; ++scrape) {
    for (BoundedCollector* bounded : {&ba, &bb, &bc}) {
      ASSERT_TRUE(collect(*bounded, milliseconds(5000)).ok());
    }
  }
  EXPECT_EQ(sink.samples, 150);
  // One runs at a time, and a run's end is told once its worker is free again: one thread.
  EXPECT_EQ(workers.threads(), 1u);

  EXPECT_EQ(collect(bslow, milliseconds(50)).code(), absl::StatusCode::kDeadlineExceeded);
  for (int scrape = 0; scrape < 20; ++scrape) {
    for (BoundedCollector* bounded : {&ba, &bb, &bc}) {
      ASSERT_TRUE(collect(*bounded, milliseconds(5000)).ok());
    }
  }
  EXPECT_EQ(a.runs(), 70);
  EXPECT_EQ(workers.threads(), 2u);  // the late run's, and one for the others
  slow.Release();
  for (int i = 0; i < 300 && slow.ended() < 1; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(slow.ended(), 1);
}

}  // namespace
}  // namespace efawatch::exporter
