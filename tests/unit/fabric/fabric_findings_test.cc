// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/fabric_findings.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace efawatch::fabric {
namespace {

FabricFindingInputs Tcp(const std::string& domain, const std::string& printable) {
  FabricFindingInputs in;
  in.has_responder = true;
  in.responder.provider = "tcp;ofi_rxm";
  in.responder.fabric = "10.0.0.0/24";
  in.responder.domain = domain;
  in.responder_printable = printable;
  return in;
}

PeerProbeState Peer(const std::string& printable) {
  PeerProbeState p;
  p.peer = printable;
  return p;
}

TEST(FabricFindingsTest, NothingWithoutResponder) {
  FabricFindingInputs in;
  in.efa_devices = 4;
  EXPECT_TRUE(EvaluateFabricFindings(in).empty());
}

TEST(FabricFindingsTest, TcpOnANodeWithEfaIsAWarning) {
  FabricFindingInputs in = Tcp("eth0", "fi_sockaddr_in://10.0.0.5:4000");
  in.efa_devices = 32;
  auto f = EvaluateFabricFindings(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "fabric_not_on_efa");
  EXPECT_EQ(f[0].severity, common::Severity::kWarning);
  EXPECT_NE(f[0].message.find("32 EFA"), std::string::npos);
}

TEST(FabricFindingsTest, TcpWithoutEfaDevicesIsFineAndEfaOnEfaIsFine) {
  EXPECT_TRUE(EvaluateFabricFindings(Tcp("eth0", "fi_sockaddr_in://10.0.0.5:4000")).empty());
  FabricFindingInputs in;
  in.has_responder = true;
  in.responder.provider = "efa";
  in.responder.domain = "rdmap79s0-rdm";
  in.efa_devices = 1;
  EXPECT_TRUE(EvaluateFabricFindings(in).empty());
}

TEST(FabricFindingsTest, LoopbackWithRemotePeerWarnsOnce) {
  FabricFindingInputs in = Tcp("lo", "fi_sockaddr_in://127.0.0.1:4000");
  in.peers = {Peer("fi_sockaddr_in://127.0.0.1:5000")};
  EXPECT_TRUE(EvaluateFabricFindings(in).empty()) << "loopback peers only: a local test";
  in.peers.push_back(Peer("fi_sockaddr_in://10.0.0.7:4000"));
  in.peers.push_back(Peer("fi_sockaddr_in://10.0.0.8:4000"));
  auto f = EvaluateFabricFindings(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, "fabric_loopback_address");
  EXPECT_EQ(f[0].severity, common::Severity::kWarning);
}

TEST(FabricFindingsTest, RecognizesLoopbackInEveryPrintableForm) {
  EXPECT_TRUE(IsLoopbackAddress("fi_sockaddr_in://127.0.0.1:4000"));
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:4000"));
  EXPECT_TRUE(IsLoopbackAddress("fi_sockaddr_in6://[::1]:4000"));
  EXPECT_FALSE(IsLoopbackAddress("fi_sockaddr_in://10.1.2.3:4000"));
  EXPECT_FALSE(IsLoopbackAddress("fi_shm://1234:0:0"));
}

TEST(FabricFindingsTest, CountsOnlyAmazonDevicesUnderTheRoot) {
  const std::string root = ::testing::TempDir() + "/fabric_sysfs";
  std::filesystem::remove_all(root);
  for (auto [name, vendor] : {std::pair{"rdmap0s31", "0x1d0f"}, std::pair{"mlx5_0", "0x15b3"}}) {
    const std::string dir = root + "/class/infiniband/" + name + "/device";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/vendor") << vendor << "\n";
  }
  EXPECT_EQ(CountEfaDevicesForLibfabric(root), 1u);
  EXPECT_EQ(CountEfaDevicesForLibfabric(root + "/missing"), 0u);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace efawatch::fabric
