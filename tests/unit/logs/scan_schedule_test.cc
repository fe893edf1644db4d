// SPDX-License-Identifier: Apache-2.0
// When the tailer walks its trees: at once at start, on inotify's asks no sooner than the last
// walk's cost allows, and at the poll interval without an ask.
#include "daemon/logs/scan_schedule.h"

#include <gtest/gtest.h>

namespace efawatch::logs {
namespace {

using namespace std::chrono_literals;
using TimePoint = ScanSchedule::TimePoint;

TEST(ScanScheduleTest, FirstWalkIsDueAtOnceThenEveryInterval) {
  ScanSchedule s(1000ms);
  const TimePoint t0 = TimePoint{} + 100s;
  EXPECT_TRUE(s.Due(t0));
  s.Walked(t0, 1ms);
  EXPECT_FALSE(s.Due(t0 + 999ms));
  EXPECT_EQ(s.NextWake(), t0 + 1000ms);
  EXPECT_TRUE(s.Due(t0 + 1000ms));
}

TEST(ScanScheduleTest, AnAskWalksAsSoonAsACheapWalkAllows) {
  ScanSchedule s(1000ms);
  const TimePoint t0 = TimePoint{} + 100s;
  s.Walked(t0, 1ms);
  s.Ask();
  EXPECT_EQ(s.NextWake(), t0 + 49ms);
  EXPECT_FALSE(s.Due(t0 + 48ms));
  EXPECT_TRUE(s.Due(t0 + 49ms));
}

// A walk of 200 ms (a tenant's 20,000 files): asks in a loop get at most one walk per 10 s,
// 2 % of a core, and the interval stretches to the same bound.
TEST(ScanScheduleTest, ACostlyWalkHoldsOffAsksAndTheInterval) {
  ScanSchedule s(1000ms);
  const TimePoint t0 = TimePoint{} + 100s;
  s.Walked(t0, 200ms);
  s.Ask();
  EXPECT_FALSE(s.Due(t0 + 1s));
  EXPECT_FALSE(s.Due(t0 + 9700ms));
  EXPECT_EQ(s.NextWake(), t0 + 9800ms);
  EXPECT_TRUE(s.Due(t0 + 9800ms));
  s.Walked(t0 + 10s, 200ms);
  EXPECT_FALSE(s.Due(t0 + 11s)) << "no ask: the stretched interval, not the poll interval";
  EXPECT_TRUE(s.Due(t0 + 19800ms));
}

}  // namespace
}  // namespace efawatch::logs
