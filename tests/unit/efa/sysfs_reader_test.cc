// SPDX-License-Identifier: Apache-2.0
#include "daemon/efa/sysfs_reader.h"

#include <gtest/gtest.h>

#include "daemon/efa/netdev.h"
#include "tests/support/subprocess.h"

namespace efawatch::efa {
namespace {

std::string Fixture(const std::string& tree) {
  return testing::SourceDir() + "/tests/fixtures/sysfs/" + tree;
}

TEST(SysfsReaderTest, ParsesStateAndRate) {
  EXPECT_EQ(ParseIdState("4: ACTIVE"), (std::pair<int, std::string>{4, "ACTIVE"}));
  EXPECT_EQ(ParseIdState("5: LinkUp"), (std::pair<int, std::string>{5, "LinkUp"}));
  EXPECT_EQ(ParseIdState("garbage").first, -1);
  EXPECT_DOUBLE_EQ(ParseRateBytesPerSecond("100 Gb/sec (4X EDR)"), 1.25e10);
  EXPECT_DOUBLE_EQ(ParseRateBytesPerSecond("400 Gb/sec (8X HDR)"), 5e10);
  EXPECT_LT(ParseRateBytesPerSecond("fast"), 0);
}

TEST(SysfsReaderTest, ListsAllP5Devices) {
  auto names = ListRdmaDevices(Fixture("p5.48xlarge/sys"));
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 32u);
  EXPECT_EQ(names->front(), "rdmap113s0");
}

TEST(SysfsReaderTest, MissingClassDirectoryIsNoDevicesNotAnError) {
  auto names = ListRdmaDevices("/nonexistent-sysfs");
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty());
}

TEST(SysfsReaderTest, ReadsSplitLayoutByScope) {
  auto d = ReadDevice(Fixture("p5.48xlarge/sys"), "rdmap79s0");
  EXPECT_TRUE(d.is_efa);
  EXPECT_FALSE(d.legacy_flat_layout);
  EXPECT_EQ(d.pci_address, "0000:4f:00.0");
  EXPECT_EQ(d.uverbs, "uverbs0");
  EXPECT_EQ(d.p2p, "NVIDIA");
  EXPECT_EQ(d.counters.size(), 12u);
  ASSERT_EQ(d.ports.size(), 1u);
  EXPECT_EQ(d.ports[0].counters.size(), 22u);
  EXPECT_EQ(d.ports[0].counters.at("tx_bytes"), 34231176u);
  EXPECT_EQ(d.ports[0].state_id, 4);
  EXPECT_FALSE(d.counters.contains("lifespan"));
}

TEST(SysfsReaderTest, LegacyFlatLayoutIsNotCountedTwice) {
  auto d = ReadDevice(Fixture("legacy-flat/sys"), "efa_0");
  EXPECT_TRUE(d.legacy_flat_layout);
  EXPECT_TRUE(d.counters.contains("submitted_cmds"));
  EXPECT_FALSE(d.counters.contains("tx_bytes"));
  EXPECT_TRUE(d.ports[0].counters.contains("tx_bytes"));
  EXPECT_FALSE(d.ports[0].counters.contains("submitted_cmds"));
  EXPECT_FALSE(d.ports[0].counters.contains("rdma_write_bytes")) << "r1.10-era driver";
}

TEST(SysfsReaderTest, NonEfaDeviceKeepsUnknownCounters) {
  auto d = ReadDevice(Fixture("g6.12xlarge/sys"), "mlx5_0");
  EXPECT_FALSE(d.is_efa);
  EXPECT_EQ(d.ports[0].counters.at("out_of_buffer"), 7u);
}

TEST(NetDevTest, KeepsEthernetInterfacesOnly) {
  auto ifs = ReadNetDev(Fixture("p5.48xlarge/proc"), {"eth", "ens", "enp", "eno"});
  ASSERT_TRUE(ifs.ok());
  ASSERT_EQ(ifs->size(), 1u);
  EXPECT_EQ(ifs->at("enp71s0").rx_bytes, 900000000u);
  EXPECT_EQ(ifs->at("enp71s0").tx_bytes, 800000000u);
}

}  // namespace
}  // namespace efawatch::efa
