// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>

#include "lib/common/clock.h"

namespace efawatch::common {

/// A clock that moves only when told to. Thread-safe. For tests.
class FakeClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(mono_ns_.load()));
  }
  std::chrono::system_clock::time_point WallNow() const override {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(wall_ns_.load())));
  }
  void Advance(std::chrono::nanoseconds d) {
    mono_ns_ += d.count();
    wall_ns_ += d.count();
  }

 private:
  std::atomic<long long> mono_ns_{1'000'000'000};
  std::atomic<long long> wall_ns_{1'767'225'600'000'000'000};  // 2026-01-01T00:00:00Z
};

}  // namespace efawatch::common
