// SPDX-License-Identifier: Apache-2.0
#include "daemon/state/node_state.h"

#include <algorithm>

namespace efawatch::state {

std::shared_ptr<const NodeState> NodeStateBoard::Snapshot() const {
  std::lock_guard lock(mu_);
  return state_;
}

void NodeStateBoard::PublishPods(std::shared_ptr<const std::vector<logs::ContainerVerdict>> pods) {
  Update([&](NodeState& s) { s.pods = std::move(pods); });
}

void NodeStateBoard::PublishWorkloads(std::shared_ptr<const workloads::WorkloadTable> workloads) {
  Update([&](NodeState& s) { s.workloads = std::move(workloads); });
}

void NodeStateBoard::PublishEfa(unsigned efa_devices) {
  Update([&](NodeState& s) { s.efa_devices = efa_devices; });
}

void NodeStateBoard::PublishResponder(ResponderState responder) {
  Update([&](NodeState& s) { s.responder = std::move(responder); });
}

void NodeStateBoard::PublishMesh(std::vector<MeshPeer> peers) {
  Update([&](NodeState& s) {
    s.mesh_running = true;
    s.mesh_peers = std::move(peers);
  });
}

bool NcclActive(const NodeState& state) {
  return std::ranges::any_of(
      *state.pods, [](const logs::ContainerVerdict& v) { return !v.gone && v.nccl.processes > 0; });
}

}  // namespace efawatch::state
