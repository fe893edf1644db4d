// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/signals/kube_signals.h"
#include "daemon/state/node_state.h"
#include "lib/common/finding.h"

namespace efawatch::signals {

/// What the Kubernetes signals should say now, from the node's state and findings:
/// - an Event per pod container whose NCCL runs over TCP by fallback (not by the job's own
///   choice: NCCL_IB_DISABLE=1 or NCCL_NET=Socket is not news to its owner), misuses loopback,
///   or misses its net plugin; only containers with a uid (container logs) can be named;
/// - EfaHealthy, False on a critical EFA device finding, set where EFA is present or a fault
///   says it should be; FabricReachable, False when the ping mesh suspects this node, set where a
///   mesh runs.
Observation Observe(const state::NodeState& state, const std::vector<common::Finding>& findings);

/// "efa_admin_queue_stuck" -> "EfaAdminQueueStuck": a NodeCondition reason is CamelCase.
std::string CamelCase(std::string_view kind);

}  // namespace efawatch::signals
