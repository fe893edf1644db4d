// SPDX-License-Identifier: Apache-2.0
// The gRPC edge over a fake handler: real gRPC on 127.0.0.1, no agent behind it. What the edge
// owns is tested here: requests converted to the handler's typed arguments, the handler's
// statuses mapped to gRPC codes with their messages, calls refused by authorization before they
// reach the handler, and the handler's records rendered into the reply.

#include "daemon/rpc/grpc_edge.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <mutex>
#include <optional>

#include "daemon/agent/agent_handler.h"
#include "efawatch/v1/agent.grpc.pb.h"

namespace efawatch::rpc {
namespace {

// Answers every call with `status` (OK: a canned result) and records what it was given.
class FakeHandler final : public agent::AgentHandler {
 public:
  absl::Status status = absl::OkStatus();
  common::NodeHealth health;

  int calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::optional<std::pair<agent::ProbeTarget, fabric::PingOptions>> last_ping() const {
    std::lock_guard lock(mu_);
    return ping_;
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
  void Ping(const agent::ProbeTarget& target, fabric::PingOptions options, PingDone done) override {
    Count();
    {
      std::lock_guard lock(mu_);
      ping_.emplace(target, options);
    }
    if (!status.ok()) return done(status);
    done(fabric::PingResult{});
  }
  void Bandwidth(const agent::ProbeTarget&, fabric::BandwidthOptions, BandwidthDone done) override {
    Count();
    done(status.ok() ? absl::StatusOr<fabric::BandwidthResult>(fabric::BandwidthResult{}) : status);
  }
  void RunCollective(collective::RunRequest, CollectiveDone done) override {
    Count();
    done(status.ok() ? absl::StatusOr<collective::Result>(collective::Result{}) : status);
  }
  absl::StatusOr<collective::JoinResponse> JoinCollective(const collective::JoinRequest&) override {
    Count();
    if (!status.ok()) return status;
    return collective::JoinResponse{};
  }
  void StartCollective(const collective::StartRequest&, RankDone done) override {
    Count();
    done(status.ok() ? absl::StatusOr<collective::RankResult>(collective::RankResult{}) : status);
  }
  void AbortCollective(const collective::AbortRequest&) override { Count(); }
  void RunDoctor(DoctorDone done) override {
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
  common::SystemClock clock_;
  mutable common::FindingsBoard board_{clock_};
};

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

}  // namespace
}  // namespace efawatch::rpc
