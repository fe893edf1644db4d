// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string_view>

namespace efawatch::common {

/// 64-bit FNV-1a of `key` mixed with `seed` through a splitmix64 finalizer. Every agent must
/// compute the same value for the same key (mesh rings, collective session tags), so no
/// per-process seeded hash (absl::Hash) here. Pure function; thread-safe.
uint64_t StableHash(uint64_t seed, std::string_view key);

}  // namespace efawatch::common
