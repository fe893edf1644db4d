// SPDX-License-Identifier: Apache-2.0
// What the Kubernetes signals say, from hand-built node states and findings.
#include "daemon/signals/observe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace efawatch::signals {
namespace {

logs::ContainerVerdict Pod(const std::string& pod, bool tcp, bool deliberate) {
  logs::ContainerVerdict v;
  v.source.namespace_name = "team-a";
  v.source.pod = pod;
  v.source.uid = "uid-" + pod;
  v.source.container = "main";
  v.source.format = logs::Format::kCri;  // a container log: its pod is known
  v.nccl_lines = 12;
  v.nccl.tcp_fallback = tcp;
  v.nccl.tcp_deliberate = deliberate;
  return v;
}

state::NodeState State(std::vector<logs::ContainerVerdict> pods, unsigned efa, bool mesh) {
  state::NodeState s;
  s.pods = std::make_shared<const std::vector<logs::ContainerVerdict>>(std::move(pods));
  s.efa_devices = efa;
  s.mesh_running = mesh;
  return s;
}

common::Finding Critical(common::FindingKind kind, const std::string& subject) {
  common::Finding f;
  f.kind = std::string(common::FindingKindName(kind));
  f.severity = common::Severity::kCritical;
  f.subject = subject;
  f.message = "m";
  return f;
}

TEST(ObserveTest, AnEventForAFallbackButNotForATcpNetTheJobChose) {
  auto pods = std::vector{Pod("fell-back", true, false), Pod("chose-tcp", true, true),
                          Pod("fine", false, false)};
  common::Finding f = Critical(common::FindingKind::kTcpFallback, "team-a/fell-back/main");
  f.evidence.source = "0.log";
  f.evidence.line = 7;
  f.evidence.text = "NET/Socket";
  const Observation o = Observe(State(pods, 0, false), {f});
  ASSERT_EQ(o.pods.size(), 1u);
  EXPECT_EQ(o.pods[0].pod, "fell-back");
  EXPECT_EQ(o.pods[0].uid, "uid-fell-back");
  EXPECT_EQ(o.pods[0].message, "m (0.log:7: NET/Socket)");
  EXPECT_TRUE(o.conditions.empty()) << "no EFA, no mesh: nothing this node can judge";
}

TEST(ObserveTest, NoEventForAGonePodOrOneWithoutUid) {
  auto gone = Pod("gone", true, false);
  gone.gone = true;
  auto volume = Pod("volume", true, false);
  volume.source.uid.clear();
  EXPECT_TRUE(Observe(State({gone, volume}, 0, false), {}).pods.empty());
}

TEST(ObserveTest, EfaHealthyWhereEfaIsPresentOrAFaultSaysItShouldBe) {
  Observation o = Observe(State({}, 4, false), {});
  ASSERT_EQ(o.conditions.size(), 2u) << "EfaHealthy, then FabricReady";
  EXPECT_EQ(o.conditions[0].type, "EfaHealthy");
  EXPECT_TRUE(o.conditions[0].ok);
  o = Observe(State({}, 0, false), {Critical(common::FindingKind::kEfaDevicesMissing, "node")});
  ASSERT_EQ(o.conditions.size(), 1u);
  EXPECT_FALSE(o.conditions[0].ok);
  EXPECT_EQ(o.conditions[0].reason, "EfaDevicesMissing");
  // A warning is not a fault.
  common::Finding warning = Critical(common::FindingKind::kEfaDevicesMissing, "node");
  warning.severity = common::Severity::kWarning;
  EXPECT_TRUE(Observe(State({}, 0, false), {warning}).conditions.empty());
}

TEST(ObserveTest, FabricReachableOnlyWhereAMeshRuns) {
  EXPECT_TRUE(Observe(State({}, 0, false), {}).conditions.empty());
  const Observation o =
      Observe(State({}, 0, true), {Critical(common::FindingKind::kMeshSelfSuspect, "node")});
  ASSERT_EQ(o.conditions.size(), 1u);
  EXPECT_EQ(o.conditions[0].type, "FabricReachable");
  EXPECT_FALSE(o.conditions[0].ok);
  EXPECT_EQ(o.conditions[0].reason, "MeshSelfSuspect");
}

TEST(ObserveTest, FabricReadyWhereEfaIsPresentOrExpected) {
  state::NodeState s = State({}, 0, false);
  EXPECT_TRUE(Observe(s, {}).conditions.empty()) << "a node without EFA has nothing to gate on";
  s.efa_expected = 4;  // a p5 whose devices did not come up
  Observation o = Observe(s, {});
  ASSERT_EQ(o.conditions.size(), 1u);
  EXPECT_EQ(o.conditions[0].type, "FabricReady");
  EXPECT_EQ(o.conditions[0].reason, "DoctorPending") << "judged in order: the doctor first";
  s.doctor = std::vector<doctor::Check>{};
  o = Observe(s, {});
  ASSERT_EQ(o.conditions.size(), 1u);
  EXPECT_EQ(o.conditions[0].reason, "NoEfaDevices");
  s.efa_devices = 4;
  s.self_ping = {state::SelfPingState::Outcome::kAnswered, "10 of 10 pongs over efa"};
  o = Observe(s, {});
  ASSERT_EQ(o.conditions.size(), 2u);
  EXPECT_EQ(o.conditions[1].type, "FabricReady");
  EXPECT_TRUE(o.conditions[1].ok) << o.conditions[1].reason;
  s.self_ping = {state::SelfPingState::Outcome::kFailed, "0 of 10 pongs"};
  o = Observe(s, {});
  EXPECT_FALSE(o.conditions[1].ok);
  EXPECT_EQ(o.conditions[1].reason, "SelfPingFailed");
}

TEST(ObserveTest, ReasonsAreCamelCase) {
  EXPECT_EQ(CamelCase("efa_admin_queue_stuck"), "EfaAdminQueueStuck");
  EXPECT_EQ(CamelCase(""), "");
}

}  // namespace
}  // namespace efawatch::signals
