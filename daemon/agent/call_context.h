// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <chrono>
#include <stop_token>

namespace efawatch::agent {

/// What the caller of an operation allows it: when the answer is due, and whether the caller
/// still wants one. The gRPC edge fills it from the call (the client's deadline, and a token it
/// triggers when the call is cancelled, the client goes away or the deadline passes); schedules
/// and tests build their own. A value, cheap to copy; its token stays valid after the call ends.
struct CallContext {
  using TimePoint = std::chrono::steady_clock::time_point;

  /// On the agent's common::Clock (the one its modules are given); max(): the caller set none.
  TimePoint deadline = TimePoint::max();
  /// Triggered when the caller gave up; a default token never is.
  std::stop_token cancel;

  bool cancelled() const { return cancel.stop_requested(); }
  bool has_deadline() const { return deadline != TimePoint::max(); }

  /// `own` (an operation's own time limit) shortened to what is left of the caller's deadline
  /// at `now`; zero once it has passed.
  std::chrono::milliseconds Bound(std::chrono::milliseconds own, TimePoint now) const {
    if (!has_deadline()) return own;
    if (deadline <= now) return std::chrono::milliseconds(0);
    // Rounded down: a bound rounded up would let the operation answer after the caller left.
    return std::min(own, std::chrono::floor<std::chrono::milliseconds>(deadline - now));
  }
};

}  // namespace efawatch::agent
