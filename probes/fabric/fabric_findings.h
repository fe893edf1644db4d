// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "lib/common/finding.h"
#include "probes/fabric/endpoint.h"
#include "probes/fabric/fabric_service.h"

namespace efawatch::fabric {

/// What the fabric side knows that can be wrong with the node's fabric setup. A pure function of
/// its inputs so every rule is unit-tested; the app publishes the result on the findings board
/// (owner "fabric") at start and after every probe, so findings clear themselves.
struct FabricFindingInputs {
  bool has_responder = false;
  FabricInfo responder;             ///< Valid when has_responder.
  std::string responder_printable;  ///< Its printable address.
  unsigned efa_devices = 0;         ///< EFA devices the node has (sysfs).
  std::vector<PeerProbeState> peers;
};

/// Rules (kinds are stable):
///  - fabric_not_on_efa (warning): the node has EFA devices but the responder runs on another
///    provider (typically tcp): the agent's probes do not use the NIC. A warning, not critical:
///    it says what libfabric gives this agent, while whether jobs fell back to TCP is the NCCL
///    log analysis' verdict.
///  - fabric_loopback_address (warning): the responder's address is loopback (127.0.0.0/8, ::1,
///    or domain "lo") while peers on other addresses were probed: they cannot reach it.
std::vector<common::Finding> EvaluateFabricFindings(const FabricFindingInputs& in);

/// EFA devices (PCI vendor 0x1d0f) under `sysfs`/class/infiniband. Called with the real "/sys",
/// not the agent's configurable sysfs root: libfabric always enumerates the real one, and the
/// finding compares what libfabric could open with what it did open.
unsigned CountEfaDevicesForLibfabric(const std::string& sysfs = "/sys");

/// True for printable addresses on 127.0.0.0/8 or ::1 (any provider's printable form).
bool IsLoopbackAddress(const std::string& printable);

}  // namespace efawatch::fabric
