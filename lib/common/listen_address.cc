// SPDX-License-Identifier: Apache-2.0
#include "lib/common/listen_address.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

absl::StatusOr<Listener> Listen(const ListenAddress& address, bool v6_only) {
  Listener l;
  const auto fail = [&l](const char* step) {
    absl::Status st = absl::UnavailableError(absl::StrCat(step, ": ", std::strerror(errno)));
    if (l.fd >= 0) ::close(l.fd);
    return st;
  };
  l.fd = ::socket(address.v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l.fd < 0) return fail("socket");
  const int one = 1;
  ::setsockopt(l.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.v6 && v6_only) ::setsockopt(l.fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  const socklen_t len = address.v6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::bind(l.fd, reinterpret_cast<const sockaddr*>(&address.storage), len) != 0) {
    return fail("bind");
  }
  if (::listen(l.fd, SOMAXCONN) != 0) return fail("listen");
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (::getsockname(l.fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    return fail("getsockname");
  }
  l.port = ntohs(address.v6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return l;
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
