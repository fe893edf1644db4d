// SPDX-License-Identifier: Apache-2.0
// The mesh scheduler on real tcp endpoints over loopback: real responders, a real Pinger, and a
// PeerLookup of the test's own (the agent's is gRPC, tested in the netns test).

#include "probes/mesh/mesh.h"

#include <gtest/gtest.h>

#include <map>

#include "probes/fabric/responder.h"
#include "probes/mesh/mesh_collector.h"

namespace efawatch::mesh {
namespace {

using namespace std::chrono_literals;

fabric::EndpointOptions Loopback() {
  fabric::EndpointOptions o;
  o.providers = {"tcp"};
  o.interface = "lo";
  return o;
}

class TableLookup final : public PeerLookup {
 public:
  absl::StatusOr<PeerIdentity> Lookup(const std::string& agent,
                                      std::chrono::milliseconds) override {
    ++calls[agent];
    auto it = table.find(agent);
    if (it == table.end()) return absl::UnavailableError("connection refused: " + agent);
    return it->second;
  }
  std::map<std::string, PeerIdentity> table;
  std::map<std::string, int> calls;
};

// A source whose list the test changes between rounds.
class MutableSource final : public PeerSource {
 public:
  explicit MutableSource(std::vector<Peer>* peers) : peers_(peers) {}
  std::string_view Name() const override { return "static"; }
  absl::StatusOr<std::vector<Peer>> List(const std::stop_token&) override { return *peers_; }

 private:
  std::vector<Peer>* peers_;
};

class MeshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      fabric::ResponderOptions r;
      r.endpoint = Loopback();
      r.rx_depth = 4;
      r.max_message_bytes = 4096;
      auto resp = fabric::Responder::Create(r);
      if (!resp.ok()) GTEST_SKIP() << "no tcp provider on loopback: " << resp.status();
      const std::string node = "node-" + std::to_string(i);
      const std::string agent = "127.0.0.1:" + std::to_string(20000 + i);
      lookup_.table[agent] = {(*resp)->address(), node};
      peers_.push_back({node, agent, ""});
      responders_.push_back(*std::move(resp));
    }
  }

  std::unique_ptr<Mesh> Make(std::vector<common::Finding>* findings, size_t fanout = 8) {
    MeshOptions o;
    o.self_node = "self";
    o.selection.fanout = fanout;
    o.interval = 2000ms;
    o.discovery_interval = 0ms;  // every round: the test edits the list
    o.count = 5;
    o.message_timeout = 200ms;
    o.endpoint = Loopback();
    auto m = Mesh::Create(
        o, std::make_unique<MutableSource>(&peers_), lookup_,
        [findings](std::vector<common::Finding> f) { *findings = std::move(f); },
        common::SystemClock::Get());
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *std::move(m) : nullptr;
  }

  TableLookup lookup_;
  std::vector<Peer> peers_;
  std::vector<std::unique_ptr<fabric::Responder>> responders_;
};

const PeerState* Find(const MeshSnapshot& s, const std::string& node) {
  for (const auto& p : s.peers) {
    if (p.node == node) return &p;
  }
  return nullptr;
}

TEST_F(MeshTest, HealthyPeersAreReachedAndTimed) {
  std::vector<common::Finding> findings;
  auto mesh = Make(&findings);
  ASSERT_NE(mesh, nullptr);
  mesh->RunOnce({});
  mesh->RunOnce({});
  const MeshSnapshot s = mesh->Snapshot();
  EXPECT_EQ(s.expected, 3u);
  EXPECT_EQ(s.reachable, 3u);
  EXPECT_EQ(s.rounds, 2u);
  EXPECT_FALSE(s.self_suspect);
  EXPECT_TRUE(findings.empty());
  for (const auto& node : {"node-0", "node-1", "node-2"}) {
    const PeerState* p = Find(s, node);
    ASSERT_NE(p, nullptr) << node;
    EXPECT_TRUE(p->up);
    EXPECT_EQ(p->sent, 10u);
    EXPECT_EQ(p->lost, 0u);
    EXPECT_EQ(p->rtt_count, 10u);
    EXPECT_EQ(p->rtt_buckets.back(), 10u);  // every RTT below the 2 s bound
  }
  // The fabric address is asked once and reused while the peer answers.
  for (const auto& [agent, n] : lookup_.calls) EXPECT_EQ(n, 1) << agent;
}

TEST_F(MeshTest, DeadPeerIsLossAndAskedAgainEveryRound) {
  std::vector<common::Finding> findings;
  auto mesh = Make(&findings);
  ASSERT_NE(mesh, nullptr);
  mesh->RunOnce({});
  responders_[1]->Stop();  // node-1's agent dies: its address stays known, nobody answers
  mesh->RunOnce({});
  lookup_.table.erase(peers_[1].agent);  // and its gRPC edge is gone too
  mesh->RunOnce({});
  const MeshSnapshot s = mesh->Snapshot();
  EXPECT_EQ(s.reachable, 2u);
  EXPECT_FALSE(s.self_suspect) << "one dead peer of three is the peer's fault";
  const PeerState* dead = Find(s, "node-1");
  ASSERT_NE(dead, nullptr);
  EXPECT_FALSE(dead->up);
  EXPECT_EQ(dead->sent, 15u);
  EXPECT_EQ(dead->lost, 10u);
  EXPECT_FALSE(dead->last_error.empty());
  EXPECT_EQ(lookup_.calls[peers_[1].agent], 2) << "no answer: the address is looked up again";
}

TEST_F(MeshTest, MostPeersFailingRaisesSelfSuspicionAndItClears) {
  std::vector<common::Finding> findings;
  auto mesh = Make(&findings);
  ASSERT_NE(mesh, nullptr);
  auto saved = lookup_.table;
  lookup_.table.clear();  // this node can reach no one
  mesh->RunOnce({});
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].kind, "mesh_self_suspect");
  EXPECT_EQ(findings[0].severity, common::Severity::kCritical);
  EXPECT_EQ(findings[0].subject, "self");
  EXPECT_NE(findings[0].evidence.text.find("node-0, node-1, node-2"), std::string::npos);
  EXPECT_TRUE(mesh->Snapshot().self_suspect);
  lookup_.table = saved;
  mesh->RunOnce({});
  EXPECT_TRUE(findings.empty());
  EXPECT_FALSE(mesh->Snapshot().self_suspect);
}

TEST_F(MeshTest, PeersThatLeaveTheSelectionLoseTheirSeries) {
  std::vector<common::Finding> findings;
  auto mesh = Make(&findings);
  ASSERT_NE(mesh, nullptr);
  mesh->RunOnce({});
  ASSERT_EQ(mesh->Snapshot().peers.size(), 3u);
  peers_.pop_back();
  mesh->RunOnce({});
  const MeshSnapshot s = mesh->Snapshot();
  EXPECT_EQ(s.peers.size(), 2u);
  EXPECT_EQ(Find(s, "node-2"), nullptr);
}

TEST_F(MeshTest, ThisAgentListedByAddressIsDroppedOnceItKnowsItself) {
  std::vector<common::Finding> findings;
  auto mesh = Make(&findings);
  ASSERT_NE(mesh, nullptr);
  // DNS lists every agent by address, this one included; it learns which is itself when the
  // lookup answers with its own node name.
  for (auto& p : peers_) p.node.clear();
  lookup_.table[peers_[0].agent].node = "self";
  // It learns so when it first looks that agent up, in the round that reaches it: a slow round
  // (ThreadSanitizer on a loaded machine) can spend its budget on the others first, so up to
  // five rounds, not two.
  for (int round = 0; round < 5 && mesh->Snapshot().expected != 2; ++round) mesh->RunOnce({});
  const MeshSnapshot s = mesh->Snapshot();
  EXPECT_EQ(s.expected, 2u);
  EXPECT_EQ(Find(s, "self"), nullptr);
  EXPECT_NE(Find(s, "node-1"), nullptr);
}

TEST_F(MeshTest, CollectorRendersBoundedSeries) {
  std::vector<common::Finding> findings;
  auto mesh = Make(&findings);
  ASSERT_NE(mesh, nullptr);
  mesh->RunOnce({});
  struct Sink final : common::MetricSink {
    void Add(metrics::Metric metric, const common::Labels& l, double v) override {
      Put(std::string(metric.name()), l, v);
    }
    void Put(std::string key, const common::Labels& l, double v) {
      for (const auto& [k, val] : l) key += "," + k + "=" + val;
      values[key] = v;
    }
    void AddHistogram(metrics::Metric metric, const common::Labels& l,
                      const common::HistogramSample& h) override {
      Put(std::string(metric.name()) + "_count", l, static_cast<double>(h.count));
      EXPECT_EQ(h.bounds.size(), h.cumulative.size());
      EXPECT_LE(h.cumulative.back(), h.count);
    }
    std::map<std::string, double> values;
  } sink;
  MeshCollector collector(*mesh);
  ASSERT_TRUE(collector.Collect(std::chrono::steady_clock::now() + 1s, sink).ok());
  EXPECT_EQ(sink.values["efawatch_mesh_peers_expected"], 3);
  EXPECT_EQ(sink.values["efawatch_mesh_peers_reachable"], 3);
  EXPECT_EQ(sink.values["efawatch_mesh_peer_up,peer_node=node-2"], 1);
  EXPECT_EQ(sink.values["efawatch_mesh_peer_sent_total,peer_node=node-0"], 5);
  EXPECT_EQ(sink.values["efawatch_mesh_peer_rtt_seconds_count,peer_node=node-1"], 5);
  EXPECT_EQ(sink.values["efawatch_mesh_peers_discovered,source=static"], 3);
}

}  // namespace
}  // namespace efawatch::mesh
