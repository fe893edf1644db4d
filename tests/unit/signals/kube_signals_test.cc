// SPDX-License-Identifier: Apache-2.0
// The Kubernetes signals' rules on a fake clock with a recording API: one Event per problem
// (not one per round), the rate limit, AlreadyExists and RBAC refusals, NodeConditions sent on
// change and on the heartbeat only, with their transition times.
#include "daemon/signals/kube_signals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/fake_clock.h"

namespace efawatch::signals {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using ::testing::HasSubstr;

struct Request {
  std::string method, path, content_type;
  Json body;
};

class KubeSignalsTest : public ::testing::Test {
 protected:
  KubeSignalsTest() {
    options_.node_name = "node-a";
    options_.reporting_instance = "efawatch-x1";
  }
  std::unique_ptr<KubeSignals> Make() {
    return std::make_unique<KubeSignals>(
        options_, [this] { return observation_; },
        [this](const std::stop_token&, const std::string& method, const std::string& path,
               const std::string& ct, const Json& body) -> absl::StatusOr<kube::Response> {
          Request r;
          r.method = method;
          r.path = path;
          r.content_type = ct;
          r.body = body;
          requests_.push_back(std::move(r));
          return kube::Response{answer_, Json::object()};
        },
        clock_);
  }
  std::vector<Request> Posts() const {
    std::vector<Request> out;
    for (const auto& r : requests_) {
      if (r.method == "POST") out.push_back(r);
    }
    return out;
  }
  std::vector<Request> Patches() const {
    std::vector<Request> out;
    for (const auto& r : requests_) {
      if (r.method == "PATCH") out.push_back(r);
    }
    return out;
  }
  static PodProblem Problem(const std::string& pod,
                            common::FindingKind kind = common::FindingKind::kTcpFallback) {
    return {"train",
            pod,
            "uid-" + pod,
            "main",
            kind,
            "inter-node traffic uses NCCL's Socket transport (TCP) (0.log:12: via NET/Socket/0)"};
  }

  KubeSignalsOptions options_;
  common::FakeClock clock_;
  Observation observation_;
  std::vector<Request> requests_;
  long answer_ = 201;
};

TEST_F(KubeSignalsTest, OneEventPerProblemOnItsPod) {
  auto s = Make();
  observation_.pods = {Problem("worker-0")};
  for (int i = 0; i < 5; ++i) {
    s->SyncOnce();
    clock_.Advance(5s);
  }
  ASSERT_EQ(Posts().size(), 1u);
  const std::vector<Request> posts = Posts();
  const Request& r = posts[0];
  EXPECT_EQ(r.path, "/apis/events.k8s.io/v1/namespaces/train/events");
  EXPECT_EQ(r.body["type"], "Warning");
  EXPECT_EQ(r.body["reason"], "NcclTcpFallback");
  EXPECT_EQ(r.body["reportingController"], "efawatch.io/efawatchd");
  EXPECT_EQ(r.body["reportingInstance"], "efawatch-x1");
  EXPECT_EQ(r.body["regarding"]["kind"], "Pod");
  EXPECT_EQ(r.body["regarding"]["name"], "worker-0");
  EXPECT_EQ(r.body["regarding"]["uid"], "uid-worker-0");
  EXPECT_EQ(r.body["regarding"]["fieldPath"], "spec.containers{main}");
  EXPECT_THAT(r.body["note"].get<std::string>(),
              HasSubstr("NCCL inter-node traffic over TCP sockets: container main: inter-node "
                        "traffic uses NCCL's Socket transport (TCP) (0.log:12"));
  EXPECT_EQ(r.body["eventTime"], "2026-01-01T00:00:00.000000Z");
  EXPECT_THAT(r.body["metadata"]["name"].get<std::string>(), ::testing::StartsWith("worker-0."));

  // A second problem on the same pod is news; the first is not.
  observation_.pods.push_back(Problem("worker-0", common::FindingKind::kNetPluginMissing));
  s->SyncOnce();
  ASSERT_EQ(Posts().size(), 2u);
  EXPECT_EQ(Posts()[1].body["reason"], "NcclNetPluginMissing");
  EXPECT_NE(Posts()[1].body["metadata"]["name"], Posts()[0].body["metadata"]["name"]);
}

TEST_F(KubeSignalsTest, SameNameForTheSameProblemSoARestartedAgentGetsAlreadyExists) {
  KubeSignalsOptions o;
  const auto t = std::chrono::system_clock::now();
  EXPECT_EQ(EventFor(Problem("w"), o, t)["metadata"]["name"],
            EventFor(Problem("w"), o, t + 1h)["metadata"]["name"]);
  answer_ = 409;
  auto s = Make();
  observation_.pods = {Problem("worker-0")};
  s->SyncOnce();
  s->SyncOnce();
  EXPECT_EQ(Posts().size(), 1u) << "AlreadyExists means posted";
}

TEST_F(KubeSignalsTest, RateLimitDefersEventsWithoutDroppingThem) {
  auto s = Make();
  for (int i = 0; i < 15; ++i) observation_.pods.push_back(Problem("w" + std::to_string(i)));
  s->SyncOnce();
  EXPECT_EQ(Posts().size(), 10u);  // the burst
  clock_.Advance(options_.event_refill * 2);
  s->SyncOnce();
  EXPECT_EQ(Posts().size(), 12u);
  clock_.Advance(options_.event_refill * 10);
  s->SyncOnce();
  EXPECT_EQ(Posts().size(), 15u);
  s->SyncOnce();
  EXPECT_EQ(Posts().size(), 15u);
}

TEST_F(KubeSignalsTest, ARefusedSignalIsBackedOffNotRetriedEveryRound) {
  answer_ = 403;
  auto s = Make();
  observation_.pods = {Problem("worker-0"), Problem("worker-1")};
  observation_.conditions = {{"EfaHealthy", true, "EfaDevicesHealthy", "fine"}};
  s->SyncOnce();
  // One Event tried (the rest of the round stops at the refusal), one patch tried.
  EXPECT_EQ(Posts().size(), 1u);
  EXPECT_EQ(Patches().size(), 1u);
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(10s);
    s->SyncOnce();
  }
  EXPECT_EQ(requests_.size(), 2u);
  answer_ = 201;
  clock_.Advance(options_.refused_backoff);
  s->SyncOnce();
  EXPECT_EQ(Posts().size(), 3u);
  EXPECT_EQ(Patches().size(), 2u);
}

TEST_F(KubeSignalsTest, ClearedProblemIsNewsWhenItReturns) {
  auto s = Make();
  observation_.pods = {Problem("worker-0")};
  s->SyncOnce();
  observation_.pods.clear();
  s->SyncOnce();
  observation_.pods = {Problem("worker-0")};
  s->SyncOnce();
  EXPECT_EQ(Posts().size(), 2u);
}

TEST_F(KubeSignalsTest, ConditionsOnChangeAndHeartbeat) {
  auto s = Make();
  observation_.conditions = {{"EfaHealthy", true, "EfaDevicesHealthy", "no fault"}};
  s->SyncOnce();
  ASSERT_EQ(Patches().size(), 1u);
  EXPECT_EQ(Patches()[0].path, "/api/v1/nodes/node-a/status");
  EXPECT_EQ(Patches()[0].content_type, "application/strategic-merge-patch+json");
  const Json c0 = Patches()[0].body["status"]["conditions"][0];
  EXPECT_EQ(c0["type"], "EfaHealthy");
  EXPECT_EQ(c0["status"], "True");
  EXPECT_EQ(c0["lastTransitionTime"], "2026-01-01T00:00:00Z");

  clock_.Advance(10s);
  s->SyncOnce();
  EXPECT_EQ(Patches().size(), 1u) << "unchanged: no patch before the heartbeat";

  observation_.conditions[0] = {"EfaHealthy", false, "EfaAdminQueueStuck", "rdmap0s31: stuck"};
  s->SyncOnce();
  ASSERT_EQ(Patches().size(), 2u);
  const Json c1 = Patches()[1].body["status"]["conditions"][0];
  EXPECT_EQ(c1["status"], "False");
  EXPECT_EQ(c1["reason"], "EfaAdminQueueStuck");
  EXPECT_EQ(c1["lastTransitionTime"], "2026-01-01T00:00:10Z");

  clock_.Advance(options_.heartbeat);
  s->SyncOnce();
  ASSERT_EQ(Patches().size(), 3u) << "the heartbeat re-sends an unchanged condition";
  const Json c2 = Patches()[2].body["status"]["conditions"][0];
  EXPECT_EQ(c2["lastTransitionTime"], "2026-01-01T00:00:10Z") << "no transition: time kept";
  EXPECT_NE(c2["lastHeartbeatTime"], c1["lastHeartbeatTime"]);
}

TEST_F(KubeSignalsTest, FailedPatchIsRetriedNextRound) {
  answer_ = 500;
  auto s = Make();
  observation_.conditions = {{"FabricReachable", true, "MeshPeersAnswer", "ok"}};
  s->SyncOnce();
  answer_ = 200;
  s->SyncOnce();
  s->SyncOnce();
  EXPECT_EQ(Patches().size(), 2u);
}

TEST_F(KubeSignalsTest, LongOrInvalidTextStaysWithinTheApiLimits) {
  PodProblem p = Problem("w");
  p.message = "\xff\xfe" + std::string(3000, 'x');
  const Json e = EventFor(p, options_, std::chrono::system_clock::now());
  EXPECT_LE(e["note"].get<std::string>().size(), 1024u);
  EXPECT_NO_THROW((void)e.dump());
  PodProblem longname = Problem(std::string(300, 'a'));
  EXPECT_LE(EventFor(longname, options_, {})["metadata"]["name"].get<std::string>().size(), 253u);
}

}  // namespace
}  // namespace efawatch::signals

namespace efawatch::signals {
namespace {

TEST(AllocatableEfaTest, ReadsTheDevicePluginsCountAndNothingElse) {
  auto node = [](nlohmann::json allocatable) {
    return nlohmann::json{{"status", {{"allocatable", std::move(allocatable)}}}};
  };
  EXPECT_EQ(AllocatableEfa(node({{"vpc.amazonaws.com/efa", "32"}})), 32u);
  EXPECT_EQ(AllocatableEfa(node({{"vpc.amazonaws.com/efa", "0"}})), 0u);
  EXPECT_EQ(AllocatableEfa(node({{"nvidia.com/gpu", "4"}})), std::nullopt)
      << "no EFA device plugin: unknown, not 0";
  EXPECT_EQ(AllocatableEfa(node({{"vpc.amazonaws.com/efa", "1k"}})), std::nullopt);
  EXPECT_EQ(AllocatableEfa(node({{"vpc.amazonaws.com/efa", 4}})), std::nullopt)
      << "a quantity is a string";
  EXPECT_EQ(AllocatableEfa(nlohmann::json::object()), std::nullopt);
  EXPECT_EQ(AllocatableEfa(nlohmann::json()), std::nullopt);
}

TEST(KubeSignalsNodeTest, ReadsItsOwnNodeEveryRefreshAndKeepsTheLastCountOnFailure) {
  common::FakeClock clock;
  KubeSignalsOptions o;
  o.node_name = "node-a";
  o.node_refresh = std::chrono::seconds(60);
  std::vector<std::string> selectors;
  absl::StatusOr<std::vector<nlohmann::json>> answer = std::vector<nlohmann::json>{
      {{"status", {{"allocatable", {{"vpc.amazonaws.com/efa", "1"}}}}}}};
  o.list = [&](const std::stop_token&, const std::string& path,
               const std::string& fields) -> absl::StatusOr<std::vector<nlohmann::json>> {
    EXPECT_EQ(path, "/api/v1/nodes");
    selectors.push_back(fields);
    return answer;
  };
  KubeSignals s(
      o, [] { return Observation{}; },
      [](const std::stop_token&, const std::string&, const std::string&, const std::string&,
         const nlohmann::json&) -> absl::StatusOr<kube::Response> {
        return kube::Response{200, nlohmann::json::object()};
      },
      clock);
  EXPECT_EQ(s.AdvertisedEfa(), std::nullopt) << "unknown before the first read";
  s.SyncOnce();
  EXPECT_EQ(s.AdvertisedEfa(), 1u);
  EXPECT_EQ(selectors, std::vector<std::string>{"metadata.name=node-a"});
  s.SyncOnce();
  EXPECT_EQ(selectors.size(), 1u) << "not again before node_refresh";
  answer = absl::UnavailableError("GET /api/v1/nodes: HTTP 403: forbidden");
  clock.Advance(std::chrono::seconds(61));
  s.SyncOnce();
  EXPECT_EQ(selectors.size(), 2u);
  EXPECT_EQ(s.AdvertisedEfa(), 1u) << "a failed read keeps the last count";
  answer = std::vector<nlohmann::json>{};
  clock.Advance(std::chrono::seconds(61));
  s.SyncOnce();
  EXPECT_EQ(s.AdvertisedEfa(), std::nullopt) << "no such node: unknown";
}

}  // namespace
}  // namespace efawatch::signals
