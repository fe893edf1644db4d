// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <vector>

#include "daemon/logs/source.h"
#include "lib/nccl/communicators.h"
#include "lib/nccl/stack.h"
#include "lib/nccl/verdict.h"

namespace efawatch::logs {

using nccl::CommunicatorSeries;

/// One container's current run: where its log is, how much of it was read, and its NCCL verdict.
struct ContainerVerdict {
  LogSource source;
  nccl::Verdict nccl;
  /// The stack this run's lines showed, with what the checkpoint kept from before an agent
  /// restart; Known() false when neither shows any (then no stack series is exported rather
  /// than one that differs from the job's).
  nccl::Stack stack;
  uint64_t lines = 0, nccl_lines = 0, malformed_lines = 0;
  /// Files this run was read from: 1 for a container log, a Ray session's worker files, ...
  uint64_t files = 0;
  bool gone = false;
  /// Live communicators with a commId, by id, at most the pod's share of
  /// PodAnalysisOptions::max_communicators_per_pod.
  std::vector<CommunicatorSeries> communicators;
};

}  // namespace efawatch::logs
