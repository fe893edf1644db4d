// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace efawatch::common {

/// Bounds on what the clients of one listener can hold (docs/security.md, "Listeners").
struct ConnectionLimits {
  size_t total = 256;    // connections open at once
  size_t per_peer = 64;  // from one peer address
  // A connection waiting for its request (just opened, or idle between keep-alive requests) is
  // cut after this long; zero: never (the gRPC gate, where gRPC's own timeouts apply).
  std::chrono::milliseconds request_deadline{10000};
};

/// The admission policy of a listener: which connection to accept, which to cut. A listener at
/// its bound does not simply refuse newcomers, since that lets a few idle clients lock out every
/// scrape and probe (the kubelet's among them): a newcomer instead takes the place of the
/// connection that has waited longest without a request in progress, from the same peer when
/// that peer is at its own bound. Only when every connection is busy serving a request is the
/// newcomer refused. The table knows nothing of sockets: the listener shuts down what it names.
/// Not thread-safe: the listener serializes calls. Times are steady-clock, passed in.
class ConnectionTable {
 public:
  using Id = uint64_t;
  using TimePoint = std::chrono::steady_clock::time_point;

  struct Admission {
    bool admitted = false;
    std::optional<Id> evicted;  // admitted in its place: the listener cuts this one
  };

  explicit ConnectionTable(ConnectionLimits limits) : limits_(limits) {}

  /// A new connection `id` from `peer` (its address without the port) at `now`.
  Admission Admit(Id id, std::string_view peer, TimePoint now);
  /// A request has arrived on `id` and is being served: not evicted, not timed out.
  void Busy(Id id);
  /// `id` waits for its next request (a keep-alive connection after an answer, or any traffic
  /// on a connection whose requests the listener cannot see): its wait starts at `now`.
  void Waiting(Id id, TimePoint now);
  /// `id` is gone (closed by either side); unknown ids are ignored.
  void Closed(Id id);
  /// Connections that have waited past the request deadline at `now`; each is removed from the
  /// table (the listener cuts them).
  std::vector<Id> TakeExpired(TimePoint now);
  /// When the first connection waiting now passes the request deadline; nullopt when none waits
  /// (or there is no deadline). The listener sleeps until then instead of checking on a period.
  std::optional<TimePoint> NextExpiry() const;

  size_t size() const { return entries_.size(); }
  const ConnectionLimits& limits() const { return limits_; }

 private:
  struct Entry {
    std::string peer;
    bool busy = false;
    TimePoint waiting_since;
  };
  // The connection that has waited longest, among those of `peer` (all when empty).
  std::optional<Id> LongestWaiting(std::string_view peer) const;
  void Erase(std::unordered_map<Id, Entry>::iterator it);

  ConnectionLimits limits_;
  std::unordered_map<Id, Entry> entries_;
  std::unordered_map<std::string, size_t> per_peer_;
};

}  // namespace efawatch::common
