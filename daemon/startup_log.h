// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "daemon/agent/target_policy.h"
#include "daemon/config.h"
#include "daemon/efa/efa_monitor.h"
#include "daemon/inspector/inspector_collector.h"
#include "daemon/logs/tailer.h"
#include "probes/fabric/fabric_service.h"

// The agent's start-up lines: one info line per module saying what it will watch and how, so an
// operator reading the first lines of a pod's log knows its configuration took effect. Apart
// from the composition root, which builds and wires modules and words nothing itself.
namespace efawatch::startup {

/// "log analysis: pod log root ..." (a warning when the root does not exist yet).
void LogPodLogs(const Config& c);
/// The Inspector's sources and the network bandwidth it compares against.
void LogInspector(const inspector::InspectorCollectorOptions& o);
/// The EFA devices found (and how many are expected), or that there are none.
void LogEfa(const Config& c, unsigned devices, const efa::EfaMonitorOptions& o);
/// The fabric responder's provider, address and sender rule, or that it is off.
void LogResponder(const fabric::Responder* r);
/// The address blocks probes may go to.
void LogTargets(const agent::TargetPolicyOptions& t);
/// Both edges: addresses, bound ports and their security.
void LogEdges(const Config& c, int metrics_port, int grpc_port);

}  // namespace efawatch::startup
