#include "probes/mesh/mesh_collector.h"

#include <set>

namespace efawatch::mesh {

absl::Status MeshCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                    common::MetricSink& sink) {
  const MeshSnapshot s = mesh_.Snapshot();
  sink.Add("efawatch_mesh_peers_discovered", {{"source", s.source}},
           static_cast<double>(s.discovered));
  sink.Add("efawatch_mesh_discovery_errors_total", {{"source", s.source}},
           static_cast<double>(s.discovery_errors));
  sink.Add("efawatch_mesh_rounds_total", {}, static_cast<double>(s.rounds));
  sink.Add("efawatch_mesh_peers_expected", {}, static_cast<double>(s.expected));
  sink.Add("efawatch_mesh_peers_reachable", {}, static_cast<double>(s.reachable));
  sink.Add("efawatch_mesh_self_suspect", {}, s.self_suspect ? 1 : 0);
  // Two agents may claim one node name for a moment (a DaemonSet rollout): one series per label
  // set is what the exposition format allows, so the first wins.
  std::set<std::string> seen;
  for (const PeerState& p : s.peers) {
    if (!seen.insert(p.node).second) continue;
    const common::Labels labels = {{"peer_node", p.node}};
    sink.Add("efawatch_mesh_peer_sent_total", labels, static_cast<double>(p.sent));
    sink.Add("efawatch_mesh_peer_lost_total", labels, static_cast<double>(p.lost));
    sink.Add("efawatch_mesh_peer_up", labels, p.up ? 1 : 0);
    common::HistogramSample h;
    h.bounds = RttBounds();
    h.cumulative = p.rtt_buckets;
    h.cumulative.resize(h.bounds.size(), p.rtt_count);
    h.sum = p.rtt_sum_seconds;
    h.count = p.rtt_count;
    sink.AddHistogram("efawatch_mesh_peer_rtt_seconds", labels, h);
  }
  return absl::OkStatus();
}

}  // namespace efawatch::mesh
