// SPDX-License-Identifier: Apache-2.0
#include "probes/mesh/selection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>

namespace efawatch::mesh {
namespace {

std::vector<Peer> Fleet(size_t n, const std::string& prefix = "ip-10-0-") {
  std::vector<Peer> out;
  for (size_t i = 0; i < n; ++i) {
    Peer p;
    p.node = prefix + std::to_string(i);
    p.agent = "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ":9478";
    out.push_back(p);
  }
  return out;
}

using Assignment = std::map<std::string, std::set<std::string>>;  // pinger -> pinged

Assignment AssignAll(const std::vector<Peer>& fleet, const SelectionOptions& o) {
  PeerSelector sel(fleet, o);
  Assignment a;
  for (const Peer& p : fleet) {
    for (const Peer& q : sel.Select(p.Key(), p.group)) a[p.node].insert(q.node);
  }
  return a;
}

TEST(StableHashTest, IsDeterministicAndSeedDependent) {
  EXPECT_EQ(StableHash(1, "node-a"), StableHash(1, "node-a"));
  EXPECT_NE(StableHash(1, "node-a"), StableHash(2, "node-a"));
  EXPECT_NE(StableHash(1, "node-a"), StableHash(1, "node-b"));
  // A fixed value: every agent, on every build, must place a key at the same ring position.
  EXPECT_EQ(StableHash(1, ""), StableHash(1, std::string_view()));
}

TEST(PeerSelectorTest, SmallFleetIsACompleteGraphWithoutSelf) {
  const auto fleet = Fleet(5);
  PeerSelector sel(fleet, {.fanout = 8, .max_group = 32});
  const auto peers = sel.Select("ip-10-0-2", "");
  ASSERT_EQ(peers.size(), 4u);
  for (const Peer& p : peers) EXPECT_NE(p.node, "ip-10-0-2");
}

TEST(PeerSelectorTest, DuplicatesInTheListCountOnce) {
  auto fleet = Fleet(3);
  fleet.push_back(fleet[0]);
  PeerSelector sel(fleet, {});
  EXPECT_EQ(sel.size(), 3u);
  EXPECT_EQ(sel.Select("ip-10-0-1", "").size(), 2u);
}

TEST(PeerSelectorTest, SelfOutsideTheListStillGetsKPeers) {
  const auto fleet = Fleet(100);
  PeerSelector sel(fleet, {.fanout = 8, .max_group = 0});
  const auto peers = sel.Select("not-listed", "");
  EXPECT_EQ(peers.size(), 8u);
  std::set<std::string> distinct;
  for (const Peer& p : peers) distinct.insert(p.node);
  EXPECT_EQ(distinct.size(), 8u);
}

TEST(PeerSelectorTest, OddFanoutIsHonoured) {
  PeerSelector sel(Fleet(50), {.fanout = 5, .max_group = 0});
  EXPECT_EQ(sel.Select("ip-10-0-7", "").size(), 5u);
}

TEST(PeerSelectorTest, SameInputSameChoiceWhateverTheListOrder) {
  auto fleet = Fleet(200);
  const auto a = PeerSelector(fleet, {}).Select("ip-10-0-42", "");
  std::shuffle(fleet.begin(), fleet.end(), std::mt19937(7));
  const auto b = PeerSelector(fleet, {}).Select("ip-10-0-42", "");
  EXPECT_EQ(a, b);
}

TEST(PeerSelectorTest, TopologyGroupIsCompleteOnTopOfTheFanout) {
  auto fleet = Fleet(100);
  for (size_t i = 0; i < 10; ++i) fleet[i].group = "pg-1";
  PeerSelector sel(fleet, {.fanout = 4, .max_group = 32});
  const auto peers = sel.Select("ip-10-0-3", "pg-1");
  std::set<std::string> names;
  for (const Peer& p : peers) names.insert(p.node);
  for (size_t i = 0; i < 10; ++i) {
    if (i != 3) {
      EXPECT_TRUE(names.contains("ip-10-0-" + std::to_string(i))) << i;
    }
  }
  EXPECT_GE(peers.size(), 9u);
  EXPECT_LE(peers.size(), 9u + 4u);
}

TEST(PeerSelectorTest, LargeGroupIsCapped) {
  auto fleet = Fleet(300);
  for (auto& p : fleet) p.group = "one-big-group";
  PeerSelector sel(fleet, {.fanout = 8, .max_group = 16});
  EXPECT_EQ(sel.Select("ip-10-0-0", "one-big-group").size(), 8u + 16u);
}

// The simulation: 10,000 nodes, k = 8. Fan-out <= k, every node has >= k/2 pingers, and
// removing 1% of the nodes changes <= 5% of the assignments.
TEST(PeerSelectorTest, TenThousandNodeSimulation) {
  constexpr size_t kNodes = 10000;
  const SelectionOptions o{.fanout = 8, .max_group = 0};
  const auto fleet = Fleet(kNodes);
  const Assignment before = AssignAll(fleet, o);

  std::map<std::string, size_t> in_degree;
  size_t max_out = 0, pairs = 0;
  for (const auto& [pinger, pinged] : before) {
    max_out = std::max(max_out, pinged.size());
    pairs += pinged.size();
    for (const auto& q : pinged) ++in_degree[q];
  }
  size_t min_in = kNodes, max_in = 0;
  for (const Peer& p : fleet) {
    min_in = std::min(min_in, in_degree[p.node]);
    max_in = std::max(max_in, in_degree[p.node]);
  }
  EXPECT_LE(max_out, o.fanout);
  EXPECT_GE(min_in, o.fanout / 2);

  // Remove 1%: every 100th node.
  std::vector<Peer> survivors;
  std::set<std::string> removed;
  for (size_t i = 0; i < fleet.size(); ++i) {
    if (i % 100 == 0) {
      removed.insert(fleet[i].node);
    } else {
      survivors.push_back(fleet[i]);
    }
  }
  const Assignment after = AssignAll(survivors, o);
  // Changed assignments: pairs that exist in one assignment and not the other (a removed node's
  // own pairs and the pairs to it count as changed).
  size_t changed = 0;
  for (const auto& [pinger, pinged] : before) {
    auto it = after.find(pinger);
    for (const auto& q : pinged) {
      if (it == after.end() || !it->second.contains(q)) ++changed;
    }
  }
  for (const auto& [pinger, pinged] : after) {
    const auto& old = before.at(pinger);
    for (const auto& q : pinged) changed += !old.contains(q);
  }
  const double share = static_cast<double>(changed) / static_cast<double>(pairs);
  EXPECT_LE(share, 0.05);
  std::printf(
      "simulation: %zu nodes, k=%zu: out-degree max %zu; in-degree min %zu max %zu; removing %zu "
      "nodes changed %zu of %zu assignments (%.2f%%)\n",
      kNodes, o.fanout, max_out, min_in, max_in, removed.size(), changed, pairs, share * 100);
}

}  // namespace
}  // namespace efawatch::mesh
