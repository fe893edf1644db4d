// SPDX-License-Identifier: Apache-2.0
#include "daemon/state/node_rules.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace efawatch::state {

common::NodeHealth NodeHealthOf(const NodeState& state, const AgentIdentity& agent,
                                std::vector<common::CollectorState> collectors,
                                std::vector<common::Finding> findings) {
  common::NodeHealth h;
  h.node = agent.node;
  h.agent_version = agent.version;
  h.agent_revision = agent.revision;
  h.start_time = agent.start_time;
  h.collectors = std::move(collectors);
  h.findings = std::move(findings);
  h.efa_devices = state.efa_devices;
  h.fabric_provider = state.responder.provider;
  for (const logs::ContainerVerdict& v : *state.pods) {
    if (v.nccl_lines == 0 || v.gone) continue;
    common::PodVerdict p{.namespace_name = v.source.namespace_name,
                         .pod = v.source.pod,
                         .container = v.source.container,
                         .nccl = v.nccl,
                         .workload_kind = {},
                         .workload = {},
                         .source = std::string(logs::OriginName(v.source.origin)),
                         .files = v.files,
                         .stack = v.stack};
    if (auto w = state.workloads->find({v.source.namespace_name, v.source.pod});
        w != state.workloads->end()) {
      p.workload_kind = w->second.kind;
      p.workload = w->second.name;
    }
    h.pods.push_back(std::move(p));
  }
  h.inspector = *state.inspector;
  return h;
}

std::vector<MeshPeer> MeshPeersOf(const mesh::MeshSnapshot& snapshot) {
  std::vector<MeshPeer> out;
  out.reserve(snapshot.peers.size());
  for (const mesh::PeerState& p : snapshot.peers) out.push_back({p.node, p.agent, p.up});
  return out;
}

std::vector<std::string> ReachableMeshPeers(const NodeState& state, size_t n) {
  std::vector<std::string> out;
  for (const MeshPeer& p : state.mesh_peers) {
    if (out.size() == n) break;
    if (p.up) out.push_back(p.agent);
  }
  return out;
}

SelfAddress SelfAddressOf(const std::string& pod_ip, const std::string& grpc_listen, int port) {
  SelfAddress a;
  if (!pod_ip.empty()) {
    a.advertised = pod_ip.find(':') != std::string::npos ? absl::StrCat("[", pod_ip, "]:", port)
                                                         : absl::StrCat(pod_ip, ":", port);
    a.dialable = a.advertised;
    return a;
  }
  std::string host = grpc_listen.substr(0, grpc_listen.rfind(':'));
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  if (host == "[::]") host = "[::1]";
  a.dialable = absl::StrCat(host, ":", port);
  return a;
}

}  // namespace efawatch::state
