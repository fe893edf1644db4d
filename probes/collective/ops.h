// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "probes/collective/types.h"

namespace efawatch::collective {

/// One collective's bookkeeping, as nccl-tests does it (../shared reference: nccl-tests section).
/// Sizes are nccl-tests' S in bytes; elements are float32.
struct OpInfo {
  Op op;
  std::string_view name;  ///< all_reduce, all_gather, reduce_scatter, broadcast
  bool per_rank_chunks;   ///< S covers all ranks (count = S / 4 / n) rather than one (S / 4)
  bool host;              ///< The host backend implements it.
  /// busbw = algbw x factor: 2(n-1)/n for all_reduce, (n-1)/n for all_gather and
  /// reduce_scatter, 1 for broadcast.
  double BusFactor(uint32_t nranks) const;
  /// Elements per rank for a size S: what nccl-tests prints as `count`.
  uint64_t Count(uint64_t size, uint32_t nranks) const;
};

const OpInfo* FindOp(Op op);
const OpInfo* FindOp(std::string_view name);
/// "all_reduce, all_gather, ..." for messages.
std::string OpNames();

/// Parses "1M:64M" (powers of two, x2 like nccl-tests -f 2), "1M:64M:4" (factor 4), or a list
/// "4K,1M,16M". Suffixes K, M, G are binary.
absl::StatusOr<std::vector<uint64_t>> ParseSizes(std::string_view spec);

/// S rounded so that every rank's chunk is a whole number of float32 elements.
uint64_t RoundSize(uint64_t size, uint32_t nranks, const OpInfo& op);

}  // namespace efawatch::collective
