// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace efawatch::agent {

/// Asks another agent for its raw fabric address. `done` runs once, on any thread; the call
/// never blocks its caller (gRPC's callback client in the agent: daemon/rpc/peer_client).
class FabricAddressLookup {
 public:
  virtual ~FabricAddressLookup() = default;
  virtual void LookupAsync(const std::string& agent, std::chrono::milliseconds timeout,
                           std::function<void(absl::StatusOr<std::string>)> done) = 0;
};

}  // namespace efawatch::agent
