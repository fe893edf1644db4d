// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/coordinator.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <vector>

#include "tests/support/fake_clock.h"

namespace efawatch::collective {
namespace {

using std::chrono::milliseconds;

// Participants that answer at once, each rank taking `time_us[agent]` per size. Join and Start
// move the clock by `join_takes` and `start_takes`. Thread-safe: RunCollective calls from a
// thread per participant.
class FakeCalls final : public ParticipantCalls {
 public:
  explicit FakeCalls(common::FakeClock& clock) : clock_(clock) {}

  absl::StatusOr<JoinResponse> Join(const std::string& agent, const JoinRequest& r,
                                    milliseconds timeout) override {
    std::lock_guard lock(mu_);
    joins.push_back(r);
    join_timeouts.push_back(timeout);
    sizes_ = r.sizes;
    clock_.Advance(join_takes);
    JoinResponse out;
    out.node_name = "node-" + agent;
    out.provider = "tcp";
    out.local_ranks = 1;
    return out;
  }
  absl::StatusOr<RankResult> Start(const std::string& agent, const StartRequest& r,
                                   milliseconds timeout) override {
    std::lock_guard lock(mu_);
    start_timeouts.push_back(timeout);
    clock_.Advance(start_takes);
    if (auto it = fail.find(agent); it != fail.end()) return it->second;
    RankResult out;
    out.rank = r.rank;
    out.node_name = "node-" + agent;
    for (uint64_t s : sizes_) {
      SizeTiming t;
      t.size = s;
      t.time_us = time_us[agent];
      out.timings.push_back(t);
    }
    return out;
  }
  void Abort(const std::string& agent, const AbortRequest& r, milliseconds) override {
    std::lock_guard lock(mu_);
    aborted.push_back(agent + ": " + r.reason);
  }

  milliseconds join_takes{0};
  milliseconds start_takes{0};
  std::map<std::string, double> time_us;
  std::map<std::string, absl::Status> fail;
  std::vector<JoinRequest> joins;
  std::vector<milliseconds> join_timeouts;
  std::vector<milliseconds> start_timeouts;
  std::vector<std::string> aborted;

 private:
  common::FakeClock& clock_;
  std::mutex mu_;
  std::vector<uint64_t> sizes_;
};

RunRequest Request(std::vector<std::string> participants) {
  RunRequest r;
  r.participants = std::move(participants);
  r.op = Op::kAllReduce;
  r.sizes = {1 << 20, 4 << 20};
  r.deadline_ms = 60000;
  return r;
}

// The deadline and the elapsed time are the given clock's: participants get what is left of it.
TEST(RunCollectiveTest, MeasuresTheDeadlineAndElapsedTimeOnItsClock) {
  common::FakeClock clock;
  FakeCalls calls(clock);
  calls.join_takes = milliseconds(10000);
  calls.start_takes = milliseconds(1500);
  auto got = RunCollective(Request({"a:1"}), {}, calls, clock);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(calls.joins.size(), 1u);
  EXPECT_EQ(calls.joins[0].deadline_ms, 60000u);
  EXPECT_EQ(calls.join_timeouts[0], milliseconds(60000));
  // What is left after the join, plus the grace for the answer's trip back.
  EXPECT_EQ(calls.start_timeouts[0], milliseconds(50000 + 2000));
  EXPECT_DOUBLE_EQ(got->elapsed_seconds, 11.5);
}

TEST(RunCollectiveTest, RowsAreTheMeanOverRanksLikeNcclTests) {
  common::FakeClock clock;
  FakeCalls calls(clock);
  calls.time_us = {{"a:1", 1000}, {"b:1", 3000}};
  auto got = RunCollective(Request({"a:1", "b:1"}), {}, calls, clock);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->nranks, 2u);
  EXPECT_EQ(got->nodes, (std::vector<std::string>{"node-a:1", "node-b:1"}));
  EXPECT_EQ(got->provider, "tcp");
  ASSERT_EQ(got->rows.size(), 2u);
  EXPECT_EQ(got->rows[0].size, 1u << 20);
  EXPECT_DOUBLE_EQ(got->rows[0].time_us, 2000);
  EXPECT_DOUBLE_EQ(got->rows[0].algbw_gbps, (1 << 20) / 2e6);
  EXPECT_DOUBLE_EQ(got->rows[0].busbw_gbps, got->rows[0].algbw_gbps);  // 2(n-1)/n = 1
  EXPECT_DOUBLE_EQ(got->avg_busbw_gbps, (got->rows[0].busbw_gbps + got->rows[1].busbw_gbps) / 2);
  EXPECT_EQ(got->elapsed_seconds, 0);
}

// An unreachable agent is blamed before the ranks that only lost it as a neighbour, and its
// failure aborts every participant.
TEST(RunCollectiveTest, BlamesTheUnreachableParticipant) {
  common::FakeClock clock;
  FakeCalls calls(clock);
  calls.fail = {{"a:1", absl::AbortedError("a ring neighbour failed")},
                {"b:1", absl::UnavailableError("connection refused")}};
  auto got = RunCollective(Request({"a:1", "b:1"}), {}, calls, clock);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(got.status().message(),
            "collective aborted on every participant: b:1 (rank 1) failed: connection refused; "
            "then rank 0 ABORTED");
  EXPECT_EQ(calls.aborted.size(), 2u);
}

}  // namespace
}  // namespace efawatch::collective
