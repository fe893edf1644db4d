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

void NodeStateBoard::PublishEfaExpected(unsigned efa_expected) {
  Update([&](NodeState& s) { s.efa_expected = efa_expected; });
}

void NodeStateBoard::PublishEfaAdvertised(std::optional<unsigned> efa_advertised) {
  Update([&](NodeState& s) { s.efa_advertised = efa_advertised; });
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

void NodeStateBoard::PublishDoctor(std::vector<doctor::Check> node_checks) {
  Update([&](NodeState& s) { s.doctor = std::move(node_checks); });
}

void NodeStateBoard::PublishSelfPing(SelfPingState self_ping) {
  Update([&](NodeState& s) { s.self_ping = std::move(self_ping); });
}

void NodeStateBoard::PublishInspector(
    std::shared_ptr<const std::vector<inspector::CommSummary>> comms) {
  Update([&](NodeState& s) { s.inspector = std::move(comms); });
}

bool NcclActive(const NodeState& state) {
  return std::ranges::any_of(
      *state.pods, [](const logs::ContainerVerdict& v) { return !v.gone && v.nccl.processes > 0; });
}

}  // namespace efawatch::state
