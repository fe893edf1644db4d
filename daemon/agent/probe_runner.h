// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "daemon/agent/agent_handler.h"
#include "daemon/agent/fabric_address_lookup.h"
#include "daemon/agent/target_policy.h"
#include "probes/fabric/fabric_service.h"

namespace efawatch::agent {

/// Ping and Bandwidth on demand: checks the target against the policy (no connection to a
/// refused one), validates the options against the fabric service's limits, resolves the peer's
/// fabric address (given, or asked of the peer agent, within the probe's deadline and at most 5 s),
/// then starts the probe. Thread-safe; never blocks its caller.
class ProbeRunner {
 public:
  /// `fabric` may be null (the agent found no provider): every probe then fails at once.
  /// `policy` and `lookup` outlive the runner.
  ProbeRunner(fabric::FabricService* fabric, FabricAddressLookup& lookup,
              const TargetPolicy& policy)
      : fabric_(fabric), lookup_(lookup), policy_(policy) {}

  void Ping(const agent::ProbeTarget& target, fabric::PingOptions o,
            agent::AgentHandler::PingDone done);
  void Bandwidth(const agent::ProbeTarget& target, fabric::BandwidthOptions o,
                 agent::AgentHandler::BandwidthDone done);

 private:
  // Every path ends in exactly one `fail` or one `run`.
  template <typename Options, typename Run, typename Fail>
  void Resolve(const agent::ProbeTarget& target, Options o, Run run, Fail fail);

  // Peer lookups in flight are bounded like running probes (ProbeLimits::max_running's default):
  // each is an outgoing connection a caller causes, and they precede the probe's own slot.
  static constexpr size_t kMaxLookups = 8;

  fabric::FabricService* const fabric_;
  FabricAddressLookup& lookup_;
  std::atomic<size_t> lookups_{0};
  const TargetPolicy& policy_;
};

}  // namespace efawatch::agent
