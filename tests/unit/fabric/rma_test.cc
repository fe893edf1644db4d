// SPDX-License-Identifier: Apache-2.0
// The RMA refusals: what a prober says when RMA cannot work, before any traffic.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "probes/fabric/message.h"
#include "probes/fabric/probe.h"

namespace efawatch::fabric {
namespace {

using ::testing::HasSubstr;

TEST(RmaTest, ProviderWithoutRmaIsFailedPreconditionNamingIt) {
  FabricInfo info;
  info.provider = "udp;ofi_rxd";
  info.rma = false;
  const absl::Status s = RequireRma(info);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("udp;ofi_rxd has no RMA"));
}

TEST(RmaTest, ProviderWithRmaIsAccepted) {
  FabricInfo info;
  info.provider = "tcp;ofi_rxm";
  info.rma = true;
  EXPECT_TRUE(RequireRma(info).ok());
}

TEST(RmaTest, RmaWithBidirectionalIsInvalidArgumentBeforeOpeningAnything) {
  BandwidthOptions o;
  o.endpoint.providers = {"no-such-provider"};  // Opening it would fail with NOT_FOUND.
  o.peer = "x";
  o.rma = true;
  o.bidirectional = true;
  const auto r = Bandwidth(o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("one-way"));
}

TEST(RmaTest, RegionRoundTripsAndShortInputIsRejected) {
  RemoteRegion in;
  in.address = 0x00007f1234567000;
  in.key = 0xdeadbeefcafef00d;
  in.bytes = (1u << 20) + 4096;
  std::byte buf[kRegionBytes];
  ASSERT_TRUE(EncodeRegion(in, buf));
  const auto out = DecodeRegion(buf);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->address, in.address);
  EXPECT_EQ(out->key, in.key);
  EXPECT_EQ(out->bytes, in.bytes);
  EXPECT_FALSE(DecodeRegion(std::span<const std::byte>(buf, kRegionBytes - 1)).has_value());
  EXPECT_FALSE(EncodeRegion(in, std::span<std::byte>(buf, kRegionBytes - 1)));
}

}  // namespace
}  // namespace efawatch::fabric
