// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

namespace efawatch::fabric {
namespace {

TEST(StatsTest, EmptyIsAllZero) {
  const RttSummary s = Summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.max_us, 0);
  EXPECT_EQ(s.p99_us, 0);
}

TEST(StatsTest, SingleSampleIsEveryQuantile) {
  const RttSummary s = Summarize({12.5});
  EXPECT_EQ(s.count, 1u);
  EXPECT_EQ(s.min_us, 12.5);
  EXPECT_EQ(s.median_us, 12.5);
  EXPECT_EQ(s.p90_us, 12.5);
  EXPECT_EQ(s.p99_us, 12.5);
  EXPECT_EQ(s.max_us, 12.5);
  EXPECT_EQ(s.mean_us, 12.5);
}

TEST(StatsTest, NearestRankOnOneToHundred) {
  std::vector<double> v(100);
  std::iota(v.begin(), v.end(), 1.0);
  std::shuffle(v.begin(), v.end(), std::mt19937(1));
  const RttSummary s = Summarize(v);
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.min_us, 1);
  EXPECT_EQ(s.median_us, 50);  // ceil(0.5 * 100) = rank 50
  EXPECT_EQ(s.p90_us, 90);
  EXPECT_EQ(s.p99_us, 99);
  EXPECT_EQ(s.max_us, 100);
  EXPECT_DOUBLE_EQ(s.mean_us, 50.5);
}

TEST(StatsTest, QuantilesAreMeasuredValues) {
  // Nearest rank never interpolates: with 4 samples the median is the 2nd, p99 the 4th.
  const RttSummary s = Summarize({40, 10, 30, 20});
  EXPECT_EQ(s.median_us, 20);
  EXPECT_EQ(s.p90_us, 40);
  EXPECT_EQ(s.p99_us, 40);
}

TEST(StatsTest, TailShowsOneSlowMessageInAHundred) {
  std::vector<double> v(99, 20.0);
  v.push_back(200000.0);  // one TCP retransmission (~200 ms)
  const RttSummary s = Summarize(v);
  EXPECT_EQ(s.median_us, 20);
  EXPECT_EQ(s.p99_us, 20);
  EXPECT_EQ(s.max_us, 200000);
  EXPECT_GT(s.mean_us, 2000);
}

}  // namespace
}  // namespace efawatch::fabric
