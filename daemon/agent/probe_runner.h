// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "daemon/agent/agent_handler.h"
#include "daemon/agent/call_context.h"
#include "daemon/agent/fabric_address_lookup.h"
#include "daemon/agent/target_policy.h"
#include "lib/common/clock.h"
#include "probes/fabric/fabric_service.h"

namespace efawatch::agent {

/// Ping and Bandwidth on demand: checks the target against the policy (no connection to a
/// refused one), validates the options against the fabric service's limits, resolves the peer's
/// fabric address (given, or asked of the peer agent, within the probe's deadline and at most 5 s),
/// then starts the probe. The caller's CallContext bounds the probe: its deadline shortens the
/// probe's own (the probe then ends DEADLINE_EXCEEDED when that is what stopped it, not with a
/// partial result nobody waits for), and its token stops the probe (CANCELLED), which frees the
/// probe's slot in the fabric service at once. Thread-safe; never blocks its caller.
class ProbeRunner {
 public:
  /// `fabric` may be null (the agent found no provider): every probe then fails at once.
  /// `policy`, `lookup` and `clock` (the one CallContext deadlines are on) outlive the runner.
  ProbeRunner(fabric::FabricService* fabric, FabricAddressLookup& lookup,
              const TargetPolicy& policy, const common::Clock& clock)
      : fabric_(fabric), lookup_(lookup), policy_(policy), clock_(clock) {}

  void Ping(const CallContext& call, const ProbeTarget& target, fabric::PingOptions o,
            AgentHandler::PingDone done);
  void Bandwidth(const CallContext& call, const ProbeTarget& target, fabric::BandwidthOptions o,
                 AgentHandler::BandwidthDone done);

 private:
  // Every path ends in exactly one `fail` or one `run`; `run` gets the options bounded by `call`.
  template <typename Options, typename Run, typename Fail>
  void Resolve(const CallContext& call, const ProbeTarget& target, Options o, Run run, Fail fail);
  // Resolves the target, then `start(options, finished)`; a result the caller's deadline or
  // cancellation ended becomes DEADLINE_EXCEEDED or CANCELLED. `done` is called exactly once.
  template <typename Options, typename Done, typename Start>
  void Probe(const CallContext& call, const ProbeTarget& target, Options o, Done done, Start start);
  // CANCELLED or DEADLINE_EXCEEDED when `call` ended the probe, else OK.
  absl::Status EndedByCaller(const CallContext& call, common::ProbeEnd end,
                             bool bounded_by_caller) const;

  // Peer lookups in flight are bounded like running probes (ProbeLimits::max_running's default):
  // each is an outgoing connection a caller causes, and they precede the probe's own slot.
  static constexpr size_t kMaxLookups = 8;

  fabric::FabricService* const fabric_;
  FabricAddressLookup& lookup_;
  std::atomic<size_t> lookups_{0};
  const TargetPolicy& policy_;
  const common::Clock& clock_;
};

}  // namespace efawatch::agent
