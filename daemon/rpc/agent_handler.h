#pragma once

#include "absl/status/statusor.h"
#include "daemon/node_health.h"
#include "lib/common/findings_board.h"
#include "probes/collective/participant.h"
#include "probes/fabric/fabric_service.h"

namespace efawatch::rpc {

/// What the gRPC Agent service asks of the rest of the agent. A plain interface so tests drive
/// the real gRPC server with a handler of their own (dynolog's habit). Methods are called from
/// gRPC threads concurrently and must not block on I/O: return the latest published state.
class AgentHandler {
 public:
  virtual ~AgentHandler() = default;
  virtual common::NodeHealth GetNodeHealth() const = 0;
  /// This node's name, as peers label it.
  virtual std::string NodeName() const { return {}; }

  /// The fabric service (responder + probes), or null when the agent runs without one. The edge
  /// validates and starts probes through it; it is thread-safe and never blocks its caller.
  virtual fabric::FabricService* Fabric() const { return nullptr; }
  /// This agent's side of collective probes, or null when it takes part in none.
  virtual collective::Participant* Collective() const { return nullptr; }
  /// The node's findings board, for streaming. Outlives the gRPC edge.
  virtual common::FindingsBoard& findings() const = 0;
};

}  // namespace efawatch::rpc
