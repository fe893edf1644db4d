// SPDX-License-Identifier: Apache-2.0
#include "probes/mesh/selection.h"

#include <algorithm>

namespace efawatch::mesh {

PeerSelector::PeerSelector(std::vector<Peer> fleet, SelectionOptions options) : options_(options) {
  std::sort(fleet.begin(), fleet.end(),
            [](const Peer& a, const Peer& b) { return a.Key() < b.Key(); });
  // Two sources can list the same agent twice (a pod with two addresses): keep the first.
  fleet.erase(std::unique(fleet.begin(), fleet.end(),
                          [](const Peer& a, const Peer& b) { return a.Key() == b.Key(); }),
              fleet.end());
  fleet_ = std::move(fleet);
  const size_t rings = (options_.fanout + 1) / 2;
  rings_.resize(rings);
  for (size_t r = 0; r < rings; ++r) {
    Ring& ring = rings_[r];
    ring.seed = r + 1;
    ring.order.reserve(fleet_.size());
    for (size_t i = 0; i < fleet_.size(); ++i) {
      ring.order.emplace_back(StableHash(ring.seed, fleet_[i].Key()), i);
    }
    std::sort(ring.order.begin(), ring.order.end());
  }
}

void PeerSelector::Walk(const Ring& ring, uint64_t self_hash, std::string_view self_key,
                        size_t want, bool both_ways, std::vector<bool>& taken,
                        std::vector<Peer>& out) const {
  const size_t n = ring.order.size();
  if (n == 0 || want == 0) return;
  const size_t pos = static_cast<size_t>(
      std::lower_bound(ring.order.begin(), ring.order.end(), std::make_pair(self_hash, size_t{0})) -
      ring.order.begin());
  // Successors from pos upwards, predecessors from pos-1 downwards, alternating, so each ring
  // gives one neighbour on each side, the relation that makes in-degree equal out-degree.
  size_t up = 0, down = 0, got = 0;
  bool next_up = true;
  while (got < want && (up < n || (both_ways && down < n))) {
    const bool go_up = !both_ways || (next_up ? up < n : down >= n);
    size_t idx;
    if (go_up) {
      idx = ring.order[(pos + up) % n].second;
      ++up;
    } else {
      idx = ring.order[(pos + n - 1 - down % n) % n].second;
      ++down;
    }
    if (fleet_[idx].Key() == self_key || taken[idx]) continue;
    taken[idx] = true;
    out.push_back(fleet_[idx]);
    ++got;
    next_up = !go_up;
  }
}

std::vector<Peer> PeerSelector::Select(std::string_view self_key,
                                       std::string_view self_group) const {
  std::vector<Peer> out;
  std::vector<bool> taken(fleet_.size(), false);
  size_t others = 0;
  for (const Peer& p : fleet_) others += p.Key() != self_key;
  if (others <= options_.fanout) {
    for (const Peer& p : fleet_) {
      if (p.Key() != self_key) out.push_back(p);
    }
    return out;
  }
  size_t left = options_.fanout;
  for (const Ring& ring : rings_) {
    const size_t want = std::min<size_t>(2, left);
    const size_t before = out.size();
    Walk(ring, StableHash(ring.seed, self_key), self_key, want, true, taken, out);
    left -= out.size() - before;
    if (left == 0) break;
  }
  if (self_group.empty() || options_.max_group == 0) return out;

  // Topology group: a complete graph while small, the nearest on the group's own ring beyond.
  Ring group;
  group.seed = 0x67726f7570ULL;  // "group": a ring independent of the fan-out rings
  for (size_t i = 0; i < fleet_.size(); ++i) {
    if (fleet_[i].group == self_group && fleet_[i].Key() != self_key) {
      group.order.emplace_back(StableHash(group.seed, fleet_[i].Key()), i);
    }
  }
  std::sort(group.order.begin(), group.order.end());
  Walk(group, StableHash(group.seed, self_key), self_key, options_.max_group, true, taken, out);
  return out;
}

}  // namespace efawatch::mesh
