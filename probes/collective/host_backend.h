// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "probes/collective/backend.h"
#include "probes/fabric/endpoint.h"

namespace efawatch::collective {

/// The host backend: one rank per agent, ring collectives over libfabric (HostRing) on the
/// endpoint options the agent's fabric uses.
BackendFactory HostBackendFactory(const fabric::EndpointOptions& endpoint);

}  // namespace efawatch::collective
