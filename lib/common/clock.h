// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>

namespace efawatch::common {

/// A source of time, passed down so tests can control it (no sleeps in unit tests).
/// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Monotonic time for durations, deadlines and rate limits.
  virtual std::chrono::steady_clock::time_point Now() const = 0;
  /// Wall time for timestamps shown to people.
  virtual std::chrono::system_clock::time_point WallNow() const = 0;
};

/// The real clock.
class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::now();
  }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::now();
  }
  /// A process-wide instance; it has no state, so sharing it is safe.
  static const Clock& Get() {
    static const SystemClock clock;
    return clock;
  }
};

}  // namespace efawatch::common
