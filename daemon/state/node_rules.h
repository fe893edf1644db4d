// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "daemon/agent/node_health.h"
#include "daemon/state/node_state.h"
#include "lib/common/collector_status.h"
#include "lib/common/finding.h"
#include "probes/mesh/mesh.h"

namespace efawatch::state {

/// Who is answering, for the node health answer.
struct AgentIdentity {
  std::string node;
  std::string version;
  std::string revision;
  std::chrono::system_clock::time_point start_time{};
};

/// The node's health as GetNodeHealth answers it: the agent, its collectors and findings, the
/// EFA devices and the responder's provider, and each container with NCCL lines that is not
/// gone, with its workload when workload identity knows it.
common::NodeHealth NodeHealthOf(const NodeState& state, const AgentIdentity& agent,
                                std::vector<common::CollectorState> collectors,
                                std::vector<common::Finding> findings);

/// The first `n` mesh peers (in the mesh's order, by node name) that answered its latest round:
/// the scheduled collective probe's peers with --collective-probe-peers=mesh:N. Each node's mesh
/// peers differ (consistent hashing), so the fleet's probes spread over it.
std::vector<std::string> ReachableMeshPeers(const NodeState& state, size_t n);

/// The mesh's latest round as the board keeps it.
std::vector<MeshPeer> MeshPeersOf(const mesh::MeshSnapshot& snapshot);

/// How this agent is reached by other agents.
struct SelfAddress {
  /// host:port from --pod-ip, what peers see; empty without a pod IP (the mesh then knows
  /// itself by node name only).
  std::string advertised;
  /// advertised, else the address gRPC listens on (loopback when it listens on every address):
  /// what this agent dials to reach itself (the scheduled collective's rank 0).
  std::string dialable;
};
/// From --pod-ip, --grpc-listen and the port gRPC bound; derived once at start.
SelfAddress SelfAddressOf(const std::string& pod_ip, const std::string& grpc_listen, int port);

}  // namespace efawatch::state
