// SPDX-License-Identifier: Apache-2.0
#include "lib/common/number.h"

#include <charconv>
#include <cmath>

namespace efawatch::common {

std::optional<int64_t> CheckedInt(double d, int64_t lo, int64_t hi) {
  // 2^63 is exactly representable as a double while INT64_MAX is not: compare against it before
  // the cast, then against the caller's bounds as integers.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (!std::isfinite(d) || d >= kTwo63 || d < -kTwo63) return std::nullopt;
  const auto v = static_cast<int64_t>(d);
  if (v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<int64_t> ParseInt(std::string_view s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) {
    return std::nullopt;
  }
  return v;
}

}  // namespace efawatch::common
