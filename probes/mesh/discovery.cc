// SPDX-License-Identifier: Apache-2.0
#include "probes/mesh/discovery.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace efawatch::mesh {
namespace {

class StaticSource final : public PeerSource {
 public:
  explicit StaticSource(std::vector<Peer> peers) : peers_(std::move(peers)) {}
  std::string_view Name() const override { return "static"; }
  absl::StatusOr<std::vector<Peer>> List(const std::stop_token&) override { return peers_; }

 private:
  std::vector<Peer> peers_;
};

// "[v6]:port" for IPv6 literals, "host:port" otherwise: what gRPC's target parser wants.
std::string JoinHostPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) return absl::StrCat("[", host, "]:", port);
  return absl::StrCat(host, ":", port);
}

class DnsSource final : public PeerSource {
 public:
  DnsSource(std::string name, int port) : name_(std::move(name)), port_(port) {}
  std::string_view Name() const override { return "dns"; }

  absl::StatusOr<std::vector<Peer>> List(const std::stop_token&) override {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    // getaddrinfo cannot be cancelled; resolv.conf's timeout and attempts bound it (5 s x 2 by
    // default), which the mesh thread can afford between rounds.
    const int rc = getaddrinfo(name_.c_str(), nullptr, &hints, &res);
    if (rc != 0) {
      return absl::UnavailableError(absl::StrCat("resolve ", name_, ": ", gai_strerror(rc)));
    }
    std::set<std::string> hosts;
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      char buf[INET6_ADDRSTRLEN] = {};
      const void* addr = a->ai_family == AF_INET
                             ? static_cast<const void*>(
                                   &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
                             : static_cast<const void*>(
                                   &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
      if (inet_ntop(a->ai_family, addr, buf, sizeof(buf)) != nullptr) hosts.insert(buf);
    }
    freeaddrinfo(res);
    std::vector<Peer> out;
    for (const std::string& h : hosts) {
      Peer p;
      p.agent = JoinHostPort(h, port_);
      out.push_back(std::move(p));
    }
    return out;
  }

 private:
  std::string name_;
  int port_;
};

}  // namespace

absl::StatusOr<std::vector<Peer>> ParseStaticPeers(std::string_view spec, int default_port) {
  std::vector<Peer> out;
  for (absl::string_view raw :
       absl::StrSplit(absl::string_view(spec.data(), spec.size()), ',', absl::SkipWhitespace())) {
    absl::string_view item = absl::StripAsciiWhitespace(raw);
    Peer p;
    if (const size_t slash = item.rfind('/'); slash != absl::string_view::npos) {
      p.group = std::string(item.substr(slash + 1));
      item = item.substr(0, slash);
    }
    if (const size_t eq = item.find('='); eq != absl::string_view::npos) {
      p.node = std::string(item.substr(0, eq));
      item = item.substr(eq + 1);
    }
    std::string host;
    int port = default_port;
    if (absl::ConsumePrefix(&item, "[")) {  // [v6]:port
      const size_t close = item.find(']');
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("peer '", raw, "': unclosed '['"));
      }
      host = std::string(item.substr(0, close));
      item = item.substr(close + 1);
      if (!item.empty() && (!absl::ConsumePrefix(&item, ":") || !absl::SimpleAtoi(item, &port))) {
        return absl::InvalidArgumentError(absl::StrCat("peer '", raw, "': bad port"));
      }
    } else if (const size_t colon = item.rfind(':'); colon != absl::string_view::npos) {
      host = std::string(item.substr(0, colon));
      if (!absl::SimpleAtoi(item.substr(colon + 1), &port)) {
        return absl::InvalidArgumentError(absl::StrCat("peer '", raw, "': bad port"));
      }
    } else {
      host = std::string(item);
    }
    if (host.empty() || port <= 0 || port > 65535 ||
        p.node.find_first_of(" \t") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("peer '", raw, "': expected [node=]host[:port][/group]"));
    }
    p.agent = JoinHostPort(host, port);
    out.push_back(std::move(p));
  }
  return out;
}

std::unique_ptr<PeerSource> StaticPeerSource(std::vector<Peer> peers) {
  return std::make_unique<StaticSource>(std::move(peers));
}

std::unique_ptr<PeerSource> DnsPeerSource(std::string name, int port) {
  return std::make_unique<DnsSource>(std::move(name), port);
}

}  // namespace efawatch::mesh
