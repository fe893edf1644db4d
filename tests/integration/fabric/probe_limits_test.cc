// SPDX-License-Identifier: Apache-2.0
// A real efawatchd on the tcp provider asked for more than its memory budget: an oversized
// bandwidth probe aimed at itself is refused before anything is allocated (its peak RSS stays
// low), and of two concurrent pings that do not fit together the second is refused while the
// first runs. RSS is read from /proc while the probe runs; every wait polls a condition.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <regex>
#include <string>
#include <thread>

#include "efawatch/v1/agent.grpc.pb.h"
#include "tests/support/agent_process.h"

namespace efawatch {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;
using Agent = testing::AgentProcess;

constexpr uint64_t kMiB = 1u << 20;
constexpr uint64_t kBudget = 64 * kMiB;
// What the budget does not cover: the provider's own copies of messages in flight and the
// responder's preallocated receive slots, touched for the first time by large messages.
constexpr uint64_t kUnbudgeted = 24 * kMiB;
// The shipped DaemonSet's memory limit.
constexpr uint64_t kPodLimit = 256 * kMiB;

// VmRSS or VmHWM (the peak) of `pid`, in bytes; 0 when unreadable.
uint64_t ProcMemory(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

double Metric(const Agent& a, const std::string& series) {
  const std::string body = testing::HttpGet(a.metrics_port(), "/metrics").second;
  auto p = body.find("\n" + series + " ");
  return p == std::string::npos ? -1 : std::stod(body.substr(p + series.size() + 2));
}

bool WaitForMetric(const Agent& a, const std::string& series,
                   const std::function<bool(double)>& pred, std::chrono::seconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred(Metric(a, series))) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

class ProbeLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = std::make_unique<Agent>("tcp", "lo", std::vector<std::string>{"--memory-budget=64Mi"});
    ASSERT_TRUE(agent_->ok()) << agent_->proc().Stderr();
    ASSERT_TRUE(WaitForMetric(*agent_, "efawatch_memory_budget_bytes",
                              [](double v) { return v == kBudget; }));
    baseline_ = ProcMemory(agent_->proc().pid(), "VmRSS");
    ASSERT_GT(baseline_, 0u);
  }
  std::unique_ptr<Agent> agent_;
  uint64_t baseline_ = 0;
};

TEST_F(ProbeLimitsTest, OversizedBandwidthProbeIsRefusedBeforeItAllocates) {
  // Bidirectional, 8 MiB messages, window 64, aimed at itself: 552 MiB of buffers (597 MiB of
  // RSS measured before the budget), against a pod limit of 256 MiB.
  v1::BandwidthRequest req;
  req.set_peer_agent(agent_->grpc_address());
  req.add_sizes(8 * kMiB);
  req.set_bidirectional(true);
  req.set_window(64);
  req.set_ms_per_size(1000);
  v1::BandwidthResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  const grpc::Status st = agent_->Stub()->Bandwidth(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("needs 578818048 bytes"));
  EXPECT_THAT(st.error_message(), HasSubstr("--memory-budget"));
  EXPECT_LT(ProcMemory(agent_->proc().pid(), "VmHWM"), baseline_ + kBudget + kUnbudgeted)
      << "the peak RSS stayed under the baseline plus the budget";
  EXPECT_LT(ProcMemory(agent_->proc().pid(), "VmHWM"), kPodLimit);
  EXPECT_EQ(Metric(*agent_, "efawatch_rpc_refused_total{limit=\"memory\"}"), 1);
}

TEST_F(ProbeLimitsTest, ConcurrentProbesBeyondTheBudgetAreRefusedWhileTheFirstRuns) {
  // 16 buffers of 3 MiB: 48 MiB, one fits in 64 MiB and two do not.
  v1::PingRequest req;
  req.set_peer_agent(agent_->grpc_address());
  req.set_message_bytes(3 * kMiB);
  req.set_count(100000);
  req.set_deadline_ms(4000);
  v1::PingResponse first_resp;
  auto first = std::async(std::launch::async, [&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    return agent_->Stub()->Ping(&ctx, req, &first_resp);
  });
  // The first holds its reservation from start to end: wait until the agent says so.
  ASSERT_TRUE(WaitForMetric(*agent_, "efawatch_memory_budget_in_use_bytes",
                            [](double v) { return v == 48 * kMiB; }));
  uint64_t peak_while_running = ProcMemory(agent_->proc().pid(), "VmRSS");
  v1::PingRequest second = req;
  second.set_deadline_ms(1000);
  v1::PingResponse second_resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  const grpc::Status st = agent_->Stub()->Ping(&ctx, second, &second_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr("ping needs"));
  peak_while_running = std::max(peak_while_running, ProcMemory(agent_->proc().pid(), "VmRSS"));
  EXPECT_LT(peak_while_running, baseline_ + kBudget + kUnbudgeted);

  const grpc::Status first_st = first.get();
  EXPECT_TRUE(first_st.ok()) << first_st.error_message();
  // Released before the caller heard of the end: the next one fits again.
  EXPECT_EQ(Metric(*agent_, "efawatch_memory_budget_in_use_bytes"), 0);
  second.set_count(10);
  grpc::ClientContext again;
  again.set_deadline(std::chrono::system_clock::now() + 30s);
  const grpc::Status st2 = agent_->Stub()->Ping(&again, second, &second_resp);
  EXPECT_TRUE(st2.ok()) << st2.error_message();
  EXPECT_LT(ProcMemory(agent_->proc().pid(), "VmHWM"), baseline_ + kBudget + kUnbudgeted);
}

}  // namespace
}  // namespace efawatch
