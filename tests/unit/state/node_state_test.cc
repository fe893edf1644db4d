// SPDX-License-Identifier: Apache-2.0
// The node-state board and the rules that read it, on hand-built states: no module runs.
#include "daemon/state/node_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "daemon/state/node_rules.h"

namespace efawatch::state {
namespace {

using ::testing::ElementsAre;

logs::ContainerVerdict Container(const std::string& pod, uint64_t nccl_lines, bool gone,
                                 int processes) {
  logs::ContainerVerdict v;
  v.source.namespace_name = "train";
  v.source.pod = pod;
  v.source.uid = pod + "-uid";
  v.source.container = "main";
  v.nccl_lines = nccl_lines;
  v.gone = gone;
  v.nccl.processes = processes;
  return v;
}

NodeState WithPods(std::vector<logs::ContainerVerdict> pods) {
  NodeState s;
  s.pods = std::make_shared<const std::vector<logs::ContainerVerdict>>(std::move(pods));
  return s;
}

TEST(NodeStateBoardTest, EachPublishReplacesItsPartAndKeepsTheOthers) {
  NodeStateBoard board;
  const auto empty = board.Snapshot();
  board.PublishEfa(4);
  board.PublishResponder({.provider = "efa"});
  board.PublishPods(std::make_shared<const std::vector<logs::ContainerVerdict>>(
      std::vector{Container("w-0", 10, false, 8)}));
  board.PublishMesh({{"node-b", "10.0.0.2:9090", true}});
  const auto now = board.Snapshot();
  EXPECT_EQ(now->efa_devices, 4u);
  EXPECT_EQ(now->responder.provider, "efa");
  ASSERT_EQ(now->pods->size(), 1u);
  EXPECT_TRUE(now->mesh_running);
  // A snapshot taken before is a value: later publications do not reach it.
  EXPECT_EQ(empty->efa_devices, 0u);
  EXPECT_TRUE(empty->pods->empty());
  EXPECT_FALSE(empty->mesh_running);
  board.PublishEfa(3);
  EXPECT_EQ(now->efa_devices, 4u);
  EXPECT_EQ(board.Snapshot()->efa_devices, 3u);
  EXPECT_EQ(board.Snapshot()->pods, now->pods) << "the pods' list is shared, not copied";
}

TEST(NodeRulesTest, NcclIsActiveOnlyInAContainerThatIsNotGone) {
  EXPECT_FALSE(NcclActive(WithPods({})));
  EXPECT_FALSE(NcclActive(WithPods({Container("a", 5, true, 8), Container("b", 0, false, 0)})));
  EXPECT_TRUE(NcclActive(WithPods({Container("a", 5, true, 8), Container("b", 5, false, 2)})));
}

TEST(NodeRulesTest, NodeHealthListsLiveNcclContainersWithTheirWorkload) {
  NodeState s = WithPods({Container("w-0", 10, false, 8), Container("gone", 10, true, 8),
                          Container("quiet", 0, false, 0)});
  auto table = std::make_shared<workloads::WorkloadTable>();
  (*table)[{"train", "w-0"}] = {"RayCluster", "rc"};
  s.workloads = table;
  s.efa_devices = 32;
  s.responder.provider = "efa";
  inspector::CommSummary comm;
  comm.pod = "w-0";
  comm.comm_id = "0x5a";
  comm.stale = true;
  s.inspector = std::make_shared<const std::vector<inspector::CommSummary>>(std::vector{comm});
  common::Finding f;
  f.kind = "tcp_fallback";
  const common::NodeHealth h = NodeHealthOf(
      s, {.node = "n1", .version = "0.1.0", .revision = "abc", .start_time = {}}, {}, {f});
  EXPECT_EQ(h.node, "n1");
  EXPECT_EQ(h.agent_revision, "abc");
  EXPECT_EQ(h.efa_devices, 32u);
  EXPECT_EQ(h.fabric_provider, "efa");
  ASSERT_EQ(h.findings.size(), 1u);
  ASSERT_EQ(h.pods.size(), 1u);
  EXPECT_EQ(h.pods[0].pod, "w-0");
  EXPECT_EQ(h.pods[0].workload_kind, "RayCluster");
  EXPECT_EQ(h.pods[0].workload, "rc");
  EXPECT_EQ(h.pods[0].source, "container_log");
  ASSERT_EQ(h.inspector.size(), 1u) << "the Inspector's communicators, as last published";
  EXPECT_EQ(h.inspector[0], comm);
}

TEST(NodeRulesTest, CollectivePeersAreTheFirstMeshPeersThatAnswered) {
  NodeState s;
  s.mesh_peers = {{"a", "a:1", true}, {"b", "b:1", false}, {"c", "c:1", true}, {"d", "d:1", true}};
  EXPECT_THAT(ReachableMeshPeers(s, 2), ElementsAre("a:1", "c:1"));
  EXPECT_THAT(ReachableMeshPeers(s, 10), ElementsAre("a:1", "c:1", "d:1"));
  EXPECT_TRUE(ReachableMeshPeers(NodeState{}, 3).empty());
}

TEST(NodeRulesTest, SelfAddressFromThePodIpElseTheListenAddress) {
  EXPECT_EQ(SelfAddressOf("10.0.0.5", "0.0.0.0:9090", 9090).advertised, "10.0.0.5:9090");
  EXPECT_EQ(SelfAddressOf("10.0.0.5", "0.0.0.0:9090", 9090).dialable, "10.0.0.5:9090");
  EXPECT_EQ(SelfAddressOf("fd00::5", "[::]:9090", 9090).advertised, "[fd00::5]:9090");
  EXPECT_EQ(SelfAddressOf("", "0.0.0.0:9090", 9090).advertised, "");
  EXPECT_EQ(SelfAddressOf("", "0.0.0.0:9090", 9090).dialable, "127.0.0.1:9090");
  EXPECT_EQ(SelfAddressOf("", ":0", 4242).dialable, "127.0.0.1:4242");
  EXPECT_EQ(SelfAddressOf("", "[::]:0", 4242).dialable, "[::1]:4242");
  EXPECT_EQ(SelfAddressOf("", "127.0.0.1:0", 4242).dialable, "127.0.0.1:4242");
}

}  // namespace
}  // namespace efawatch::state
