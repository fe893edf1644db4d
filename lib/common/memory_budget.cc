// SPDX-License-Identifier: Apache-2.0
#include "lib/common/memory_budget.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace efawatch::common {

MemoryBudget::Lease::Lease(Lease&& other) noexcept : budget_(other.budget_), bytes_(other.bytes_) {
  other.budget_ = nullptr;
  other.bytes_ = 0;
}

MemoryBudget::Lease& MemoryBudget::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (budget_ != nullptr) budget_->Release(bytes_);
    budget_ = other.budget_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

MemoryBudget::Lease::~Lease() {
  if (budget_ != nullptr) budget_->Release(bytes_);
}

absl::StatusOr<MemoryBudget::Lease> MemoryBudget::Reserve(uint64_t bytes, std::string_view what) {
  // Compare-and-swap rather than add-then-check: a refused request must never make another,
  // concurrent one that fits look over budget.
  uint64_t used = in_use_.load();
  do {
    const uint64_t left = total_ - std::min(used, total_);
    if (bytes > left) {
      ++refused_;
      return absl::ResourceExhaustedError(
          absl::StrCat(std::string(what), " needs ", bytes, " bytes of memory; ", left,
                       " of the agent's ", total_, "-byte budget are free (--memory-budget)"));
    }
  } while (!in_use_.compare_exchange_weak(used, used + bytes));
  return Lease(this, bytes);
}

}  // namespace efawatch::common
