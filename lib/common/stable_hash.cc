// SPDX-License-Identifier: Apache-2.0
#include "lib/common/stable_hash.h"

namespace efawatch::common {

uint64_t StableHash(uint64_t seed, std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a offset basis
  for (unsigned char c : key) {
    h ^= c;
    h *= 0x100000001b3ULL;  // FNV prime
  }
  // FNV alone clusters similar keys (node-1, node-2 ...) on a ring; the splitmix64 finalizer
  // spreads them, and the seed makes each ring an independent permutation.
  uint64_t z = h ^ (seed * 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace efawatch::common
