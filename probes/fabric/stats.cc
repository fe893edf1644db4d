// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace efawatch::fabric {

double NearestRank(const std::vector<double>& sorted, double q) {
  const double n = static_cast<double>(sorted.size());
  size_t rank = static_cast<size_t>(std::ceil(q * n));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

RttSummary Summarize(std::vector<double> samples_us) {
  RttSummary s;
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  s.count = samples_us.size();
  s.min_us = samples_us.front();
  s.max_us = samples_us.back();
  s.median_us = NearestRank(samples_us, 0.5);
  s.p90_us = NearestRank(samples_us, 0.9);
  s.p99_us = NearestRank(samples_us, 0.99);
  s.mean_us = std::accumulate(samples_us.begin(), samples_us.end(), 0.0) /
              static_cast<double>(samples_us.size());
  return s;
}

}  // namespace efawatch::fabric
