// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/message.h"

#include <gtest/gtest.h>

#include <vector>

namespace efawatch::fabric {
namespace {

MessageHeader Sample() {
  MessageHeader h;
  h.type = MessageType::kBwDoneAck;
  h.seq = 0x0102030405060708ULL;
  h.session = 0xdeadbeefcafef00dULL;
  h.value = 42;
  h.sender = std::string("\x02\x00\xa7\x09\x7f\x00\x00\x01", 8);
  return h;
}

TEST(MessageTest, RoundTripsEveryField) {
  std::vector<std::byte> buf(256);
  const MessageHeader h = Sample();
  const size_t n = EncodeHeader(h, buf);
  ASSERT_EQ(n, HeaderBytes(8));
  auto d = DecodeHeader(std::span<const std::byte>(buf.data(), n));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->type, h.type);
  EXPECT_EQ(d->seq, h.seq);
  EXPECT_EQ(d->session, h.session);
  EXPECT_EQ(d->value, h.value);
  EXPECT_EQ(d->sender, h.sender);
}

TEST(MessageTest, WritesLittleEndianWithMagicFirst) {
  std::vector<std::byte> buf(64);
  ASSERT_GT(EncodeHeader(Sample(), buf), 0u);
  EXPECT_EQ(std::to_integer<char>(buf[0]), 'E');
  EXPECT_EQ(std::to_integer<char>(buf[1]), 'F');
  EXPECT_EQ(std::to_integer<char>(buf[2]), 'W');
  EXPECT_EQ(std::to_integer<char>(buf[3]), '1');
  EXPECT_EQ(std::to_integer<int>(buf[8]), 0x08);  // seq, least significant byte first
  EXPECT_EQ(std::to_integer<int>(buf[15]), 0x01);
}

TEST(MessageTest, RefusesToEncodeIntoTooSmallBufferOrBadAddress) {
  std::vector<std::byte> buf(HeaderBytes(8) - 1);
  EXPECT_EQ(EncodeHeader(Sample(), buf), 0u);
  std::vector<std::byte> big(1024);
  MessageHeader h = Sample();
  h.sender.clear();
  EXPECT_EQ(EncodeHeader(h, big), 0u);
  h.sender.assign(kMaxAddressBytes + 1, 'x');
  EXPECT_EQ(EncodeHeader(h, big), 0u);
}

TEST(MessageTest, RejectsGarbage) {
  std::vector<std::byte> buf(128);
  const size_t n = EncodeHeader(Sample(), buf);
  auto decode = [&](size_t len) {
    return DecodeHeader(std::span<const std::byte>(buf.data(), len));
  };
  EXPECT_TRUE(decode(n).has_value());
  EXPECT_FALSE(decode(n - 1).has_value()) << "address runs past the end";
  EXPECT_FALSE(decode(10).has_value()) << "shorter than the fixed header";

  auto corrupt = [&](size_t at, std::byte v) {
    std::vector<std::byte> copy(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
    copy[at] = v;
    return DecodeHeader(copy);
  };
  EXPECT_FALSE(corrupt(0, std::byte{0}).has_value()) << "magic";
  EXPECT_FALSE(corrupt(4, std::byte{2}).has_value()) << "version";
  EXPECT_FALSE(corrupt(5, std::byte{0}).has_value()) << "type 0";
  EXPECT_FALSE(corrupt(5, std::byte{99}).has_value()) << "unknown type";
  EXPECT_FALSE(corrupt(6, std::byte{0}).has_value()) << "empty address";
  EXPECT_FALSE(corrupt(7, std::byte{1}).has_value()) << "address length 264";
}

TEST(MessageTest, RewriteTypeKeepsPayloadAndIdentity) {
  std::vector<std::byte> buf(200, std::byte{0x5a});
  MessageHeader h = Sample();
  h.type = MessageType::kPing;
  const size_t n = EncodeHeader(h, buf);
  RewriteType(buf, MessageType::kPong, 7);
  auto d = DecodeHeader(buf);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->type, MessageType::kPong);
  EXPECT_EQ(d->value, 7u);
  EXPECT_EQ(d->seq, h.seq);
  EXPECT_EQ(d->session, h.session);
  EXPECT_EQ(buf[n], std::byte{0x5a});
  EXPECT_EQ(buf.back(), std::byte{0x5a});
}

}  // namespace
}  // namespace efawatch::fabric
