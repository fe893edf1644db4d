// SPDX-License-Identifier: Apache-2.0
#include "probes/mesh/discovery.h"

#include <gtest/gtest.h>

namespace efawatch::mesh {
namespace {

TEST(ParseStaticPeersTest, AllForms) {
  auto peers = ParseStaticPeers(
      "node-a=10.0.0.1:9000, 10.0.0.2, node-c=[fd00::3]:9001/pg-1, [fd00::4], node-e=host.x/pg-2",
      9478);
  ASSERT_TRUE(peers.ok()) << peers.status();
  ASSERT_EQ(peers->size(), 5u);
  EXPECT_EQ((*peers)[0], (Peer{"node-a", "10.0.0.1:9000", ""}));
  EXPECT_EQ((*peers)[1], (Peer{"", "10.0.0.2:9478", ""}));
  EXPECT_EQ((*peers)[2], (Peer{"node-c", "[fd00::3]:9001", "pg-1"}));
  EXPECT_EQ((*peers)[3], (Peer{"", "[fd00::4]:9478", ""}));
  EXPECT_EQ((*peers)[4], (Peer{"node-e", "host.x:9478", "pg-2"}));
  EXPECT_EQ((*peers)[1].Key(), "10.0.0.2:9478");  // no name: the address is the key
}

TEST(ParseStaticPeersTest, BadEntriesNameThemselves) {
  for (const char* bad :
       {"a=10.0.0.1:port", "[fd00::1", "a=:9000", "a=10.0.0.1:70000", "[fd00::1]x"}) {
    auto peers = ParseStaticPeers(bad, 9478);
    ASSERT_FALSE(peers.ok()) << bad;
    EXPECT_EQ(peers.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(peers.status().message().find("peer '"), absl::string_view::npos) << bad;
  }
}

TEST(DnsPeerSourceTest, ResolvesLocalhostToPeersWithThePort) {
  auto source = DnsPeerSource("localhost", 9478);
  auto peers = source->List({});
  ASSERT_TRUE(peers.ok()) << peers.status();
  ASSERT_FALSE(peers->empty());
  for (const Peer& p : *peers) {
    EXPECT_TRUE(p.agent == "127.0.0.1:9478" || p.agent == "[::1]:9478") << p.agent;
    EXPECT_TRUE(p.node.empty());
  }
}

TEST(DnsPeerSourceTest, UnknownNameIsUnavailable) {
  auto peers = DnsPeerSource("no-such-name.invalid", 9478)->List({});
  ASSERT_FALSE(peers.ok());
  EXPECT_EQ(peers.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(peers.status().message().find("no-such-name.invalid"), absl::string_view::npos);
}

}  // namespace
}  // namespace efawatch::mesh
