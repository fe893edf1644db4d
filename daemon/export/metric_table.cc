#include "daemon/export/metric_table.h"

#include <algorithm>
#include <string>

#include "daemon/efa/counters.h"

namespace efawatch::exporter {
namespace {

// Label cardinality is bounded by design: collectors, devices and ports are few per node, and
// per-pod series are deleted when the pod's logs go away. Never label by pid, rank or file.
std::vector<MetricDef> BuildTable() {
  using T = MetricType;
  std::vector<MetricDef> t = {
      // Agent itself.
      {"efawatch_build_info",
       T::kGauge,
       "Always 1; labels carry the agent version, git revision and the NCCL version the NCCL "
       "probe was built against (empty when built without CUDA).",
       {"version", "revision", "nccl"}},
      {"efawatch_start_time_seconds", T::kGauge, "Unix time at which the agent started.", {}},
      {"efawatch_collector_success",
       T::kGauge,
       "1 when the collector's last run at this scrape succeeded, 0 when it failed or ran out of "
       "its time budget.",
       {"collector"}},
      {"efawatch_collector_duration_seconds",
       T::kGauge,
       "Time the collector took at this scrape.",
       {"collector"}},
      {"efawatch_findings",
       T::kGauge,
       "Current findings on this node by kind and severity (self-clearing).",
       {"kind", "severity"}},
      // Process.
      {"efawatch_process_resident_memory_bytes",
       T::kGauge,
       "Resident set size of the agent process.",
       {}},
      {"efawatch_process_cpu_seconds_total",
       T::kCounter,
       "User and system CPU time the agent process has used.",
       {}},
      {"efawatch_process_open_fds", T::kGauge, "File descriptors the agent process has open.", {}},
      // Fabric responder and probes (probes/fabric). Per-peer series are bounded by the fabric
      // service's peer table (64 peers, least recently probed dropped with its series).
      {"efawatch_fabric_provider_info",
       T::kGauge,
       "Always 1; the libfabric provider, fabric and domain the fabric responder opened.",
       {"provider", "fabric", "domain"}},
      {"efawatch_fabric_responder_messages_total",
       T::kCounter,
       "Messages the fabric responder received, by kind (ping, bandwidth, garbage, error).",
       {"kind"}},
      {"efawatch_fabric_ping_rtt_seconds",
       T::kGauge,
       "Round-trip time of the latest ping probe to the peer (quantile: 0 = min, 0.5, 0.9, 0.99, "
       "1 = max).",
       {"peer", "quantile"}},
      {"efawatch_fabric_ping_loss_ratio",
       T::kGauge,
       "Share of the latest ping probe's messages lost or failed (0..1).",
       {"peer"}},
      {"efawatch_fabric_bandwidth_bytes_per_second",
       T::kGauge,
       "Throughput of the latest bandwidth probe to the peer, per message size and direction.",
       {"peer", "size", "direction"}},
      {"efawatch_fabric_probe_last_run_timestamp_seconds",
       T::kGauge,
       "Unix time of the latest fabric probe to the peer.",
       {"peer"}},
      {"efawatch_fabric_probe_failures_total",
       T::kCounter,
       "Fabric probes to the peer that did not complete (timeout, dead peer, cancel).",
       {"peer"}},
      // RDMA and EFA devices (daemon/efa). Known hw counters are added below from the EFA
      // driver's counter list.
      {"efawatch_efa_devices",
       T::kGauge,
       "EFA devices found under the configured sysfs root's class/infiniband.",
       {}},
      {"efawatch_efa_devices_expected",
       T::kGauge,
       "EFA devices this node's instance type should have (only when the type is known).",
       {}},
      {"efawatch_rdma_devices",
       T::kGauge,
       "RDMA devices of any kind found under the configured sysfs root's class/infiniband.",
       {}},
      {"efawatch_rdma_device_info",
       T::kGauge,
       "Always 1; labels describe the RDMA device (EFA or not), its PCI address, NUMA node, local "
       "CPUs, uverbs device and GPUDirect peer-to-peer provider.",
       {"device", "driver", "efa", "pci_address", "numa_node", "local_cpus", "uverbs", "p2p"}},
      {"efawatch_rdma_hw_stat",
       T::kGauge,
       "A hw_counters value whose name efawatch does not know (port 0: device scope).",
       {"device", "port", "counter"}},
      {"efawatch_rdma_hw_read_errors",
       T::kGauge,
       "hw_counters files of the device that failed to read at this scrape (values unknown, not "
       "exported).",
       {"device"}},
      {"efawatch_rdma_port_state",
       T::kGauge,
       "Port state id (4 = ACTIVE; EFA always reports 4).",
       {"device", "port"}},
      {"efawatch_rdma_port_physical_state",
       T::kGauge,
       "Port physical state id (5 = LinkUp; EFA always reports 5).",
       {"device", "port"}},
      {"efawatch_rdma_port_rate_bytes_per_second",
       T::kGauge,
       "Port rate as the driver reports it (a capability, not a measurement).",
       {"device", "port"}},
      {"efawatch_rdma_device_reads_total",
       T::kCounter,
       "Reads of a device's sysfs counters (cached: at most one per device per second).",
       {}},
      {"efawatch_rdma_hw_resets_total",
       T::kCounter,
       "hw counters seen going backwards (driver reload or device reset).",
       {}},
      {"efawatch_net_receive_bytes_total",
       T::kCounter,
       "Bytes received by the host's ethernet interface (from net/dev).",
       {"interface"}},
      {"efawatch_net_transmit_bytes_total",
       T::kCounter,
       "Bytes transmitted by the host's ethernet interface (from net/dev).",
       {"interface"}},
      // Pod logs and their NCCL verdicts (daemon/logs). Per-container series are removed a
      // grace period after the container's logs disappear.
      {"efawatch_nccl_tcp_fallback",
       T::kGauge,
       "1 when the container's NCCL inter-node traffic runs over TCP (Socket transport, or OFI "
       "on a tcp/sockets provider) instead of EFA or InfiniBand RDMA.",
       {"namespace", "pod", "container"}},
      {"efawatch_nccl_loopback_misuse",
       T::kGauge,
       "1 when NCCL bootstraps or sends over the loopback interface in a job that needs more, or "
       "NCCL_SOCKET_IFNAME selects lo.",
       {"namespace", "pod", "container"}},
      {"efawatch_nccl_net_plugin_missing",
       T::kGauge,
       "1 when the NCCL net plugin (e.g. aws-ofi-nccl) was not found or failed to initialize.",
       {"namespace", "pod", "container"}},
      {"efawatch_nccl_gdr_disabled",
       T::kGauge,
       "1 when NET transport runs with GPUDirect RDMA off where it could be on.",
       {"namespace", "pod", "container"}},
      {"efawatch_nccl_info",
       T::kGauge,
       "Always 1; labels name the network, inter-node transport, OFI provider and NCCL version "
       "the container's NCCL uses.",
       {"namespace", "pod", "container", "network", "transport", "ofi_provider", "nccl_version"}},
      {"efawatch_nccl_processes",
       T::kGauge,
       "NCCL processes seen in the container's current run.",
       {"namespace", "pod", "container"}},
      {"efawatch_nccl_communicators",
       T::kGauge,
       "NCCL communicators seen in the container's current run.",
       {"namespace", "pod", "container"}},
      {"efawatch_nccl_warnings_total",
       T::kCounter,
       "NCCL WARN records in the container's logs.",
       {"namespace", "pod", "container"}},
      {"efawatch_nccl_errors_total",
       T::kCounter,
       "NCCL errors (failed calls, aborts, completion errors) in the container's logs.",
       {"namespace", "pod", "container"}},
      {"efawatch_logs_lines_total",
       T::kCounter,
       "Log lines read from the container.",
       {"namespace", "pod", "container"}},
      {"efawatch_logs_nccl_lines_total",
       T::kCounter,
       "Log lines of the container that hold NCCL records.",
       {"namespace", "pod", "container"}},
      {"efawatch_logs_files_watched", T::kGauge, "Container log files being followed.", {}},
      {"efawatch_logs_read_bytes_total", T::kCounter, "Bytes read from container logs.", {}},
      {"efawatch_logs_read_lines_total", T::kCounter, "Lines read from container logs.", {}},
      {"efawatch_logs_malformed_lines_total",
       T::kCounter,
       "Candidate NCCL lines that could not be parsed (skipped).",
       {}},
      {"efawatch_logs_rotations_total", T::kCounter, "Log rotations followed.", {}},
      {"efawatch_logs_truncations_total",
       T::kCounter,
       "Log files found truncated under the reader (copytruncate).",
       {}},
      {"efawatch_logs_truncated_lines_total",
       T::kCounter,
       "Lines longer than the line limit, cut.",
       {}},
      {"efawatch_logs_checkpoint_writes_total", T::kCounter, "Checkpoint files written.", {}},
      {"efawatch_logs_files_refused_total",
       T::kCounter,
       "Log files not read: symlinks out of the pod log root, or unreadable.",
       {}},
      {"efawatch_logs_files_over_cap_total",
       T::kCounter,
       "Log files not followed because the file cap was reached.",
       {}},
      {"efawatch_logs_state_evicted_total",
       T::kCounter,
       "Containers whose analysis state was evicted to stay within bounds.",
       {}},
      // Fleet ping mesh (probes/mesh). peer_node is bounded by the fan-out plus the topology
      // group cap: an agent pings at most that many peers, and drops a peer's series when it
      // stops pinging it.
      {"efawatch_mesh_peer_rtt_seconds",
       T::kHistogram,
       "Round-trip times of mesh pings to the peer node (received messages only).",
       {"peer_node"}},
      {"efawatch_mesh_peer_sent_total",
       T::kCounter,
       "Mesh ping messages sent to the peer node (a round whose lookup failed counts all its "
       "messages as sent and lost).",
       {"peer_node"}},
      {"efawatch_mesh_peer_lost_total",
       T::kCounter,
       "Mesh ping messages to the peer node that got no answer in time.",
       {"peer_node"}},
      {"efawatch_mesh_peer_up",
       T::kGauge,
       "1 when the latest mesh round to the peer node got at least one answer.",
       {"peer_node"}},
      {"efawatch_mesh_peers_expected",
       T::kGauge,
       "Peers this agent is assigned to ping (fan-out plus topology group).",
       {}},
      {"efawatch_mesh_peers_reachable",
       T::kGauge,
       "Assigned peers that answered in the latest round.",
       {}},
      {"efawatch_mesh_peers_discovered",
       T::kGauge,
       "Agents the latest successful discovery listed, this one included when listed.",
       {"source"}},
      {"efawatch_mesh_discovery_errors_total",
       T::kCounter,
       "Peer discoveries that failed (the previous peer list is kept).",
       {"source"}},
      {"efawatch_mesh_rounds_total", T::kCounter, "Mesh ping rounds completed.", {}},
      {"efawatch_mesh_self_suspect",
       T::kGauge,
       "1 when most of this agent's own peers failed in the latest round: this node's link, not "
       "its peers, is the likely fault.",
       {}},
      // Fabric responder.
      {"efawatch_fabric_responder_up",
       T::kGauge,
       "1 when the fabric responder runs; labels name the libfabric provider and fabric in use.",
       {"provider", "fabric"}},
  };
  // Names are kept as the driver spells them, so they stay recognisable next to sysfs.
  static const std::vector<std::string> efa_names = [] {
    std::vector<std::string> n;
    for (const auto& c : efa::KnownCounters()) n.push_back(efa::MetricNameFor(c.name));
    return n;
  }();
  for (size_t i = 0; i < efa::KnownCounters().size(); ++i) {
    const auto& c = efa::KnownCounters()[i];
    t.push_back({efa_names[i], T::kCounter, c.help,
                 c.scope == efa::Scope::kPort ? std::vector<std::string_view>{"device", "port"}
                                              : std::vector<std::string_view>{"device"}});
  }
  std::sort(t.begin(), t.end(),
            [](const MetricDef& a, const MetricDef& b) { return a.name < b.name; });
  return t;
}

std::string_view TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

const std::vector<MetricDef>& MetricTable() {
  static const std::vector<MetricDef> table = BuildTable();
  return table;
}

const MetricDef* FindMetric(std::string_view name) {
  const auto& t = MetricTable();
  auto it = std::lower_bound(t.begin(), t.end(), name,
                             [](const MetricDef& d, std::string_view n) { return d.name < n; });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

std::string RenderMetricsDoc() {
  std::string out =
      "# Metrics\n\n"
      "Generated from `daemon/export/metric_table.cc` (a unit test keeps this file in step).\n"
      "All metrics are served on `/metrics` of the agent's `--metrics-listen` address.\n\n"
      "| name | type | labels | help |\n|---|---|---|---|\n";
  for (const auto& d : MetricTable()) {
    std::string labels;
    for (auto l : d.labels) (labels += labels.empty() ? "" : ", ") += l;
    ((((out += "| `") += d.name) += "` | ") += TypeName(d.type)) += " | ";
    (((out += labels) += " | ") += d.help) += " |\n";
  }
  return out;
}

}  // namespace efawatch::exporter
