// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/ops.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace efawatch::collective {
namespace {

const OpInfo kOps[] = {
    {Op::kAllReduce, "all_reduce", false, true},
    {Op::kAllGather, "all_gather", true, true},
    {Op::kReduceScatter, "reduce_scatter", true, true},
    {Op::kBroadcast, "broadcast", false, false},
};

absl::StatusOr<uint64_t> ParseSize(absl::string_view s) {
  uint64_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k':
        mult = 1ull << 10;
        break;
      case 'M':
      case 'm':
        mult = 1ull << 20;
        break;
      case 'G':
      case 'g':
        mult = 1ull << 30;
        break;
      default:
        break;
    }
    if (mult != 1) s.remove_suffix(1);
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(s, &n) || n == 0) {
    return absl::InvalidArgumentError(absl::StrCat("size '", s, "': expected N[K|M|G] > 0"));
  }
  return n * mult;
}

}  // namespace

double OpInfo::BusFactor(uint32_t nranks) const {
  const double n = nranks;
  switch (op) {
    case Op::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Op::kAllGather:
    case Op::kReduceScatter:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

uint64_t OpInfo::Count(uint64_t size, uint32_t nranks) const {
  return per_rank_chunks ? size / 4 / nranks : size / 4;
}

const OpInfo* FindOp(Op op) {
  for (const OpInfo& o : kOps) {
    if (o.op == op) return &o;
  }
  return nullptr;
}

const OpInfo* FindOp(std::string_view name) {
  for (const OpInfo& o : kOps) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::string OpNames() {
  std::vector<std::string> names;
  for (const OpInfo& o : kOps) names.emplace_back(o.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<std::vector<uint64_t>> ParseSizes(std::string_view spec_in) {
  absl::string_view spec(spec_in.data(), spec_in.size());
  std::vector<uint64_t> out;
  if (spec.find(':') != absl::string_view::npos) {
    std::vector<absl::string_view> parts = absl::StrSplit(spec, ':');
    if (parts.size() > 3) return absl::InvalidArgumentError("sizes: expected MIN:MAX[:FACTOR]");
    auto lo = ParseSize(parts[0]);
    if (!lo.ok()) return lo.status();
    auto hi = ParseSize(parts[1]);
    if (!hi.ok()) return hi.status();
    uint64_t factor = 2;
    if (parts.size() == 3 && (!absl::SimpleAtoi(parts[2], &factor) || factor < 2)) {
      return absl::InvalidArgumentError("sizes: FACTOR must be an integer >= 2");
    }
    if (*lo > *hi) return absl::InvalidArgumentError("sizes: MIN is above MAX");
    for (uint64_t s = *lo; s <= *hi && out.size() < 64; s *= factor) out.push_back(s);
    return out;
  }
  for (absl::string_view item : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    auto s = ParseSize(item);
    if (!s.ok()) return s.status();
    out.push_back(*s);
  }
  if (out.empty()) return absl::InvalidArgumentError("sizes: empty");
  return out;
}

uint64_t RoundSize(uint64_t size, uint32_t nranks, const OpInfo& op) {
  const uint64_t unit = op.per_rank_chunks ? 4ull * nranks : 4ull;
  const uint64_t r = size / unit * unit;
  return r == 0 ? unit : r;
}

}  // namespace efawatch::collective
