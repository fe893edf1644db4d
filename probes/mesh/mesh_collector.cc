// SPDX-License-Identifier: Apache-2.0
#include "probes/mesh/mesh_collector.h"

#include <set>

namespace efawatch::mesh {

absl::Status MeshCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                    common::MetricSink& sink) {
  const MeshSnapshot s = mesh_.Snapshot();
  sink.Add(metrics::M::kMeshPeersDiscovered, {{"source", s.source}},
           static_cast<double>(s.discovered));
  sink.Add(metrics::M::kMeshDiscoveryErrorsTotal, {{"source", s.source}},
           static_cast<double>(s.discovery_errors));
  sink.Add(metrics::M::kMeshRoundsTotal, {}, static_cast<double>(s.rounds));
  sink.Add(metrics::M::kMeshPeersExpected, {}, static_cast<double>(s.expected));
  sink.Add(metrics::M::kMeshPeersReachable, {}, static_cast<double>(s.reachable));
  sink.Add(metrics::M::kMeshSelfSuspect, {}, s.self_suspect ? 1 : 0);
  // Two agents may claim one node name for a moment (a DaemonSet rollout): one series per label
  // set is what the exposition format allows, so the first wins.
  std::set<std::string> seen;
  for (const PeerState& p : s.peers) {
    if (!seen.insert(p.node).second) continue;
    const common::Labels labels = {{"peer_node", p.node}};
    sink.Add(metrics::M::kMeshPeerSentTotal, labels, static_cast<double>(p.sent));
    sink.Add(metrics::M::kMeshPeerLostTotal, labels, static_cast<double>(p.lost));
    sink.Add(metrics::M::kMeshPeerUp, labels, p.up ? 1 : 0);
    common::HistogramSample h;
    h.bounds = RttBounds();
    h.cumulative = p.rtt_buckets;
    h.cumulative.resize(h.bounds.size(), p.rtt_count);
    h.sum = p.rtt_sum_seconds;
    h.count = p.rtt_count;
    sink.AddHistogram(metrics::M::kMeshPeerRttSeconds, labels, h);
  }
  return absl::OkStatus();
}

}  // namespace efawatch::mesh
