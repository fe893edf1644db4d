// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "lib/common/ip_address.h"

namespace efawatch::agent {

struct TargetPolicyOptions {
  std::vector<common::Cidr> allowed;  ///< Where agents live (the node's subnets by default).
  bool allow_loopback = false;        ///< Agents on this host's loopback (tests, a dev agent).
};

/// Where this agent may connect on a caller's behalf: only toward other agents. Every target a
/// request names (a probe's peer agent or raw fabric address, a collective's participants) is
/// checked here before any connection or name lookup, so the agent cannot be turned into a
/// port scanner or a proxy toward node-local services or the cloud metadata address.
/// Immutable after construction; thread-safe.
class TargetPolicy {
 public:
  explicit TargetPolicy(TargetPolicyOptions options) : options_(std::move(options)) {}

  /// OK for `ip:port` or `[ip]:port` (or `localhost:port` when loopback is allowed) whose address
  /// is allowed; INVALID_ARGUMENT naming the reason otherwise: other URI schemes (`unix:`,
  /// `dns:`), host names (resolving them here and again in gRPC would let a name change between
  /// the check and the dial), link-local, unspecified and multicast addresses, loopback unless
  /// allowed, addresses outside the allowed blocks.
  absl::Status CheckAgent(absl::string_view target) const;

  /// For a raw fabric address: IP providers (tcp, sockets) write a sockaddr_in/sockaddr_in6,
  /// whose address is held to the same rules. Other providers' addresses (EFA's GID and queue
  /// pair, shm's names) do not name an IP endpoint and pass.
  absl::Status CheckFabricAddress(absl::string_view raw) const;

 private:
  absl::Status CheckAddress(const common::IpAddress& a, absl::string_view target) const;

  const TargetPolicyOptions options_;
};

/// The IP blocks of this host's interfaces that are up, loopback and link-local excepted (the
/// default of --probe-allowed-cidrs: peer agents run on the same subnets as this node).
std::vector<common::Cidr> HostSubnets();

}  // namespace efawatch::agent
