// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/common/collector_status.h"
#include "lib/common/finding.h"
#include "lib/inspector/summary.h"
#include "lib/nccl/stack.h"
#include "lib/nccl/verdict.h"

namespace efawatch::common {

/// The NCCL verdict of one container (daemon/logs), as the gRPC edge shows it.
struct PodVerdict {
  std::string namespace_name, pod, container;
  nccl::Verdict nccl;
  std::string workload_kind, workload;  // daemon/workloads; empty when unknown
  // Where the lines came from ("container_log", "pod_volume", "container_rootfs", "glob") and
  // from how many files (a Ray session: one per worker process and stream).
  std::string source;
  uint64_t files = 0;
  /// The NCCL stack this run's log showed (lib/nccl/stack.h); Known() false when none.
  nccl::Stack stack;
};

/// What the agent knows about its node at one moment; an immutable value the gRPC edge renders.
struct NodeHealth {
  std::string node;
  std::string agent_version;
  std::string agent_revision;
  std::chrono::system_clock::time_point start_time{};
  std::vector<CollectorState> collectors;
  std::vector<Finding> findings;
  std::string fabric_provider;
  unsigned efa_devices = 0;
  std::vector<PodVerdict> pods;
  /// The NCCL Inspector's communicators on the node (daemon/inspector): progress and time per
  /// operation, the node's side of EfawatchNcclJobStalled and EfawatchNcclStraggler.
  std::vector<inspector::CommSummary> inspector;
};

}  // namespace efawatch::common
