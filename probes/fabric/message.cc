// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/message.h"

#include <cstring>

namespace efawatch::fabric {
namespace {

template <typename T>
void Put(std::byte* at, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) {
    at[i] = static_cast<std::byte>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
  }
}

template <typename T>
T Get(const std::byte* at) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<uint64_t>(std::to_integer<uint8_t>(at[i])) << (8 * i);
  }
  return static_cast<T>(v);
}

bool KnownType(uint8_t t) {
  return t >= static_cast<uint8_t>(MessageType::kPing) &&
         t <= static_cast<uint8_t>(MessageType::kRmaInfo);
}

}  // namespace

size_t EncodeHeader(const MessageHeader& header, std::span<std::byte> out) {
  const size_t n = header.sender.size();
  if (n == 0 || n > kMaxAddressBytes || out.size() < HeaderBytes(n)) return 0;
  std::byte* p = out.data();
  Put<uint32_t>(p, kMessageMagic);
  Put<uint8_t>(p + 4, kMessageVersion);
  Put<uint8_t>(p + 5, static_cast<uint8_t>(header.type));
  Put<uint16_t>(p + 6, static_cast<uint16_t>(n));
  Put<uint64_t>(p + 8, header.seq);
  Put<uint64_t>(p + 16, header.session);
  Put<uint64_t>(p + 24, header.value);
  std::memcpy(p + kFixedHeaderBytes, header.sender.data(), n);
  return HeaderBytes(n);
}

void RewriteType(std::span<std::byte> message, MessageType type, uint64_t value) {
  if (message.size() < kFixedHeaderBytes) return;
  Put<uint8_t>(message.data() + 5, static_cast<uint8_t>(type));
  Put<uint64_t>(message.data() + 24, value);
}

bool EncodeRegion(const RemoteRegion& region, std::span<std::byte> out) {
  if (out.size() < kRegionBytes) return false;
  Put<uint64_t>(out.data(), region.address);
  Put<uint64_t>(out.data() + 8, region.key);
  Put<uint64_t>(out.data() + 16, region.bytes);
  return true;
}

std::optional<RemoteRegion> DecodeRegion(std::span<const std::byte> in) {
  if (in.size() < kRegionBytes) return std::nullopt;
  RemoteRegion r;
  r.address = Get<uint64_t>(in.data());
  r.key = Get<uint64_t>(in.data() + 8);
  r.bytes = Get<uint64_t>(in.data() + 16);
  return r;
}

std::optional<MessageHeader> DecodeHeader(std::span<const std::byte> in) {
  if (in.size() < kFixedHeaderBytes) return std::nullopt;
  const std::byte* p = in.data();
  if (Get<uint32_t>(p) != kMessageMagic || Get<uint8_t>(p + 4) != kMessageVersion) {
    return std::nullopt;
  }
  const uint8_t type = Get<uint8_t>(p + 5);
  const size_t n = Get<uint16_t>(p + 6);
  if (!KnownType(type) || n == 0 || n > kMaxAddressBytes || in.size() < HeaderBytes(n)) {
    return std::nullopt;
  }
  MessageHeader h;
  h.type = static_cast<MessageType>(type);
  h.seq = Get<uint64_t>(p + 8);
  h.session = Get<uint64_t>(p + 16);
  h.value = Get<uint64_t>(p + 24);
  h.sender.assign(reinterpret_cast<const char*>(p + kFixedHeaderBytes), n);
  return h;
}

}  // namespace efawatch::fabric
