// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace efawatch::common {

/// `d` as an integer when it is finite and within [lo, hi]; nullopt for NaN, ±inf and anything
/// out of range. Numbers read from files (a tenant's pod volume, a log) go through this before any
/// cast: converting a double outside the target's range is undefined behaviour, and UBSan stops
/// the process on it (a record with "pid": 4.5e43 did).
std::optional<int64_t> CheckedInt(double d, int64_t lo, int64_t hi);

/// The decimal integer `s` (optional leading '-', digits only, nothing else) within [lo, hi];
/// nullopt when it is empty, not a number, or out of range (never throws, never wraps).
std::optional<int64_t> ParseInt(std::string_view s, int64_t lo, int64_t hi);

}  // namespace efawatch::common
