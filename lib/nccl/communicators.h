// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/nccl/types.h"

namespace efawatch::nccl {

/// One live NCCL communicator of a container, as the fleet's rules join it across nodes: NCCL
/// prints the same commId on every rank of a communicator on every node (NCCL >= 2.16), so
/// series of one commId from two agents prove that the communicator spans nodes even when no
/// single log does. Communicators without a commId (older NCCL: only a per-process pointer) or
/// aborted ones have none.
struct CommunicatorSeries {
  std::string id;  // NCCL's commId, "0x..."
  int nranks = -1;
  int nnodes = -1;  // NCCL's nNodes, or the count the container's log proves; -1 unknown
  // The net the container's ranks of this communicator use between nodes: "NET/Socket",
  // "NET/IB", "NET/OFI", "NET/<name>"; from the communicator's channel lines, else from the net
  // its process selected ("Using network X"); "unknown" when neither was printed.
  std::string transport;
  std::string provider;  // the OFI provider ("efa", "tcp;ofi_rxm"), "none", or "unknown"

  bool operator==(const CommunicatorSeries&) const = default;
};

/// The container's live communicators with a commId in `report`, one per id (a pod's ranks of
/// one communicator are one series), most telling first: those on a NET transport, then the
/// newest. `seen` (optional) receives how many communicators with a commId the container had,
/// including those the analyzer evicted to respect max_comms_per_process.
std::vector<CommunicatorSeries> CommunicatorsOf(const Report& report, uint64_t evicted_comms = 0,
                                                uint64_t* seen = nullptr);

}  // namespace efawatch::nccl
