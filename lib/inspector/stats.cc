// SPDX-License-Identifier: Apache-2.0
#include "lib/inspector/stats.h"

#include <algorithm>

namespace efawatch::inspector {

size_t SizeBucket(uint64_t bytes) {
  constexpr uint64_t kFirst = 64 << 10;
  if (bytes < kFirst) return 0;
  size_t b = 1;
  for (uint64_t bound = kFirst * 4; bytes >= bound && b < kSizeBuckets - 1; bound *= 4) ++b;
  return b;
}

std::string_view SizeBucketLabel(size_t bucket) {
  static constexpr std::array<std::string_view, kSizeBuckets> kLabels = {
      "<64KiB", "64KiB", "256KiB", "1MiB", "4MiB", "16MiB", "64MiB", "256MiB", "1GiB"};
  return kLabels[std::min(bucket, kSizeBuckets - 1)];
}

std::string CommKey(const InspectorOp& op) {
  return op.comm_id.empty() ? "name:" + op.comm_name : op.comm_id;
}

bool CommTable::Add(const InspectorOp& op, int64_t now_ns) {
  std::string key = CommKey(op);
  auto it = comms_.find(key);
  if (it == comms_.end()) {
    if (comms_.size() >= limits_.max_comms) {
      ++dropped_;
      return false;
    }
    it = comms_.emplace(std::move(key), CommStats{}).first;
    it->second.comm_id = op.comm_id;
    it->second.comm_name = op.comm_name;
  }
  CommStats& c = it->second;
  if (!op.comm_name.empty()) c.comm_name = op.comm_name;
  if (op.n_ranks > 0) c.n_ranks = op.n_ranks;
  if (op.nnodes > 0) c.nnodes = op.nnodes;
  c.last_seen_ns = now_ns;
  OpKey op_key{op.op, SizeBucket(op.msg_size_bytes)};
  auto stats = c.ops.find(op_key);
  if (stats == c.ops.end()) {
    if (c.ops.size() >= limits_.max_keys_per_comm) {
      ++dropped_;
      return false;
    }
    stats = c.ops.emplace(std::move(op_key), OpStats{}).first;
  }
  OpStats& s = stats->second;
  const double bw = op.busbw_gbs * 1e9;
  const auto bound = std::lower_bound(kBusbwBounds.begin(), kBusbwBounds.end(), bw);
  if (bound != kBusbwBounds.end()) ++s.buckets[static_cast<size_t>(bound - kBusbwBounds.begin())];
  ++s.count;
  s.busbw_sum_bytes_per_second += bw;
  s.exec_seconds_sum += op.exec_time_us * 1e-6;
  s.bytes_sum += op.msg_size_bytes;
  return true;
}

void CommTable::DropSeenBefore(int64_t cutoff_ns) {
  std::erase_if(comms_, [&](const auto& e) { return e.second.last_seen_ns < cutoff_ns; });
}

}  // namespace efawatch::inspector
