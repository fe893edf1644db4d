// SPDX-License-Identifier: Apache-2.0
#include "lib/common/ip_address.h"

#include <arpa/inet.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace efawatch::common {
namespace {

constexpr int kV4MappedBits = 96;

}  // namespace

bool IpAddress::IsLoopback() const {
  if (v4) return bytes[12] == 127;
  return std::all_of(bytes.begin(), bytes.begin() + 15, [](uint8_t b) { return b == 0; }) &&
         bytes[15] == 1;
}

bool IpAddress::IsLinkLocal() const {
  if (v4) return bytes[12] == 169 && bytes[13] == 254;
  return bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80;
}

bool IpAddress::IsUnspecified() const {
  const auto* begin = v4 ? bytes.begin() + 12 : bytes.begin();
  return std::all_of(begin, bytes.end(), [](uint8_t b) { return b == 0; });
}

bool IpAddress::IsMulticast() const {
  if (v4) {
    return (bytes[12] & 0xf0) == 0xe0 ||
           std::all_of(bytes.begin() + 12, bytes.end(), [](uint8_t b) { return b == 0xff; });
  }
  return bytes[0] == 0xff;
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (v4) {
    inet_ntop(AF_INET, bytes.data() + 12, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, bytes.data(), buf, sizeof(buf));
  }
  return buf;
}

std::optional<IpAddress> ParseIpAddress(absl::string_view text) {
  const std::string s(text);
  IpAddress a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data() + 12) == 1) {
    a.bytes[10] = a.bytes[11] = 0xff;
    a.v4 = true;
    return a;
  }
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    // An IPv4-mapped IPv6 literal is the IPv4 address: ::ffff:169.254.169.254 is link-local.
    static constexpr std::array<uint8_t, 12> kMapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    a.v4 = std::equal(kMapped.begin(), kMapped.end(), a.bytes.begin());
    return a;
  }
  return std::nullopt;
}

bool Cidr::Contains(const IpAddress& a) const {
  if (a.v4 != base.v4) return false;
  int bits = prefix;
  for (size_t i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    const uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((a.bytes[i] & mask) != (base.bytes[i] & mask)) return false;
  }
  return true;
}

std::string Cidr::ToString() const {
  return absl::StrCat(base.ToString(), "/", base.v4 ? prefix - kV4MappedBits : prefix);
}

absl::StatusOr<Cidr> ParseCidr(absl::string_view text) {
  const auto slash = text.find('/');
  if (slash == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(text, ": expected address/prefix"));
  }
  auto base = ParseIpAddress(text.substr(0, slash));
  int prefix = -1;
  if (!base || !absl::SimpleAtoi(text.substr(slash + 1), &prefix) || prefix < 0 ||
      prefix > (base->v4 ? 32 : 128)) {
    return absl::InvalidArgumentError(
        absl::StrCat(text, ": expected an IPv4 address/0-32 or IPv6 address/0-128"));
  }
  return Cidr{*base, base->v4 ? prefix + kV4MappedBits : prefix};
}

absl::StatusOr<std::vector<Cidr>> ParseCidrList(absl::string_view text) {
  std::vector<Cidr> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    auto c = ParseCidr(absl::StripAsciiWhitespace(item));
    if (!c.ok()) return c.status();
    out.push_back(*c);
  }
  return out;
}

}  // namespace efawatch::common
