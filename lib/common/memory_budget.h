// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace efawatch::common {

/// One budget of bytes for what the agent allocates on a caller's behalf (fabric probes'
/// buffers, collective sessions): a request reserves its worst case before anything is
/// allocated, and one that does not fit is refused with RESOURCE_EXHAUSTED saying what it
/// asked and what is left, instead of taking the agent past its pod's memory limit.
///
/// Thread-safe; leases may be released on any thread. The budget outlives its leases.
class MemoryBudget {
 public:
  /// A reservation, released by its destructor. Move-only.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    uint64_t bytes() const { return bytes_; }

   private:
    friend class MemoryBudget;
    Lease(MemoryBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {}
    MemoryBudget* budget_ = nullptr;
    uint64_t bytes_ = 0;
  };

  explicit MemoryBudget(uint64_t total_bytes) : total_(total_bytes) {}

  /// Reserves `bytes` for `what` ("bandwidth probe"), or RESOURCE_EXHAUSTED naming the request,
  /// its size, what is left and the flag that sets the budget.
  absl::StatusOr<Lease> Reserve(uint64_t bytes, std::string_view what);

  uint64_t total() const { return total_; }
  uint64_t in_use() const { return in_use_.load(); }
  uint64_t refused() const { return refused_.load(); }

 private:
  void Release(uint64_t bytes) { in_use_ -= bytes; }

  const uint64_t total_;
  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace efawatch::common
