#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "daemon/agent/fabric_address_lookup.h"
#include "daemon/rpc/agent_handler.h"
#include "probes/fabric/fabric_service.h"

namespace efawatch::agent {

/// Ping and Bandwidth on demand: validates the options against the fabric service's limits,
/// resolves the peer's fabric address (given, or asked of the peer agent, within the probe's
/// deadline and at most 5 s), then starts the probe. Thread-safe; never blocks its caller.
class ProbeRunner {
 public:
  /// `fabric` may be null (the agent found no provider): every probe then fails at once.
  ProbeRunner(fabric::FabricService* fabric, FabricAddressLookup& lookup)
      : fabric_(fabric), lookup_(lookup) {}

  void Ping(const rpc::ProbeTarget& target, fabric::PingOptions o,
            rpc::AgentHandler::PingDone done);
  void Bandwidth(const rpc::ProbeTarget& target, fabric::BandwidthOptions o,
                 rpc::AgentHandler::BandwidthDone done);

 private:
  // Every path ends in exactly one `fail` or one `run`.
  template <typename Options, typename Run, typename Fail>
  void Resolve(const rpc::ProbeTarget& target, Options o, Run run, Fail fail);

  fabric::FabricService* const fabric_;
  FabricAddressLookup& lookup_;
};

}  // namespace efawatch::agent
