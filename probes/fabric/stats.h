// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <vector>

namespace efawatch::fabric {

/// Summary of round-trip times in microseconds. All zero when `count` is 0.
struct RttSummary {
  uint64_t count = 0;
  double min_us = 0;
  double median_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  double max_us = 0;
  double mean_us = 0;

  bool operator==(const RttSummary&) const = default;
};

/// Summarizes `samples_us` (any order; taken by value because it is sorted). Quantiles use the
/// nearest-rank method (the smallest sample with at least q of the samples at or below it), so
/// every reported quantile is a time that was really measured.
RttSummary Summarize(std::vector<double> samples_us);

/// The nearest-rank q-quantile (0 < q <= 1) of an ascending, non-empty vector.
double NearestRank(const std::vector<double>& sorted, double q);

}  // namespace efawatch::fabric
