// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

namespace efawatch::mesh {

/// One agent of the fleet as discovery sees it.
struct Peer {
  /// Kubernetes node name; empty when the source only gives addresses (DNS). The peer's agent
  /// tells its name when asked for its fabric address, and metrics use that.
  std::string node;
  /// host:port of the peer agent's gRPC edge.
  std::string agent;
  /// Topology group (e.g. a placement group); peers sharing a non-empty value ping each other.
  std::string group;

  /// What selection hashes: stable across restarts of the agent pod where the source allows.
  const std::string& Key() const { return node.empty() ? agent : node; }
  bool operator==(const Peer&) const = default;
};

}  // namespace efawatch::mesh
