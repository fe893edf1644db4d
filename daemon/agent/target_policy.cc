// SPDX-License-Identifier: Apache-2.0
#include "daemon/agent/target_policy.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <bit>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace efawatch::agent {
namespace {

absl::Status Refuse(absl::string_view target, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("target ", target, " refused: ", why, " (docs/security.md, probe targets)"));
}

// Splits `host:port` / `[host]:port`; false for anything else (a URI scheme, no port).
bool SplitHostPort(absl::string_view target, absl::string_view* host, int* port) {
  absl::string_view port_text;
  if (absl::StartsWith(target, "[")) {
    const auto close = target.find("]:");
    if (close == absl::string_view::npos) return false;
    *host = target.substr(1, close - 1);
    port_text = target.substr(close + 2);
  } else {
    const auto colon = target.find(':');
    if (colon == absl::string_view::npos ||
        target.find(':', colon + 1) != absl::string_view::npos) {
      return false;
    }
    *host = target.substr(0, colon);
    port_text = target.substr(colon + 1);
  }
  return !host->empty() && absl::SimpleAtoi(port_text, port) && *port > 0 && *port <= 65535;
}

// The number of leading one bits of a netmask.
int PrefixLength(const sockaddr* mask) {
  int bits = 0;
  if (mask->sa_family == AF_INET) {
    uint32_t m = 0;
    std::memcpy(&m, &reinterpret_cast<const sockaddr_in*>(mask)->sin_addr, sizeof(m));
    return std::popcount(m);
  }
  const auto* m6 = reinterpret_cast<const sockaddr_in6*>(mask);
  for (uint8_t b : m6->sin6_addr.s6_addr) bits += std::popcount(b);
  return bits;
}

std::optional<common::IpAddress> FromSockaddr(const void* data, size_t size) {
  common::IpAddress a;
  sa_family_t family = 0;
  if (size < sizeof(family)) return std::nullopt;
  std::memcpy(&family, data, sizeof(family));
  if (family == AF_INET && size == sizeof(sockaddr_in)) {
    sockaddr_in in{};
    std::memcpy(&in, data, sizeof(in));
    a.bytes[10] = a.bytes[11] = 0xff;
    std::memcpy(a.bytes.data() + 12, &in.sin_addr, 4);
    a.v4 = true;
    return a;
  }
  if (family == AF_INET6 && size == sizeof(sockaddr_in6)) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, data, sizeof(in6));
    std::memcpy(a.bytes.data(), &in6.sin6_addr, 16);
    return common::ParseIpAddress(a.ToString());  // normalizes IPv4-mapped forms
  }
  return std::nullopt;
}

}  // namespace

absl::Status TargetPolicy::CheckAgent(absl::string_view target) const {
  absl::string_view host;
  int port = 0;
  if (!SplitHostPort(target, &host, &port)) {
    return Refuse(target, "a peer agent is ip:port or [ipv6]:port, no other scheme");
  }
  if (host == "localhost") {
    if (!options_.allow_loopback) return Refuse(target, "loopback (--probe-allow-loopback)");
    return absl::OkStatus();
  }
  auto a = common::ParseIpAddress(host);
  if (!a) return Refuse(target, "give the agent's IP address, not a name");
  return CheckAddress(*a, target);
}

absl::Status TargetPolicy::CheckAddress(const common::IpAddress& a,
                                        absl::string_view target) const {
  if (a.IsLinkLocal()) return Refuse(target, "link-local address");
  if (a.IsUnspecified() || a.IsMulticast()) return Refuse(target, "not a unicast address");
  if (a.IsLoopback()) {
    if (!options_.allow_loopback) return Refuse(target, "loopback (--probe-allow-loopback)");
    return absl::OkStatus();
  }
  for (const auto& c : options_.allowed) {
    if (c.Contains(a)) return absl::OkStatus();
  }
  return Refuse(target, "outside the agents' address blocks (--probe-allowed-cidrs)");
}

absl::Status TargetPolicy::CheckFabricAddress(absl::string_view raw) const {
  auto a = FromSockaddr(raw.data(), raw.size());
  if (!a) return absl::OkStatus();
  return CheckAddress(*a, absl::StrCat("fabric address ", a->ToString()));
}

std::vector<common::Cidr> HostSubnets() {
  std::vector<common::Cidr> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_netmask == nullptr || (i->ifa_flags & IFF_UP) == 0 ||
        (i->ifa_flags & IFF_LOOPBACK) != 0) {
      continue;
    }
    const sa_family_t family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    auto a =
        FromSockaddr(i->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    if (!a || a->IsLinkLocal() || a->IsLoopback()) continue;
    auto c = common::ParseCidr(absl::StrCat(a->ToString(), "/", PrefixLength(i->ifa_netmask)));
    if (c.ok()) out.push_back(*c);
  }
  freeifaddrs(list);
  return out;
}

}  // namespace efawatch::agent
