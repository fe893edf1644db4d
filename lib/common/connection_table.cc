// SPDX-License-Identifier: Apache-2.0
#include "lib/common/connection_table.h"

namespace efawatch::common {

ConnectionTable::Admission ConnectionTable::Admit(Id id, std::string_view peer, TimePoint now) {
  Admission a;
  const auto count = per_peer_.find(std::string(peer));
  const bool peer_full = count != per_peer_.end() && count->second >= limits_.per_peer;
  const bool table_full = entries_.size() >= limits_.total;
  if (peer_full) {
    a.evicted = LongestWaiting(peer);
  } else if (table_full) {
    a.evicted = LongestWaiting({});
  }
  if ((peer_full || table_full) && !a.evicted) return a;  // all are serving requests: refuse
  if (a.evicted) Closed(*a.evicted);
  entries_[id] = Entry{.peer = std::string(peer), .busy = false, .waiting_since = now};
  ++per_peer_[std::string(peer)];
  a.admitted = true;
  return a;
}

void ConnectionTable::Busy(Id id) {
  if (auto it = entries_.find(id); it != entries_.end()) it->second.busy = true;
}

void ConnectionTable::Waiting(Id id, TimePoint now) {
  if (auto it = entries_.find(id); it != entries_.end()) {
    it->second.busy = false;
    it->second.waiting_since = now;
  }
}

void ConnectionTable::Closed(Id id) {
  if (auto it = entries_.find(id); it != entries_.end()) Erase(it);
}

std::vector<ConnectionTable::Id> ConnectionTable::TakeExpired(TimePoint now) {
  std::vector<Id> out;
  if (limits_.request_deadline.count() <= 0) return out;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const auto next = std::next(it);
    if (!it->second.busy && now - it->second.waiting_since >= limits_.request_deadline) {
      out.push_back(it->first);
      Erase(it);
    }
    it = next;
  }
  return out;
}

std::optional<ConnectionTable::TimePoint> ConnectionTable::NextExpiry() const {
  if (limits_.request_deadline.count() <= 0) return std::nullopt;
  std::optional<TimePoint> first;
  for (const auto& [id, e] : entries_) {
    if (!e.busy && (!first || e.waiting_since < *first)) first = e.waiting_since;
  }
  if (!first) return std::nullopt;
  return *first + limits_.request_deadline;
}

std::optional<ConnectionTable::Id> ConnectionTable::LongestWaiting(std::string_view peer) const {
  // A linear scan: the table holds at most limits_.total entries (hundreds), and it runs only
  // when a bound is reached.
  std::optional<Id> best;
  TimePoint best_since = TimePoint::max();
  for (const auto& [id, e] : entries_) {
    if (e.busy || (!peer.empty() && e.peer != peer)) continue;
    if (e.waiting_since < best_since || (e.waiting_since == best_since && best && id < *best)) {
      best = id;
      best_since = e.waiting_since;
    }
  }
  return best;
}

void ConnectionTable::Erase(std::unordered_map<Id, Entry>::iterator it) {
  if (auto c = per_peer_.find(it->second.peer); c != per_peer_.end() && --c->second == 0) {
    per_peer_.erase(c);
  }
  entries_.erase(it);
}

}  // namespace efawatch::common
