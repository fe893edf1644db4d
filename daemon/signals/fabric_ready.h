// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/signals/kube_signals.h"
#include "daemon/state/node_state.h"
#include "lib/doctor/doctor.h"

// FabricReady: the NodeCondition that says a node may take training pods, for Kubernetes' Node
// Readiness Controller (a NodeReadinessRule keeps a taint on the node until the condition is
// True: docs/node-readiness.md). True only once every check this agent can make has passed;
// False, with the first reason that holds, otherwise. A plain function over plain inputs:
// thread-safe, no I/O.
namespace efawatch::signals {

/// Kept under its old name: the state is now on the node-state board.
using SelfPingState = state::SelfPingState;

struct FabricReadyInputs {
  /// The node's doctor checks at the latest run; nullopt before the first run.
  std::optional<std::vector<doctor::Check>> doctor;
  unsigned efa_devices = 0;   ///< found under /sys/class/infiniband
  unsigned efa_expected = 0;  ///< what the instance type (or the configuration) expects; 0: unknown
  SelfPingState self_ping;
};

/// The FabricReady condition (kube::kFabricReady) for `in`. Reasons, in the order they are
/// judged: DoctorPending, DoctorFailing, NoEfaDevices, EfaDevicesMissing, FabricResponderOff,
/// SelfPingPending, SelfPingFailed; FabricChecksPassed when True.
NodeCondition FabricReadyCondition(const FabricReadyInputs& in);

/// FabricReady from the node's state, where EFA is or should be (devices found, or the instance
/// type expects some); nullopt elsewhere: a node without EFA has no fabric to gate on.
std::optional<NodeCondition> FabricReadyOf(const state::NodeState& node);

}  // namespace efawatch::signals
