// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <chrono>

namespace efawatch::logs {

/// When the tailer walks its directory trees again. A walk costs in proportion to trees tenants
/// control (20,000 files named like Ray's in one emptyDir took 0.2 s of a core per walk), and
/// inotify asks for one at every file created or deleted: walking at every ask would let a pod
/// that creates files in a loop keep a core busy. So a walk that took T is followed by no other
/// for kCostFactor x T (walks take at most 1/kCostFactor of a core however large the trees), and
/// `interval` after a walk the next is due even without an ask (inotify can miss events).
/// Not thread-safe: the tailer's thread owns it. Times come from the tailer's Clock.
class ScanSchedule {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;
  static constexpr int kCostFactor = 50;

  /// The first walk is due at once.
  explicit ScanSchedule(std::chrono::milliseconds interval) : interval_(interval) {}

  /// inotify saw a file or directory come or go: walk as soon as the cost bound allows.
  void Ask() { asked_ = true; }
  /// True when a walk should run at `now`.
  bool Due(TimePoint now) const { return now >= next_ || (asked_ && now >= not_before_); }
  /// When the thread should wake to walk, if nothing else wakes it first.
  TimePoint NextWake() const { return asked_ ? not_before_ : next_; }
  /// A walk ended at `now` after taking `cost` (of CPU: the bound is on the core it uses).
  void Walked(TimePoint now, Duration cost) {
    asked_ = false;
    not_before_ = now + cost * (kCostFactor - 1);
    next_ = std::max<TimePoint>(now + interval_, not_before_);
  }

 private:
  const std::chrono::milliseconds interval_;
  bool asked_ = true;
  TimePoint not_before_{};
  TimePoint next_{};
};

}  // namespace efawatch::logs
