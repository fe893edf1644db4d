// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "lib/inspector/record.h"

namespace efawatch::inspector {

/// Message-size buckets: powers of 4 from 64 KiB (64 KiB, 256 KiB, ... 1 GiB, the last open
/// ended), and one for everything smaller. Bounded on purpose: a size label per distinct size
/// would be as unbounded as the per-op labels the Inspector's own Prometheus mode has.
inline constexpr size_t kSizeBuckets = 9;
size_t SizeBucket(uint64_t bytes);
/// "<64KiB", "64KiB", "256KiB", "1MiB", ..., "1GiB": the bucket's lower bound.
std::string_view SizeBucketLabel(size_t bucket);
/// The buckets of 64 MiB and more: where a cross-node collective is bandwidth-bound, so its
/// busbw compares with the fabric's (the "large messages" of the rules and `analyze`).
inline constexpr size_t kFirstLargeBucket = 6;

/// Upper bounds of the busbw histogram in bytes a second: 0.5 GB/s doubling to 512 GB/s (a few
/// GB/s: TCP; tens: one EFA or a p4d's four; hundreds: NVLink inside a node).
inline constexpr std::array<double, 11> kBusbwBounds = {0.5e9, 1e9,  2e9,   4e9,   8e9,  16e9,
                                                        32e9,  64e9, 128e9, 256e9, 512e9};

/// Operations of one (collective, size bucket) of one communicator.
struct OpStats {
  std::array<uint64_t, kBusbwBounds.size()> buckets{};  // per bound, not cumulative
  uint64_t count = 0;
  double busbw_sum_bytes_per_second = 0;
  double exec_seconds_sum = 0;
  uint64_t bytes_sum = 0;
};

struct OpKey {
  std::string op;  // "AllReduce", ..., "Send", "Recv"
  size_t size_bucket = 0;
  bool operator<(const OpKey& o) const {
    return std::tie(op, size_bucket) < std::tie(o.op, o.size_bucket);
  }
};

struct CommStats {
  std::string comm_id;    // "" for Prometheus mode >= 2.30, which names none
  std::string comm_name;  // "" when the record does not say
  int n_ranks = -1;
  int nnodes = -1;
  int64_t last_seen_ns = 0;  // the caller's clock
  std::map<OpKey, OpStats> ops;
};

/// The key of an op's communicator: its id, or (Prometheus mode >= 2.30, which writes none) its
/// name, "name:<comm_name>", which no id ("0x...") can equal.
std::string CommKey(const InspectorOp& op);

/// The operations of one process or pod, per communicator, (collective, size bucket): counts
/// only, so memory is bounded by the caps whatever the number of records. Not thread-safe.
class CommTable {
 public:
  struct Limits {
    size_t max_comms = 32;          // --max-communicators-per-pod
    size_t max_keys_per_comm = 32;  // (collective, size bucket) pairs of one communicator
  };
  explicit CommTable(Limits limits) : limits_(limits) {}
  CommTable() : CommTable(Limits{}) {}

  /// Counts `op` at `now_ns`; false when a cap left it out (counted in dropped()).
  bool Add(const InspectorOp& op, int64_t now_ns);
  /// Forgets communicators not seen since `cutoff_ns` (torn down, or the job is gone).
  void DropSeenBefore(int64_t cutoff_ns);

  /// By CommKey(op).
  const std::map<std::string, CommStats>& comms() const { return comms_; }
  uint64_t dropped() const { return dropped_; }

 private:
  Limits limits_;
  std::map<std::string, CommStats> comms_;  // by CommKey
  uint64_t dropped_ = 0;
};

}  // namespace efawatch::inspector
