// SPDX-License-Identifier: Apache-2.0
// Two real efawatchd on 127.0.0.1 probe each other over the libfabric tcp provider, driven
// through gRPC and through the real CLI.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <memory>
#include <regex>
#include <thread>

#include "efawatch/v1/agent.grpc.pb.h"
#include "tests/support/agent_process.h"

namespace efawatch {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

using Agent = testing::AgentProcess;

grpc::Status Ping(const Agent& a, const v1::PingRequest& req, v1::PingResponse* resp,
                  std::chrono::seconds timeout = 30s) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  return a.Stub()->Ping(&ctx, req, resp);
}

grpc::Status Bandwidth(const Agent& a, const v1::BandwidthRequest& req,
                       v1::BandwidthResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  return a.Stub()->Bandwidth(&ctx, req, resp);
}

// True once the peer's responder has answered pings (its /metrics counts them).
bool ResponderAnsweredPings(Agent& agent, std::chrono::seconds timeout) {
  return testing::WaitForMetrics(agent.metrics_port(),
                                 R"(efawatch_fabric_responder_messages_total\{kind="ping"\} [1-9])",
                                 timeout);
}

// True once the agent's /metrics shows a probe's reservation in its memory budget.
bool BudgetInUse(Agent& agent, std::chrono::seconds timeout) {
  return testing::WaitForMetrics(agent.metrics_port(),
                                 R"(\nefawatch_memory_budget_in_use_bytes [1-9])", timeout);
}

class DaemonFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = std::make_unique<Agent>();
    b_ = std::make_unique<Agent>();
    ASSERT_TRUE(a_->ok()) << a_->proc().Stderr();
    ASSERT_TRUE(b_->ok()) << b_->proc().Stderr();
  }
  std::unique_ptr<Agent> a_, b_;
};

TEST_F(DaemonFabricTest, GetFabricAddressReportsTheResponder) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  v1::FabricAddress addr;
  ASSERT_TRUE(b_->Stub()->GetFabricAddress(&ctx, v1::GetFabricAddressRequest(), &addr).ok());
  EXPECT_FALSE(addr.address().empty());
  EXPECT_THAT(addr.provider(), HasSubstr("tcp"));
  EXPECT_EQ(addr.domain(), "lo");
  EXPECT_THAT(addr.printable(), HasSubstr("127.0.0.1"));
}

TEST_F(DaemonFabricTest, PingAndBandwidthOverGrpc) {
  v1::PingRequest req;
  req.set_peer_agent(b_->grpc_address());
  req.set_count(100);
  v1::PingResponse resp;
  grpc::Status st = Ping(*a_, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.end(), v1::PROBE_END_COMPLETED) << resp.last_error();
  EXPECT_EQ(resp.received(), 100u);
  EXPECT_GT(resp.rtt().median_us(), 0);
  EXPECT_THAT(resp.local().provider(), HasSubstr("tcp"));

  v1::BandwidthRequest breq;
  breq.set_peer_agent(b_->grpc_address());
  breq.add_sizes(4096);
  breq.add_sizes(1 << 20);
  breq.set_ms_per_size(100);
  v1::BandwidthResponse bresp;
  st = Bandwidth(*a_, breq, &bresp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(bresp.end(), v1::PROBE_END_COMPLETED) << bresp.last_error();
  ASSERT_EQ(bresp.points_size(), 2);
  EXPECT_GT(bresp.points(1).gbytes_per_second(), 0.0005);

  // The results show as per-peer metrics on A, next to the provider B and A opened.
  auto [code, body] = testing::HttpGet(a_->metrics_port(), "/metrics");
  ASSERT_EQ(code, 200);
  EXPECT_THAT(body, HasSubstr("efawatch_fabric_provider_info{"));
  EXPECT_THAT(body, HasSubstr("efawatch_fabric_ping_rtt_seconds{peer=\"" + resp.peer()));
  EXPECT_THAT(body, HasSubstr("efawatch_fabric_ping_loss_ratio{peer=\"" + resp.peer() + "\"} 0"));
  EXPECT_THAT(body, HasSubstr("efawatch_fabric_bandwidth_bytes_per_second{peer=\""));
  auto [code_b, body_b] = testing::HttpGet(b_->metrics_port(), "/metrics");
  EXPECT_THAT(body_b, HasSubstr("efawatch_fabric_responder_messages_total{kind=\"ping\"} 110"));
}

TEST_F(DaemonFabricTest, CliPingAndBandwidthTextAndJson) {
  auto [rc, out] = testing::RunCommand(
      {testing::BinaryPath("bin/efawatch"), "ping", "--agent", a_->grpc_address(), "--peer",
       b_->grpc_address(), "--count", "50", "--size", "1024"},
      60s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("p50 us"));
  EXPECT_THAT(out, HasSubstr("completed"));
  std::tie(rc, out) = testing::RunCommand(
      {testing::BinaryPath("bin/efawatch"), "ping", "--agent", a_->grpc_address(), "--peer",
       b_->grpc_address(), "--count", "20", "--format", "json"},
      60s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("\"received\":20"));
  std::tie(rc, out) = testing::RunCommand(
      {testing::BinaryPath("bin/efawatch"), "bandwidth", "--agent", a_->grpc_address(), "--peer",
       b_->grpc_address(), "--sizes", "65536,1048576", "--ms-per-size", "100"},
      60s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("GB/s"));
  EXPECT_THAT(out, HasSubstr("1048576"));
}

TEST_F(DaemonFabricTest, RmaBandwidthOverGrpcAndCli) {
  v1::BandwidthRequest breq;
  breq.set_peer_agent(b_->grpc_address());
  breq.add_sizes(1 << 20);
  breq.set_ms_per_size(100);
  breq.set_rma(true);
  v1::BandwidthResponse bresp;
  grpc::Status st = Bandwidth(*a_, breq, &bresp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(bresp.rma());
  EXPECT_TRUE(bresp.local().rma()) << "tcp;ofi_rxm offers FI_RMA";
  EXPECT_EQ(bresp.end(), v1::PROBE_END_COMPLETED) << bresp.last_error();
  ASSERT_EQ(bresp.points_size(), 1);
  EXPECT_GT(bresp.points(0).gbytes_per_second(), 0.0005);

  breq.set_bidirectional(true);
  st = Bandwidth(*a_, breq, &bresp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("one-way"));

  auto [rc, out] = testing::RunCommand(
      {testing::BinaryPath("bin/efawatch"), "bandwidth", "--agent", a_->grpc_address(), "--peer",
       b_->grpc_address(), "--sizes", "1048576", "--ms-per-size", "100", "--rma"},
      60s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("RMA write"));
  EXPECT_THAT(out, HasSubstr("GB/s"));
}

TEST_F(DaemonFabricTest, BadArgumentsAreInvalidArgument) {
  v1::PingResponse resp;
  v1::PingRequest req;
  EXPECT_EQ(Ping(*a_, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT) << "no peer";
  req.set_peer_agent(b_->grpc_address());
  req.set_count(10'000'000);
  grpc::Status st = Ping(*a_, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("count"));
  req.set_count(10);
  req.set_message_bytes(1u << 30);
  EXPECT_EQ(Ping(*a_, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  req.set_message_bytes(64);
  req.set_deadline_ms(3'600'000);
  EXPECT_EQ(Ping(*a_, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::BandwidthRequest breq;
  breq.set_peer_agent(b_->grpc_address());
  breq.set_window(100000);
  v1::BandwidthResponse bresp;
  EXPECT_EQ(Bandwidth(*a_, breq, &bresp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  auto [rc, out] =
      testing::RunCommand({testing::BinaryPath("bin/efawatch"), "ping", "--agent",
                           a_->grpc_address(), "--peer", b_->grpc_address(), "--count", "10000000"},
                          30s);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_THAT(out, HasSubstr("count"));
}

TEST_F(DaemonFabricTest, UnreachablePeerAgentIsUnavailable) {
  v1::PingRequest req;
  req.set_peer_agent("127.0.0.1:1");
  v1::PingResponse resp;
  EXPECT_EQ(Ping(*a_, req, &resp).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(DaemonFabricTest, KilledPeerGivesTimeoutWithinDeadlineAndAgentKeepsServing) {
  // 200,000 round trips take seconds on any machine; the peer is killed as soon as its responder
  // has answered the first ones, so the probe is always in flight when it dies (a fixed sleep
  // let a fast machine finish the pings first).
  v1::PingRequest req;
  req.set_peer_agent(b_->grpc_address());
  req.set_count(100000);
  req.set_warmup(100000);
  req.set_message_timeout_ms(200);
  req.set_deadline_ms(4000);
  v1::PingResponse resp;
  auto pending = std::async(std::launch::async, [&] { return Ping(*a_, req, &resp); });
  ASSERT_TRUE(ResponderAnsweredPings(*b_, 5s)) << "the ping never reached the peer";
  b_->proc().Signal(SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  grpc::Status st = pending.get();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  EXPECT_NE(resp.end(), v1::PROBE_END_COMPLETED);
  EXPECT_GT(resp.lost() + resp.errors(), 0u);
  EXPECT_LE(resp.elapsed_seconds(), 5.0);

  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  v1::NodeHealth h;
  EXPECT_TRUE(a_->Stub()->GetNodeHealth(&ctx, v1::GetNodeHealthRequest(), &h).ok());
  EXPECT_THAT(h.fabric_provider(), HasSubstr("tcp"));
}

TEST_F(DaemonFabricTest, SecondBandwidthProbeWaitsThenIsResourceExhausted) {
  v1::BandwidthRequest slow;
  slow.set_peer_agent(b_->grpc_address());
  slow.add_sizes(1 << 20);
  slow.set_ms_per_size(3000);
  v1::BandwidthResponse slow_resp;
  auto first = std::async(std::launch::async, [&] { return Bandwidth(*a_, slow, &slow_resp); });
  // The first probe holds its memory reservation from its start to its end: once the agent
  // shows it, the second request surely comes while the first runs (a fixed sleep did not).
  ASSERT_TRUE(BudgetInUse(*a_, 5s)) << "the first probe never started";
  v1::BandwidthRequest quick = slow;
  quick.set_ms_per_size(100);
  quick.set_deadline_ms(500);
  v1::BandwidthResponse quick_resp;
  grpc::Status st = Bandwidth(*a_, quick, &quick_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  grpc::Status first_st = first.get();
  ASSERT_TRUE(first_st.ok()) << first_st.error_message();
  EXPECT_EQ(slow_resp.end(), v1::PROBE_END_COMPLETED) << slow_resp.last_error();
}

// The other providers the agent may end up on; shm has one domain ("shm"), so no interface.
TEST(DaemonFabricProvidersTest, PingAndBandwidthOverSocketsAndShm) {
  for (auto [provider, interface] : {std::pair{"sockets", "lo"}, std::pair{"shm", ""}}) {
    SCOPED_TRACE(provider);
    Agent a(provider, interface), b(provider, interface);
    ASSERT_TRUE(a.ok()) << a.proc().Stderr();
    ASSERT_TRUE(b.ok()) << b.proc().Stderr();
    v1::PingRequest req;
    req.set_peer_agent(b.grpc_address());
    req.set_count(50);
    v1::PingResponse resp;
    grpc::Status st = Ping(a, req, &resp);
    // The agent's log says why a provider did not open (e.g. /dev/shm too small for shm).
    ASSERT_TRUE(st.ok()) << st.error_message() << "\n" << a.proc().Stderr();
    EXPECT_EQ(resp.received(), 50u) << resp.last_error();
    EXPECT_THAT(resp.local().provider(), HasSubstr(provider));
    v1::BandwidthRequest breq;
    breq.set_peer_agent(b.grpc_address());
    breq.add_sizes(1 << 20);
    breq.set_ms_per_size(100);
    v1::BandwidthResponse bresp;
    st = Bandwidth(a, breq, &bresp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(bresp.points_size(), 1) << bresp.last_error();
  }
}

}  // namespace
}  // namespace efawatch
