// SPDX-License-Identifier: Apache-2.0
// Which targets an agent may connect to on a caller's behalf. Pure checks: nothing is dialled.
#include "daemon/agent/target_policy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>

namespace efawatch::agent {
namespace {

TargetPolicy Policy(bool loopback) {
  auto cidrs = common::ParseCidrList("10.1.0.0/16, fd00:1::/64");
  EXPECT_TRUE(cidrs.ok());
  return TargetPolicy({.allowed = *cidrs, .allow_loopback = loopback});
}

TEST(TargetPolicyTest, AllowsAgentsInsideTheAllowedBlocks) {
  const TargetPolicy p = Policy(false);
  EXPECT_TRUE(p.CheckAgent("10.1.2.3:9478").ok());
  EXPECT_TRUE(p.CheckAgent("[fd00:1::5]:9478").ok());
}

TEST(TargetPolicyTest, RefusesEverythingElseWithInvalidArgument) {
  const TargetPolicy p = Policy(false);
  for (const char* t :
       {"unix:/var/run/docker.sock", "unix-abstract:x", "dns:///10.1.2.3:9478",
        "169.254.169.254:80", "[fe80::1]:9478", "[::ffff:169.254.169.254]:80", "127.0.0.1:9478",
        "localhost:9478", "[::1]:9478", "0.0.0.0:9478", "224.0.0.1:9478", "10.2.0.1:9478",
        "[fd00:2::1]:9478", "metadata.google.internal:80", "10.1.2.3", "10.1.2.3:0",
        "10.1.2.3:70000", ""}) {
    const absl::Status st = p.CheckAgent(t);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << t;
  }
}

TEST(TargetPolicyTest, LoopbackOnlyWhenAllowedAndLinkLocalNever) {
  const TargetPolicy p = Policy(true);
  EXPECT_TRUE(p.CheckAgent("127.0.0.1:9478").ok());
  EXPECT_TRUE(p.CheckAgent("localhost:9478").ok());
  EXPECT_TRUE(p.CheckAgent("[::1]:9478").ok());
  auto all = common::ParseCidrList("0.0.0.0/0");
  ASSERT_TRUE(all.ok());
  const TargetPolicy open({.allowed = *all, .allow_loopback = true});
  EXPECT_FALSE(open.CheckAgent("169.254.169.254:80").ok()) << "even inside 0.0.0.0/0";
}

std::string Sockaddr(const char* ip, uint16_t port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  inet_pton(AF_INET, ip, &in.sin_addr);
  std::string raw(sizeof(in), '\0');
  std::memcpy(raw.data(), &in, sizeof(in));
  return raw;
}

TEST(TargetPolicyTest, RawIpFabricAddressesFollowTheSameRules) {
  const TargetPolicy p = Policy(false);
  EXPECT_TRUE(p.CheckFabricAddress(Sockaddr("10.1.9.9", 4000)).ok());
  EXPECT_FALSE(p.CheckFabricAddress(Sockaddr("169.254.169.254", 80)).ok());
  EXPECT_FALSE(p.CheckFabricAddress(Sockaddr("127.0.0.1", 4000)).ok());
  EXPECT_FALSE(p.CheckFabricAddress(Sockaddr("192.168.1.1", 4000)).ok());
  EXPECT_TRUE(p.CheckFabricAddress(std::string(32, '\x7')).ok()) << "an EFA address names no IP";
}

TEST(IpAddressTest, CidrContainsAndPrints) {
  auto c = common::ParseCidr("10.1.0.0/16");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ToString(), "10.1.0.0/16");
  EXPECT_TRUE(c->Contains(*common::ParseIpAddress("10.1.255.1")));
  EXPECT_FALSE(c->Contains(*common::ParseIpAddress("10.2.0.1")));
  EXPECT_FALSE(c->Contains(*common::ParseIpAddress("fd00::1")));
  EXPECT_FALSE(common::ParseCidr("10.1.0.0/33").ok());
  EXPECT_FALSE(common::ParseCidr("10.1.0.0").ok());
  EXPECT_FALSE(common::ParseCidr("host/8").ok());
}

TEST(IpAddressTest, HostSubnetsHaveNoLoopbackOrLinkLocal) {
  for (const auto& c : HostSubnets()) {
    EXPECT_FALSE(c.base.IsLoopback()) << c.ToString();
    EXPECT_FALSE(c.base.IsLinkLocal()) << c.ToString();
  }
}

}  // namespace
}  // namespace efawatch::agent
