// SPDX-License-Identifier: Apache-2.0
// The gRPC edge over a fake handler: real gRPC on 127.0.0.1, no agent behind it. What the edge
// owns is tested here: requests converted to the handler's typed arguments, the handler's
// statuses mapped to gRPC codes with their messages, calls refused by authorization before they
// reach the handler, and the handler's records rendered into the reply.

#include "daemon/rpc/grpc_edge.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "daemon/agent/agent_handler.h"
#include "efawatch/v1/agent.grpc.pb.h"

namespace efawatch::rpc {
namespace {

// Answers every call with `status` (OK: a canned result) and records what it was given. With
// `probe_like`, a Ping runs as a fabric probe does: on its own thread, in the one probe slot (a
// second is RESOURCE_EXHAUSTED), until its own deadline (then OK), the call's deadline
// (DEADLINE_EXCEEDED) or the call's cancellation (CANCELLED), whichever comes first. With
// `hold_joins`, JoinCollective keeps its `done` for the test to call.
class FakeHandler final : public agent::AgentHandler {
 public:
  absl::Status status = absl::OkStatus();
  common::NodeHealth health;
  bool probe_like = false;
  bool hold_joins = false;

  ~FakeHandler() override {
    std::lock_guard lock(mu_);
    if (probe_.joinable()) probe_.request_stop();
  }

  int calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::optional<std::pair<agent::ProbeTarget, fabric::PingOptions>> last_ping() const {
    std::lock_guard lock(mu_);
    return ping_;
  }
  agent::CallContext last_call() const {
    std::lock_guard lock(mu_);
    return call_;
  }
  bool probe_running() const {
    std::lock_guard lock(mu_);
    return slot_taken_;
  }
  // The done of the held JoinCollective, once one arrived.
  JoinDone TakeJoin() {
    std::lock_guard lock(mu_);
    return std::exchange(join_, nullptr);
  }

  common::NodeHealth GetNodeHealth() const override {
    Count();
    return health;
  }
  common::FindingsBoard& findings() const override { return board_; }
  absl::StatusOr<agent::FabricAddress> GetFabricAddress() const override {
    Count();
    if (!status.ok()) return status;
    return agent::FabricAddress{.info = {}, .address = "raw", .printable = "p", .node_name = "n"};
  }
  void Ping(const agent::CallContext& call, const agent::ProbeTarget& target,
            fabric::PingOptions options, PingDone done) override {
    Count();
    {
      std::lock_guard lock(mu_);
      ping_.emplace(target, options);
      call_ = call;
    }
    if (!status.ok()) return done(status);
    if (!probe_like) return done(fabric::PingResult{});
    std::lock_guard lock(mu_);
    if (slot_taken_) return done(absl::ResourceExhaustedError("the probe slot is taken"));
    slot_taken_ = true;
    if (probe_.joinable()) probe_.join();  // the previous probe, which has ended
    probe_ = std::jthread([this, call, own = options.deadline, done = std::move(done)] {
      // The edge's deadline is on the system clock (the edge's default).
      const auto end = std::min(call.deadline, std::chrono::steady_clock::now() + own);
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock wait_lock(m);
      cv.wait_until(wait_lock, call.cancel, end, [] { return false; });
      {
        std::lock_guard slot_lock(mu_);
        slot_taken_ = false;
      }
      if (call.cancelled() && std::chrono::steady_clock::now() < call.deadline) {
        return done(absl::CancelledError("cancelled"));
      }
      if (end == call.deadline) return done(absl::DeadlineExceededError("caller's deadline"));
      done(fabric::PingResult{});
    });
  }
  void Bandwidth(const agent::CallContext&, const agent::ProbeTarget&, fabric::BandwidthOptions,
                 BandwidthDone done) override {
    Count();
    done(status.ok() ? absl::StatusOr<fabric::BandwidthResult>(fabric::BandwidthResult{}) : status);
  }
  void RunCollective(const agent::CallContext&, collective::RunRequest,
                     CollectiveDone done) override {
    Count();
    done(status.ok() ? absl::StatusOr<collective::Result>(collective::Result{}) : status);
  }
  void JoinCollective(const agent::CallContext&, const collective::JoinRequest&,
                      JoinDone done) override {
    Count();
    if (hold_joins) {
      std::lock_guard lock(mu_);
      join_ = std::move(done);
      return;
    }
    if (!status.ok()) return done(status);
    done(collective::JoinResponse{});
  }
  void StartCollective(const agent::CallContext&, const collective::StartRequest&,
                       RankDone done) override {
    Count();
    done(status.ok() ? absl::StatusOr<collective::RankResult>(collective::RankResult{}) : status);
  }
  void AbortCollective(const collective::AbortRequest&) override { Count(); }
  void RunDoctor(const agent::CallContext&, DoctorDone done) override {
    Count();
    done(status.ok() ? absl::StatusOr<doctor::Report>(doctor::Report{}) : status);
  }

 private:
  void Count() const {
    std::lock_guard lock(mu_);
    ++calls_;
  }
  mutable std::mutex mu_;
  mutable int calls_ = 0;
  std::optional<std::pair<agent::ProbeTarget, fabric::PingOptions>> ping_;
  agent::CallContext call_;
  bool slot_taken_ = false;
  JoinDone join_;
  common::SystemClock clock_;
  mutable common::FindingsBoard board_{clock_};
  std::jthread probe_;  // last: joined first, while the rest is still there
};

// Polls `f` for up to `limit` (the handler's threads report asynchronously).
template <typename F>
bool Eventually(F f, std::chrono::milliseconds limit = std::chrono::milliseconds(3000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!f()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class GrpcEdgeTest : public ::testing::Test {
 protected:
  void Start(AuthzOptions authz = {}) {
    GrpcEdgeOptions o;
    o.listen = "127.0.0.1:0";
    o.authz = std::move(authz);
    auto edge = GrpcEdge::Create(o, &handler_);
    ASSERT_TRUE(edge.ok()) << edge.status();
    edge_ = std::move(*edge);
    stub_ = v1::Agent::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(edge_->port()),
                                                   grpc::InsecureChannelCredentials()));
  }

  static std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return ctx;
  }

  grpc::Status Ping(const v1::PingRequest& req) {
    v1::PingResponse resp;
    return stub_->Ping(Context().get(), req, &resp);
  }

  FakeHandler handler_;
  std::unique_ptr<GrpcEdge> edge_;
  std::unique_ptr<v1::Agent::Stub> stub_;
};

TEST_F(GrpcEdgeTest, ConvertsTheRequestIntoTheHandlersArguments) {
  Start();
  v1::PingRequest req;
  req.set_peer_agent("10.0.0.2:9478");
  req.set_count(7);
  req.set_message_bytes(4096);
  req.set_deadline_ms(2500);
  ASSERT_TRUE(Ping(req).ok());
  const auto got = handler_.last_ping();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->first.peer_agent, "10.0.0.2:9478");
  EXPECT_EQ(got->second.count, 7u);
  EXPECT_EQ(got->second.message_bytes, 4096u);
  EXPECT_EQ(got->second.deadline, std::chrono::milliseconds(2500));
}

TEST_F(GrpcEdgeTest, MapsTheHandlersStatusToTheSameCodeAndMessage) {
  Start();
  for (const absl::Status& s :
       {absl::InvalidArgumentError("count 0: must be 1 to 100000"),
        absl::FailedPreconditionError("no fabric"), absl::NotFoundError("no responder"),
        absl::ResourceExhaustedError("one at a time"), absl::UnavailableError("peer down"),
        absl::DeadlineExceededError("late")}) {
    handler_.status = s;
    const grpc::Status got = Ping(v1::PingRequest());
    EXPECT_EQ(static_cast<int>(got.error_code()), static_cast<int>(s.code())) << s;
    EXPECT_EQ(got.error_message(), s.message());
    v1::FabricAddress addr;
    const grpc::Status a = stub_->GetFabricAddress(Context().get(), {}, &addr);
    EXPECT_EQ(static_cast<int>(a.error_code()), static_cast<int>(s.code())) << s;
  }
}

TEST_F(GrpcEdgeTest, RendersTheHandlersRecords) {
  handler_.health.node = "node-a";
  handler_.health.pods.push_back({.namespace_name = "ml",
                                  .pod = "train-0",
                                  .container = "main",
                                  .nccl = {},
                                  .workload_kind = "RayCluster",
                                  .workload = "ft",
                                  .source = "pod_volume",
                                  .files = 2,
                                  .stack = {}});
  handler_.health.pods[0].nccl.tcp_certain = true;
  handler_.health.pods[0].nccl.nodes_evidence = nccl::NodesEvidence::kProvenMulti;
  Start();
  v1::NodeHealth h;
  ASSERT_TRUE(stub_->GetNodeHealth(Context().get(), {}, &h).ok());
  EXPECT_EQ(h.node(), "node-a");
  ASSERT_EQ(h.pods_size(), 1);
  EXPECT_EQ(h.pods(0).workload(), "ft");
  EXPECT_TRUE(h.pods(0).nccl().tcp_certain());
  EXPECT_EQ(h.pods(0).nccl().nodes_evidence(), "proven_multi");
}

TEST_F(GrpcEdgeTest, RefusesCallersWithoutARoleBeforeTheHandler) {
  // Roles configured, and this caller presents no certificate: no identity, no role.
  Start({.readers = {"reader.example"}, .operators = {"operator.example"}, .agents = {}});
  v1::NodeHealth h;
  const grpc::Status health = stub_->GetNodeHealth(Context().get(), {}, &h);
  EXPECT_EQ(health.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(health.error_message().find("GetNodeHealth"), std::string::npos)
      << health.error_message();
  EXPECT_EQ(Ping(v1::PingRequest()).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(handler_.calls(), 0) << "a refused call reached the handler";
}

// The client's deadline reaches the handler (on its clock), and a probe that honours it ends the
// call at the client's deadline, not at its own ten seconds.
TEST_F(GrpcEdgeTest, AClientDeadlineShorterThanTheProbesEndsTheCallAtIt) {
  handler_.probe_like = true;
  Start();
  v1::PingRequest req;
  req.set_peer_agent("10.0.0.2:9478");
  req.set_deadline_ms(10000);
  grpc::ClientContext ctx;
  const auto start = std::chrono::steady_clock::now();
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  v1::PingResponse resp;
  const grpc::Status st = stub_->Ping(&ctx, req, &resp);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  EXPECT_LT(took, std::chrono::milliseconds(300 + 1500));
  const agent::CallContext call = handler_.last_call();
  ASSERT_TRUE(call.has_deadline());
  // Converted from the system clock to the handler's, give or take the conversion's moments.
  EXPECT_LE(call.deadline - start, std::chrono::milliseconds(300 + 50));
  EXPECT_GT(call.deadline - start, std::chrono::milliseconds(0));
  // The probe itself ended with the call, well before its own deadline.
  EXPECT_TRUE(Eventually([&] { return !handler_.probe_running(); }));
}

TEST_F(GrpcEdgeTest, ACallWithoutADeadlineGivesTheHandlerNone) {
  Start();
  grpc::ClientContext ctx;  // no deadline
  v1::PingResponse resp;
  ASSERT_TRUE(stub_->Ping(&ctx, v1::PingRequest(), &resp).ok());
  EXPECT_FALSE(handler_.last_call().has_deadline());
}

// A cancelled call reaches the handler through its token, is answered CANCELLED at once, and
// its probe stops and frees the slot: the next call is admitted, not RESOURCE_EXHAUSTED.
TEST_F(GrpcEdgeTest, ACancelledCallStopsItsProbeAndFreesTheSlot) {
  handler_.probe_like = true;
  Start();
  v1::PingRequest req;
  req.set_peer_agent("10.0.0.2:9478");
  req.set_deadline_ms(60000);
  auto ctx = Context();
  v1::PingResponse resp;
  std::promise<grpc::Status> answered;
  const auto start = std::chrono::steady_clock::now();
  stub_->async()->Ping(ctx.get(), &req, &resp,
                       [&answered](grpc::Status s) { answered.set_value(std::move(s)); });
  ASSERT_TRUE(Eventually([&] { return handler_.probe_running(); }));
  // While it runs, the slot is taken.
  EXPECT_EQ(Ping(req).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ctx->TryCancel();
  EXPECT_EQ(answered.get_future().get().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(Eventually([&] { return !handler_.probe_running(); }))
      << "the probe ran on after its call was cancelled";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  req.set_deadline_ms(1);  // a probe that ends by its own deadline at once
  const grpc::Status next = Ping(req);
  EXPECT_TRUE(next.ok()) << next.error_code() << " " << next.error_message();
}

// JoinCollective is answered when the handler calls back, from its own thread: the callback
// thread is not held meanwhile, so other calls are served.
TEST_F(GrpcEdgeTest, JoinCollectiveIsAnsweredAsynchronously) {
  handler_.hold_joins = true;
  Start();
  auto ctx = Context();
  v1::JoinCollectiveResponse resp;
  std::promise<grpc::Status> answered;
  v1::JoinCollectiveRequest req;
  stub_->async()->JoinCollective(ctx.get(), &req, &resp,
                                 [&answered](grpc::Status s) { answered.set_value(std::move(s)); });
  agent::AgentHandler::JoinDone done;
  ASSERT_TRUE(Eventually([&] { return (done = handler_.TakeJoin()) != nullptr; }));
  v1::NodeHealth h;
  EXPECT_TRUE(stub_->GetNodeHealth(Context().get(), {}, &h).ok());
  std::jthread backend([&done] {
    collective::JoinResponse r;
    r.node_name = "node-b";
    done(r);
  });
  EXPECT_TRUE(answered.get_future().get().ok());
  EXPECT_EQ(resp.node_name(), "node-b");
}

}  // namespace
}  // namespace efawatch::rpc
