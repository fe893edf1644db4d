// SPDX-License-Identifier: Apache-2.0
// The scheduled collective probe on a fake clock with a fake "run a collective": when it runs
// (interval, jitter, jittered start), how each outcome is counted (a busy slot is a skip, not a
// failure), what it exports, and that it stops at once. No sleeps: the test moves the clock.
#include "daemon/agent/collective_schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "tests/support/fake_clock.h"

namespace efawatch::agent {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using TimePoint = std::chrono::steady_clock::time_point;

// A waiter on the fake clock: the schedule's thread waits until the test moves the clock past
// the time it asked for. Every wait of the test is bounded, so a bug fails instead of hanging.
class FakeWaiter final : public Waiter {
 public:
  explicit FakeWaiter(common::FakeClock& clock) : clock_(clock) {}

  bool WaitUntil(TimePoint when, const std::stop_token& stop) override {
    std::unique_lock lock(mu_);
    waiting_ = when;
    ++waits_;
    cv_.notify_all();
    cv_.wait(lock, stop, [&] { return clock_.Now() >= when; });
    waiting_.reset();
    return !stop.stop_requested();
  }

  // The time the schedule's `n`th wait (from 1) asks for, once it waits.
  std::optional<TimePoint> Wait(int n) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, 10s, [&] { return waiting_.has_value() && waits_ == n; })) {
      return std::nullopt;
    }
    return waiting_;
  }

  void AdvanceTo(TimePoint t) {
    {
      std::lock_guard lock(mu_);
      if (t > clock_.Now()) clock_.Advance(t - clock_.Now());
    }
    cv_.notify_all();
  }

 private:
  common::FakeClock& clock_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::optional<TimePoint> waiting_;
  int waits_ = 0;
};

collective::Result ResultWithBusbw(const std::vector<double>& gbps) {
  collective::Result r;
  for (double g : gbps) r.rows.push_back({.busbw_gbps = g});
  return r;
}

struct RecordingSink final : common::MetricSink {
  void Add(metrics::Metric m, const common::Labels& labels, double v) override {
    std::string key(m.name());
    for (const auto& [k, value] : labels) key += "{" + k + "=" + value + "}";
    samples[key] = v;
  }
  void AddHistogram(metrics::Metric, const common::Labels&,
                    const common::HistogramSample&) override {}
  std::map<std::string, double> samples;
};

class CollectiveScheduleTest : public ::testing::Test {
 protected:
  CollectiveScheduleOptions Options(uint64_t seed = 1) {
    CollectiveScheduleOptions o;
    o.interval = 60s;
    o.jitter = 0.1;
    o.self_agent = "10.0.0.1:9478";
    o.seed = seed;
    o.request.op = collective::Op::kAllReduce;
    o.request.sizes = {1 << 20, 16 << 20};
    o.request.deadline_ms = 30000;
    return o;
  }
  std::unique_ptr<CollectiveSchedule> Make(CollectiveScheduleOptions o) {
    auto s = CollectiveSchedule::Create(
        std::move(o), collective::CollectiveLimits{}, [this] { return peers_; },
        [this](const collective::RunRequest& r, const std::stop_token& /*stop*/) {
          requests_.push_back(r);
          auto next = answers_.empty() ? absl::StatusOr<collective::Result>(ResultWithBusbw({1, 2}))
                                       : answers_.front();
          if (!answers_.empty()) answers_.erase(answers_.begin());
          clock_.Advance(3s);  // the run's duration
          return next;
        },
        clock_, waiter_);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }

  common::FakeClock clock_;
  FakeWaiter waiter_{clock_};
  std::vector<std::string> peers_ = {"10.0.0.2:9478", "10.0.0.3:9478"};
  std::vector<absl::StatusOr<collective::Result>> answers_;  // in order; then ok
  std::vector<collective::RunRequest> requests_;             // schedule thread only
  std::atomic<bool> running_ = false;
};

TEST_F(CollectiveScheduleTest, RunsAtTheIntervalWithJitterFromAJitteredStart) {
  auto s = Make(Options());
  const TimePoint t0 = clock_.Now();
  s->Start();
  auto first = waiter_.Wait(1);
  ASSERT_TRUE(first);
  EXPECT_GE(*first, t0);
  EXPECT_LT(*first, t0 + 60s);  // a uniform point of the first interval
  TimePoint at = *first;
  std::set<TimePoint::rep> gaps;
  for (int n = 2; n <= 12; ++n) {
    waiter_.AdvanceTo(at);
    auto next = waiter_.Wait(n);
    ASSERT_TRUE(next) << "run " << n - 1;
    // From the start of one run to the next: interval x (1 +- 10%), the run's 3 s included.
    EXPECT_GE(*next - at, 54s);
    EXPECT_LE(*next - at, 66s);
    gaps.insert((*next - at).count());
    at = *next;
  }
  s->Stop();
  EXPECT_GT(gaps.size(), 5u);  // jittered, not a fixed beat
  ASSERT_EQ(requests_.size(), 11u);
  EXPECT_THAT(requests_[0].participants,
              ElementsAre("10.0.0.1:9478", "10.0.0.2:9478", "10.0.0.3:9478"));
  EXPECT_EQ(requests_[0].sizes, (std::vector<uint64_t>{1 << 20, 16 << 20}));
  const auto snap = s->Snapshot();
  EXPECT_EQ(snap->runs[static_cast<size_t>(ScheduledRunResult::kOk)], 11u);
  EXPECT_TRUE(snap->last_ok);
  EXPECT_DOUBLE_EQ(snap->last_duration_seconds, 3.0);
}

TEST_F(CollectiveScheduleTest, AFleetDoesNotStartInLockstep) {
  std::set<TimePoint::rep> starts;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    FakeWaiter waiter(clock_);
    auto s = CollectiveSchedule::Create(
        Options(seed), {}, [] { return std::vector<std::string>{"b:1"}; },
        [](const collective::RunRequest&, const std::stop_token&) {
          return absl::StatusOr<collective::Result>(collective::Result{});
        },
        clock_, waiter);
    ASSERT_TRUE(s.ok());
    (*s)->Start();
    auto first = waiter.Wait(1);
    ASSERT_TRUE(first);
    starts.insert(first->time_since_epoch().count());
    (*s)->Stop();
  }
  EXPECT_EQ(starts.size(), 8u);
}

TEST_F(CollectiveScheduleTest, ABusySlotIsASkipAndAFailureIsCountedUntilARunCompletes) {
  answers_ = {absl::ResourceExhaustedError("this agent is already coordinating a collective"),
              absl::UnavailableError("participant 10.0.0.3:9478 could not be reached"),
              absl::AbortedError("participant 10.0.0.3:9478 ran out of time"),
              absl::ResourceExhaustedError("node-3 is in another collective")};
  auto s = Make(Options());
  const std::stop_token never;
  RecordingSink before;
  ASSERT_TRUE(s->Collect({}, before).ok());
  EXPECT_FALSE(before.samples.contains("efawatch_collective_probe_success"));
  EXPECT_EQ(before.samples.at("efawatch_collective_probe_runs_total{result=failed}"), 0);

  s->RunOnce(never);  // busy
  auto snap = s->Snapshot();
  EXPECT_EQ(snap->runs[static_cast<size_t>(ScheduledRunResult::kSkippedBusy)], 1u);
  EXPECT_FALSE(snap->completed_any);
  s->RunOnce(never);  // unreachable peer
  s->RunOnce(never);  // deadline
  s->RunOnce(never);  // busy again: neither a failure nor a success
  snap = s->Snapshot();
  EXPECT_EQ(snap->runs[static_cast<size_t>(ScheduledRunResult::kFailed)], 2u);
  EXPECT_EQ(snap->runs[static_cast<size_t>(ScheduledRunResult::kSkippedBusy)], 2u);
  EXPECT_FALSE(snap->last_ok);
  EXPECT_EQ(snap->consecutive_failures, 2u);
  EXPECT_THAT(snap->last_error, HasSubstr("ran out of time"));
  RecordingSink failing;
  ASSERT_TRUE(s->Collect({}, failing).ok());
  EXPECT_EQ(failing.samples.at("efawatch_collective_probe_success"), 0);
  EXPECT_EQ(failing.samples.at("efawatch_collective_probe_consecutive_failures"), 2);
  EXPECT_EQ(failing.samples.at("efawatch_collective_probe_runs_total{result=skipped_busy}"), 2);
  EXPECT_FALSE(
      failing.samples.contains("efawatch_collective_probe_last_success_timestamp_seconds"));

  s->RunOnce(never);  // ok
  RecordingSink ok;
  ASSERT_TRUE(s->Collect({}, ok).ok());
  EXPECT_EQ(ok.samples.at("efawatch_collective_probe_success"), 1);
  EXPECT_EQ(ok.samples.at("efawatch_collective_probe_consecutive_failures"), 0);
  EXPECT_EQ(ok.samples.at("efawatch_collective_probe_duration_seconds"), 3);
  EXPECT_EQ(ok.samples.at("efawatch_collective_probe_runs_total{result=ok}"), 1);
  EXPECT_EQ(ok.samples.at("efawatch_collective_probe_busbw_bytes_per_second{size=1048576}"), 1e9);
  EXPECT_EQ(ok.samples.at("efawatch_collective_probe_busbw_bytes_per_second{size=16777216}"), 2e9);
  EXPECT_EQ(ok.samples.at("efawatch_collective_probe_last_success_timestamp_seconds"),
            std::chrono::duration<double>(clock_.WallNow().time_since_epoch()).count());
}

TEST_F(CollectiveScheduleTest, NoPeerIsASkipWithoutARun) {
  peers_ = {"10.0.0.1:9478"};  // only this agent itself (the mesh listed it)
  auto s = Make(Options());
  s->RunOnce(std::stop_token{});
  EXPECT_TRUE(requests_.empty());
  EXPECT_EQ(s->Snapshot()->runs[static_cast<size_t>(ScheduledRunResult::kSkippedNoPeers)], 1u);
}

TEST_F(CollectiveScheduleTest, StopsAtOnceWhileWaitingAndWhileRunning) {
  {
    auto s = Make(Options());
    s->Start();
    ASSERT_TRUE(waiter_.Wait(1));
    const auto t = std::chrono::steady_clock::now();
    s->Stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t, 1s);
  }
  FakeWaiter waiter(clock_);
  auto s = CollectiveSchedule::Create(
      Options(), {}, [this] { return peers_; },
      [this](const collective::RunRequest&, const std::stop_token& stop) {
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock(m);
        running_ = true;
        cv.wait(lock, stop, [] { return false; });
        return absl::StatusOr<collective::Result>(absl::CancelledError("stopped"));
      },
      clock_, waiter);
  ASSERT_TRUE(s.ok());
  (*s)->Start();
  auto first = waiter.Wait(1);
  ASSERT_TRUE(first);
  waiter.AdvanceTo(*first);
  for (int i = 0; i < 1000 && !running_; ++i) std::this_thread::yield();
  const auto t = std::chrono::steady_clock::now();
  (*s)->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t, 1s);
  // A run cut short by the agent's own stop says nothing about the fabric.
  const auto snap = (*s)->Snapshot();
  for (uint64_t n : snap->runs) EXPECT_EQ(n, 0u);
}

TEST(CollectiveProbeConfigTest, ParsesPeersAndChecksTheRequest) {
  auto mesh = ParseProbePeers("mesh:3");
  ASSERT_TRUE(mesh.ok());
  EXPECT_EQ(mesh->from_mesh, 3u);
  EXPECT_FALSE(ParseProbePeers("mesh:0").ok());
  EXPECT_FALSE(ParseProbePeers("mesh:9").ok());
  auto list = ParseProbePeers("10.0.0.2:9478, [fd00::3]:9478");
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(list->agents, ElementsAre("10.0.0.2:9478", "[fd00::3]:9478"));
  EXPECT_FALSE(ParseProbePeers("10.0.0.2").ok());
  EXPECT_FALSE(ParseProbePeers("").ok());

  const collective::CollectiveLimits limits;
  auto r = ProbeRequest("1M,16M,64M", "all_reduce", "host", 5, 60s, limits);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->sizes, (std::vector<uint64_t>{1 << 20, 16 << 20, 64 << 20}));
  EXPECT_EQ(r->backend, collective::Backend::kHost);
  EXPECT_EQ(r->deadline_ms, 60000u);
  EXPECT_FALSE(ProbeRequest("128M", "all_reduce", "host", 5, 60s, limits).ok());     // host limit
  EXPECT_FALSE(ProbeRequest("4K:1G:2", "all_reduce", "nccl", 5, 60s, limits).ok());  // > 8 sizes
  EXPECT_FALSE(ProbeRequest("1M", "all_to_all", "host", 5, 60s, limits).ok());
  EXPECT_FALSE(ProbeRequest("1M", "broadcast", "host", 5, 60s, limits).ok());
  ClockWaiter waiter(common::SystemClock::Get());
  CollectiveScheduleOptions zero;
  zero.interval = 0s;
  zero.self_agent = "a:1";
  auto bad = CollectiveSchedule::Create(zero, limits, {}, {}, common::SystemClock::Get(), waiter);
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace efawatch::agent
