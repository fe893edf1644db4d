// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/common/stable_hash.h"
#include "probes/mesh/peer.h"

namespace efawatch::mesh {

struct SelectionOptions {
  /// Peers each agent pings outside its topology group. All-pairs is O(N^2): a million pairs at
  /// 1,000 nodes; k per node keeps the fleet's cost linear.
  size_t fanout = 8;
  /// Most topology-group peers pinged on top of the fan-out (the complete graph is only cheap
  /// for small groups; beyond this the nearest on the group's own ring are taken).
  size_t max_group = 32;
};

using common::StableHash;

/// Chooses whom each agent pings, the same way on every agent from the same peer list.
///
/// Consistent hashing on ceil(k/2) independent rings: on each ring, ordered by a seeded hash of
/// the peer key, an agent pings its successor and its predecessor (skipping peers already
/// chosen). So every agent pings k peers and is pinged by about k (its own neighbours on each
/// ring); the union of random rings is connected and well mixed (an expander), unlike one ring
/// with k neighbours; and a node leaving or joining only changes the choices of its ring
/// neighbours, about k agents, not the fleet.
class PeerSelector {
 public:
  PeerSelector(std::vector<Peer> fleet, SelectionOptions options);

  /// The peers the agent with `self_key` (and topology group `self_group`) pings; the agent itself
  /// need not be in the fleet list. Deterministic; never contains `self_key`.
  std::vector<Peer> Select(std::string_view self_key, std::string_view self_group) const;

  size_t size() const { return fleet_.size(); }

 private:
  struct Ring {
    uint64_t seed = 0;
    std::vector<std::pair<uint64_t, size_t>> order;  // (hash, fleet index), ascending
  };
  void Walk(const Ring& ring, uint64_t self_hash, std::string_view self_key, size_t want,
            bool both_ways, std::vector<bool>& taken, std::vector<Peer>& out) const;

  std::vector<Peer> fleet_;  // deduplicated by key, sorted by key
  SelectionOptions options_;
  std::vector<Ring> rings_;
};

}  // namespace efawatch::mesh
