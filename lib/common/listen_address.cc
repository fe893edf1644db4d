// SPDX-License-Identifier: Apache-2.0
#include "lib/common/listen_address.h"

#include <arpa/inet.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace efawatch::common {

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& listen) {
  std::string host, port_text;
  if (listen.starts_with("[")) {
    const auto close = listen.find("]:");
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(listen, ": expected [ipv6]:port"));
    }
    host = listen.substr(1, close - 1);
    port_text = listen.substr(close + 2);
  } else {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(listen, ": expected host:port or :port"));
    }
    host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
  }
  int port = -1;
  if (!absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(listen, ": port must be 0 to 65535"));
  }
  ListenAddress out;
  out.port = static_cast<uint16_t>(port);
  if (host == "localhost") host = "127.0.0.1";
  // ":port" is every IPv4 address.
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(out.port);
  if (host.empty()) {
    v4->sin_addr.s_addr = htonl(INADDR_ANY);
    return out;
  }
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) return out;
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
  *v6 = sockaddr_in6{};
  v6->sin6_family = AF_INET6;
  v6->sin6_port = htons(out.port);
  if (listen.starts_with("[") && inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    out.v6 = true;
    return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(listen, ": host must be an IPv4 address, [IPv6 address], localhost or empty"));
}

std::string PeerAddress(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {};
  if (sa == nullptr) return {};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, text, sizeof(text));
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, text, sizeof(text));
  }
  return text;
}

}  // namespace efawatch::common
