// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace efawatch::common {

/// An IPv4 or IPv6 address, IPv4 kept as the IPv4-mapped IPv6 form (::ffff:a.b.c.d) so one
/// comparison serves both. A plain value; no name resolution anywhere here.
struct IpAddress {
  std::array<uint8_t, 16> bytes{};
  bool v4 = false;

  bool IsLoopback() const;     ///< 127.0.0.0/8, ::1
  bool IsLinkLocal() const;    ///< 169.254.0.0/16 (cloud metadata lives there), fe80::/10
  bool IsUnspecified() const;  ///< 0.0.0.0, :: (a dial to it reaches this host)
  bool IsMulticast() const;    ///< 224.0.0.0/4, 255.255.255.255, ff00::/8
  std::string ToString() const;
  bool operator==(const IpAddress&) const = default;
};

/// Parses an IP literal (no brackets, no port); nullopt for anything else, names included.
std::optional<IpAddress> ParseIpAddress(absl::string_view text);

/// An address block such as 10.0.0.0/16 or fd00::/8.
struct Cidr {
  IpAddress base;
  int prefix = 0;  ///< In IPv6 bits (an IPv4 /n is stored as /(96+n)).

  bool Contains(const IpAddress& a) const;
  std::string ToString() const;
};

/// Parses `address/prefix`; INVALID_ARGUMENT with the reason otherwise.
absl::StatusOr<Cidr> ParseCidr(absl::string_view text);

/// Parses a comma-separated list of CIDRs (spaces ignored).
absl::StatusOr<std::vector<Cidr>> ParseCidrList(absl::string_view text);

}  // namespace efawatch::common
