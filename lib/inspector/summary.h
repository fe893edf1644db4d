// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace efawatch::inspector {

/// One (collective, size class) of a communicator: how many operations the agent counted and
/// their total time (the mean time per operation is what EfawatchNcclStraggler compares with
/// the job's median across nodes).
struct OpSummary {
  std::string collective;   // "AllReduce", ...
  std::string size_bucket;  // SizeBucketLabel()
  uint64_t count = 0;
  double exec_seconds = 0;

  bool operator==(const OpSummary&) const = default;
};

/// One communicator of a pod as the agent's NCCL Inspector collector sees it now: the node-local
/// facts behind the fleet's stall and straggler alerts, for `efawatch status`. Plain data.
struct CommSummary {
  std::string namespace_name, pod;  // "" for --inspector-dir files no pod claims
  std::string comm_id, comm_name;
  int64_t last_progress_unix_us = 0;  // 0: no progress time known
  bool stale = false;                 // older than --inspector-stale-after-seconds
  std::vector<OpSummary> ops;

  bool operator==(const CommSummary&) const = default;
};

}  // namespace efawatch::inspector
