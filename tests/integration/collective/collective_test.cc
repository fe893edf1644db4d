// SPDX-License-Identifier: Apache-2.0
// Collectives across three real efawatchd on 127.0.0.1 (tcp provider), coordinated over gRPC:
// data-checked results, nccl-tests' bandwidth arithmetic, bad arguments, one collective per node,
// a participant SIGKILLed mid-run, and the CLI's table.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <thread>

#include "tests/support/agent_process.h"

namespace efawatch {
namespace {

using testing::AgentProcess;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

grpc::Status RunColl(const AgentProcess& coordinator, const v1::RunCollectiveRequest& req,
                     v1::CollectiveResult* out, std::chrono::seconds timeout = 120s) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  return coordinator.Stub()->RunCollective(&ctx, req, out);
}

class CollectiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      agents_.push_back(std::make_unique<AgentProcess>());
      if (!agents_.back()->ok()) GTEST_SKIP() << "agent did not start (no tcp provider?)";
    }
  }
  v1::RunCollectiveRequest Request(v1::CollectiveOp op) const {
    v1::RunCollectiveRequest r;
    for (const auto& a : agents_) r.add_participants(a->grpc_address());
    r.set_op(op);
    r.add_sizes(64 << 10);
    r.add_sizes(1 << 20);
    r.set_iters(3);
    r.set_warmup(1);
    r.set_deadline_ms(60000);
    return r;
  }
  std::vector<std::unique_ptr<AgentProcess>> agents_;
};

TEST_F(CollectiveTest, HostBackendRunsCorrectlyAcrossThreeAgents) {
  for (v1::CollectiveOp op : {v1::ALL_REDUCE, v1::ALL_GATHER, v1::REDUCE_SCATTER}) {
    v1::CollectiveResult r;
    const grpc::Status st = RunColl(*agents_[0], Request(op), &r);
    ASSERT_TRUE(st.ok()) << v1::CollectiveOp_Name(op) << ": " << st.error_message();
    EXPECT_EQ(r.nranks(), 3u);
    EXPECT_EQ(r.nodes_size(), 3);
    EXPECT_EQ(r.provider(), "tcp;ofi_rxm");
    ASSERT_EQ(r.rows_size(), 2);
    const double factor = op == v1::ALL_REDUCE ? 4.0 / 3 : 2.0 / 3;
    for (const auto& row : r.rows()) {
      EXPECT_EQ(row.wrong(), 0u) << v1::CollectiveOp_Name(op) << " " << row.size();
      EXPECT_GT(row.time_us(), 0);
      // nccl-tests' arithmetic: algbw = S / t (GB = 1e9 B), busbw = algbw x factor.
      EXPECT_NEAR(row.algbw_gbps(), row.size() / (row.time_us() * 1e3), 1e-9);
      EXPECT_NEAR(row.busbw_gbps(), row.algbw_gbps() * factor, 1e-9);
      // Plausible for tcp over loopback on any machine: above 1 MB/s, below 1 TB/s.
      EXPECT_GT(row.busbw_gbps(), 0.001);
      EXPECT_LT(row.busbw_gbps(), 1000);
    }
    // all_gather and reduce_scatter sizes are whole floats per rank.
    if (op != v1::ALL_REDUCE) {
      EXPECT_EQ(r.rows(1).size() % 12, 0u);
    }
    EXPECT_EQ(r.rows(0).count(),
              op == v1::ALL_REDUCE ? r.rows(0).size() / 4 : r.rows(0).size() / 4 / 3);
  }
}

TEST_F(CollectiveTest, BadArgumentsAreInvalidArgument) {
  v1::RunCollectiveRequest r = Request(v1::BROADCAST);  // host backend has no broadcast
  v1::CollectiveResult out;
  grpc::Status st = RunColl(*agents_[0], r, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("broadcast"));
  r = Request(v1::ALL_REDUCE);
  r.set_sizes(0, 1ull << 40);
  st = RunColl(*agents_[0], r, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  r = Request(v1::ALL_REDUCE);
  r.clear_participants();
  st = RunColl(*agents_[0], r, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A participant asked directly with nonsense answers the same way.
  grpc::ClientContext ctx;
  v1::JoinCollectiveRequest j;
  j.set_session("x");
  j.set_op(v1::ALL_REDUCE);
  j.set_backend(v1::HOST);
  j.set_nranks(2);
  j.set_rank(5);
  j.add_sizes(1024);
  j.set_iters(1);
  j.set_deadline_ms(1000);
  v1::JoinCollectiveResponse jr;
  st = agents_[1]->Stub()->JoinCollective(&ctx, j, &jr);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("rank 5 of 2"));
}

TEST_F(CollectiveTest, OneCollectivePerNode) {
  // A long run on agents 0 and 1; a second collective that needs agent 1 is refused at once.
  v1::RunCollectiveRequest longer = Request(v1::ALL_REDUCE);
  longer.clear_participants();
  longer.add_participants(agents_[0]->grpc_address());
  longer.add_participants(agents_[1]->grpc_address());
  longer.clear_sizes();
  longer.add_sizes(16 << 20);
  longer.set_iters(1000);        // cannot finish ...
  longer.set_deadline_ms(8000);  // ... so it ends, on every participant, at its deadline
  auto first = std::async(std::launch::async, [&] {
    v1::CollectiveResult r;
    return RunColl(*agents_[0], longer, &r);
  });
  // Once agent 1 shows it running, the second request surely comes while the first runs.
  ASSERT_TRUE(
      testing::WaitForMetrics(agents_[1]->metrics_port(), "\nefawatch_collective_running 1", 10s))
      << "the first collective never ran on agent 1";
  v1::RunCollectiveRequest second = Request(v1::ALL_REDUCE);
  second.clear_participants();
  second.add_participants(agents_[2]->grpc_address());
  second.add_participants(agents_[1]->grpc_address());
  v1::CollectiveResult out;
  const grpc::Status st = RunColl(*agents_[2], second, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("one at a time per node"));
  const grpc::Status ended = first.get();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::ABORTED) << ended.error_message();
  EXPECT_THAT(ended.error_message(), HasSubstr("deadline"));
  // Free again afterwards.
  EXPECT_TRUE(testing::WaitForMetrics(agents_[1]->metrics_port(),
                                      "\nefawatch_collective_in_progress 0", 10s));
  EXPECT_TRUE(RunColl(*agents_[2], second, &out).ok());
}

TEST_F(CollectiveTest, ParticipantKilledMidRunAbortsAllWithinTheDeadline) {
  v1::RunCollectiveRequest r = Request(v1::ALL_REDUCE);
  r.clear_sizes();
  r.add_sizes(16 << 20);
  r.set_iters(1000);  // far longer than the test waits
  r.set_deadline_ms(30000);
  const auto start = std::chrono::steady_clock::now();
  auto run = std::async(std::launch::async, [&] {
    v1::CollectiveResult out;
    return RunColl(*agents_[0], r, &out);
  });
  // Killed once it runs there: mid-run whatever the machine's speed (a fixed sleep could land
  // in the joins, which end differently).
  ASSERT_TRUE(
      testing::WaitForMetrics(agents_[2]->metrics_port(), "\nefawatch_collective_running 1", 10s))
      << "the collective never ran on agent 2";
  agents_[2]->proc().Signal(SIGKILL);
  const grpc::Status st = run.get();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.error_code(), grpc::StatusCode::ABORTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr(agents_[2]->grpc_address()));
  EXPECT_LT(took, 30s) << "within the deadline";
  // The survivors are healthy and free for the next collective.
  v1::RunCollectiveRequest again = Request(v1::ALL_REDUCE);
  again.clear_participants();
  again.add_participants(agents_[0]->grpc_address());
  again.add_participants(agents_[1]->grpc_address());
  v1::CollectiveResult out;
  const grpc::Status next = RunColl(*agents_[1], again, &out);
  EXPECT_TRUE(next.ok()) << next.error_message();
  EXPECT_EQ(out.rows(0).wrong(), 0u);
}

TEST_F(CollectiveTest, CliPrintsAnNcclTestsLikeTable) {
  const std::string agents = agents_[0]->grpc_address() + "," + agents_[1]->grpc_address() + "," +
                             agents_[2]->grpc_address();
  auto [rc, out] =
      testing::RunCommand({testing::BinaryPath("bin/efawatch"), "collective", "--agents", agents,
                           "--op", "all_gather", "--sizes", "64K:256K", "--iters", "2"},
                          120s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("# all_gather, backend host, 3 ranks"));
  EXPECT_THAT(out, HasSubstr("algbw(GB/s) busbw(GB/s)   #wrong"));
  EXPECT_THAT(out, HasSubstr("# Avg bus bandwidth:"));
  EXPECT_THAT(out, HasSubstr("# Data check: OK (0 wrong elements)"));
  auto [rc2, out2] = testing::RunCommand(
      {testing::BinaryPath("bin/efawatch"), "collective", "--agents", agents, "--sizes", "8M:1M"},
      30s);
  EXPECT_EQ(rc2, 2);
  EXPECT_THAT(out2, HasSubstr("--sizes"));
}

}  // namespace
}  // namespace efawatch
