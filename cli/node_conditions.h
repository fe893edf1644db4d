// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <ostream>
#include <string>

#include "lib/kube/api_client.h"

namespace efawatch::cli {

/// `efawatch node-conditions`: which nodes carry the NodeConditions the agent sets (EfaHealthy,
/// FabricReachable), and with --clear, their removal, for an uninstall: `kubectl delete -k`
/// removes the DaemonSet but not what it wrote into the nodes' status.
struct NodeConditionsArgs {
  bool clear = false;
  std::string node;      ///< only this node; empty: every node
  kube::ApiOptions api;  ///< in-cluster defaults (service account token and CA)
};

/// Lists the nodes (GET /api/v1/nodes, one node by field selector with `node`) and prints one
/// line per node that carries an agent condition. With `clear`, patches each such node's status
/// with a strategic merge that deletes exactly those conditions (kubelet's and other agents'
/// stay) and prints what it cleared. Returns the exit code: 0 when every node is clean (or was
/// cleaned), 1 when a request failed (one line each on `err`: HTTP status and the API server's
/// message, RBAC named on a 403), 2 when there is no API server to ask (outside a pod without
/// --api-server; one line).
int RunNodeConditions(const NodeConditionsArgs& args, std::ostream& out, std::ostream& err);

}  // namespace efawatch::cli
