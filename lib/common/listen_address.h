// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace efawatch::common {

/// One address to bind, IPv4 or IPv6, as bind() and libmicrohttpd's MHD_OPTION_SOCK_ADDR take it.
struct ListenAddress {
  sockaddr_storage storage{};
  bool v6 = false;
  uint16_t port = 0;
};

/// Parses a listen address: host:port, :port (every IPv4 address), [v6]:port or localhost:port;
/// port 0 picks a free one. InvalidArgument, naming the text, for anything else.
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& listen);

/// A listening TCP socket and the port it was given.
struct Listener {
  int fd = -1;  // non-blocking, close-on-exec; the caller closes it
  uint16_t port = 0;
};

/// Opens a socket listening on `address` (SO_REUSEADDR, SOMAXCONN backlog). `v6_only`: an IPv6
/// address serves IPv6 only, not IPv4 through mapped addresses too. Unavailable naming the step
/// and the system's error ("bind: Address already in use"); no descriptor is left open then.
absl::StatusOr<Listener> Listen(const ListenAddress& address, bool v6_only);

/// A client's address without its port ("10.0.0.1", "::1"); empty for other families.
std::string PeerAddress(const sockaddr* sa);

}  // namespace efawatch::common
