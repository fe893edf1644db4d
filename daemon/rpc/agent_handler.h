#pragma once

#include "daemon/common/node_health.h"

namespace efawatch::rpc {

/// What the gRPC Agent service asks of the rest of the agent. A plain interface so tests drive
/// the real gRPC server with a handler of their own (dynolog's habit). Methods are called from
/// gRPC threads concurrently and must not block on I/O: return the latest published state.
class AgentHandler {
 public:
  virtual ~AgentHandler() = default;
  virtual common::NodeHealth GetNodeHealth() const = 0;
};

}  // namespace efawatch::rpc
