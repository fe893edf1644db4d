// SPDX-License-Identifier: Apache-2.0
#include "daemon/module_options.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "efawatch/version.h"
#include "lib/common/instance_types.h"
#include "spdlog/spdlog.h"

namespace efawatch {

// The Kubernetes API connection the agent's own API users share (workload identity, signals).
kube::ApiOptions KubeApiFrom(const Config& c) {
  kube::ApiOptions api;
  api.api_server = c.mesh_k8s_api;
  api.token_file = c.mesh_k8s_token_file;
  api.ca_file = c.mesh_k8s_ca_file;
  return api;
}

fabric::FabricServiceOptions FabricServiceOptionsFrom(const Config& c) {
  fabric::FabricServiceOptions o;
  o.responder = c.fabric_responder;
  o.responder_options.rx_depth = c.fabric_rx_depth;
  o.responder_options.max_message_bytes = c.fabric_max_message_bytes;
  return o;
}

logs::TailerOptions TailerOptionsFrom(const Config& c) {
  logs::TailerOptions o;
  o.pod_log_root = c.paths.pod_log_root;
  o.max_files = c.max_log_files;
  o.history_bytes = c.log_history_bytes;
  o.read_budget_bytes_per_second = c.log_read_budget;
  o.first_read_max_bytes = c.log_first_read_max_bytes;
  o.globs = c.log_globs;
  o.volumes.volume_root = c.paths.pod_volume_root;
  o.volumes.debug_file_patterns = c.pod_volume_patterns;
  o.volumes.max_files_per_pod = c.max_log_files_per_pod;
  if (c.container_rootfs) o.volumes.container_rootfs_procfs = c.paths.procfs;
  std::error_code ec;
  std::filesystem::create_directories(c.state_dir, ec);
  if (std::filesystem::is_directory(c.state_dir, ec)) {
    o.state_file = c.state_dir / "logs-checkpoint.json";
  } else {
    spdlog::warn("state dir {} is not usable: log offsets will not survive a restart",
                 c.state_dir.string());
  }
  return o;
}

efa::EfaMonitorOptions EfaOptionsFrom(const Config& c) {
  efa::EfaMonitorOptions o;
  o.sysfs_root = c.paths.sysfs;
  o.procfs_root = c.paths.procfs;
  o.interface_prefixes = c.net_interface_prefixes;
  o.min_read_interval = c.efa_min_read_interval;
  o.evaluate_interval = c.efa_evaluate_interval;
  o.health.clear_after = c.efa_clear_after;
  o.health.rise_thresholds = c.efa_rise_thresholds;
  // --instance-type, else what EC2 writes in the DMI product name (no API call, no label).
  std::string type = c.instance_type;
  if (type.empty()) type = common::InstanceTypeFromDmi(c.paths.sysfs);
  o.health.instance_type = type;
  o.health.type_supports = common::ExpectedEfaDevices(type);
  using E = Config::EfaExpectation;
  if (c.efa_expected_devices_zero) {
    spdlog::warn(
        "efa-expected-devices=0 is deprecated: it means auto (the EFA devices the node was "
        "given), not the instance type's count; write auto, or type for the old default");
  }
  switch (c.efa_expectation) {
    case E::kAuto:
      o.health.expectation = efa::Expectation::kAuto;
      break;
    case E::kNone:
      o.health.expectation = efa::Expectation::kNone;
      break;
    case E::kType:
      o.health.expectation = efa::Expectation::kCount;
      o.health.expected_devices = o.health.type_supports;
      break;
    case E::kCount:
      o.health.expectation = efa::Expectation::kCount;
      o.health.expected_devices = c.efa_expected_devices;
      break;
  }
  if (!type.empty())
    spdlog::info("instance type {} ({})", type,
                 c.instance_type.empty() ? "DMI product name" : "--instance-type");
  return o;
}

// Without --fabric-interface, EFA (and shm, which never leaves the host) are tried on any
// device; IP providers (tcp, sockets) are pinned to loopback, so an agent never exposes an
// unauthenticated fabric endpoint on the network unless told to (the DaemonSet names the pod's
// interface). Each attempt is (providers, interface), in order.
std::vector<std::pair<std::vector<std::string>, std::string>> FabricAttempts(const Config& c) {
  std::vector<std::pair<std::vector<std::string>, std::string>> attempts;
  if (!c.fabric_interface.empty()) {
    attempts.push_back({c.fabric_providers, c.fabric_interface});
    return attempts;
  }
  std::vector<std::string> rdma, others;
  for (const auto& p : c.fabric_providers) {
    (p.starts_with("efa") || p == "shm" ? rdma : others).push_back(p);
  }
  if (!rdma.empty()) attempts.push_back({rdma, ""});
  if (!others.empty()) attempts.push_back({others, "lo"});
  return attempts;
}

// How /metrics is protected, for the start-up line.
std::string MetricsSecurity(const Config& c) {
  if (c.metrics_tls_cert.empty()) return "HTTP";
  std::string out = "HTTPS";
  if (!c.metrics_tls_client_ca.empty()) out += ", client certificate";
  if (!c.metrics_bearer_token_file.empty()) out += ", bearer token";
  return out;
}

void SetLibfabricDefaults() {
  // ofi_rxm (the RDM layer over tcp) sizes its per-connection buffer pools for throughput:
  // about 70 MiB resident at the first endpoint, which would triple the idle agent. Probes need
  // few buffers; a user's values win. Set before the first fi_getinfo, while no thread runs.
  // Every endpoint (the responder, the mesh's pinger) fills a receive pool of 1024 buffers of
  // BUFFER_SIZE at fi_enable: 1024 instead of 4096 takes 3 MiB off each (measured on an idle
  // agent: 34.0 -> 30.9 MiB RSS), and RX/TX_SIZE 64 (probes keep at most 16 + 4 in flight) its
  // queues 0.7 MiB more. Messages past 1 KiB then go by rxm's segmented protocol: a 4 KiB ping
  // costs a few us more; the mesh pings with 64 bytes.
  ::setenv("FI_OFI_RXM_MSG_RX_SIZE", "16", /*overwrite=*/0);
  ::setenv("FI_OFI_RXM_MSG_TX_SIZE", "16", /*overwrite=*/0);
  ::setenv("FI_OFI_RXM_BUFFER_SIZE", "1024", /*overwrite=*/0);
  ::setenv("FI_OFI_RXM_RX_SIZE", "64", /*overwrite=*/0);
  ::setenv("FI_OFI_RXM_TX_SIZE", "64", /*overwrite=*/0);
  // rxm's shared receive context holds 1.8 MiB of receive buffers from the first endpoint on,
  // connections or not; without it each connection posts its own 16 (about 20 KiB). The mesh's
  // bounded fan-out keeps an agent's connections in the tens, so the idle agent (no
  // connections) and the mesh both cost less without it; past ~90 connections it would cost
  // more.
  ::setenv("FI_OFI_RXM_USE_SRX", "0", /*overwrite=*/0);
}

rpc::PeerTls PeerTlsFromConfig(const Config& c) {
  return {.cert_file = c.grpc_tls_cert,
          .key_file = c.grpc_tls_key,
          .ca_file = c.grpc_tls_client_ca,
          .server_name = c.grpc_peer_server_name,
          .refresh = c.tls_reload_interval};
}

logs::PodAnalysisOptions PodAnalysisOptionsFrom(const Config& c) {
  logs::PodAnalysisOptions o;
  o.grace_period = c.pod_grace_period;
  o.max_communicators_per_pod = c.max_communicators_per_pod;
  return o;
}

inspector::InspectorCollectorOptions InspectorOptionsFrom(const Config& c) {
  inspector::InspectorCollectorOptions o;
  o.volume_root = c.paths.pod_volume_root;
  o.pod_log_root = c.paths.pod_log_root;
  o.inspector_dir = c.inspector_dir;
  o.max_comms_per_pod = c.max_communicators_per_pod;
  o.progress_stale_after = std::chrono::seconds(c.inspector_stale_after_seconds);
  o.instance_type =
      c.instance_type.empty() ? common::InstanceTypeFromDmi(c.paths.sysfs) : c.instance_type;
  o.expected_bytes_per_second = common::ExpectedNetworkBytesPerSecond(o.instance_type);
  return o;
}

agent::TargetPolicyOptions TargetPolicyOptionsFrom(const Config& c) {
  agent::TargetPolicyOptions t;
  t.allowed = c.probe_allowed_cidrs.empty() ? agent::HostSubnets() : c.probe_allowed_cidrs;
  t.allow_loopback = c.probe_allow_loopback;
  return t;
}

rpc::GrpcEdgeOptions GrpcEdgeOptionsFrom(const Config& c) {
  rpc::GrpcEdgeOptions o;
  o.listen = c.grpc_listen;
  o.tls_cert_file = c.grpc_tls_cert;
  o.tls_key_file = c.grpc_tls_key;
  o.tls_client_ca_file = c.grpc_tls_client_ca;
  o.authz = {.readers = c.grpc_authz_readers,
             .operators = c.grpc_authz_operators,
             .agents = c.grpc_authz_agents};
  if (!c.grpc_tls_client_ca.empty() && c.grpc_authz_readers.empty() &&
      c.grpc_authz_operators.empty() && c.grpc_authz_agents.empty()) {
    spdlog::warn(
        "gRPC: no --grpc-authz-* roles: every client certificate the CA signed may call every "
        "RPC (docs/security.md)");
  }
  o.max_watch_streams = c.max_watch_streams;
  o.limits = c.grpc_limits;
  o.tls_refresh = c.tls_reload_interval;
  return o;
}

std::vector<tls::WatchedFiles> WatchedTlsFilesFrom(const Config& c) {
  std::vector<tls::WatchedFiles> files;
  if (!c.grpc_tls_cert.empty()) {
    // The agent presents its server certificate to peers too (rpc::PeerTls).
    files.push_back({"server", c.grpc_tls_cert, c.grpc_tls_key});
    files.push_back({"client", c.grpc_tls_cert, c.grpc_tls_key});
  }
  if (!c.grpc_tls_client_ca.empty()) files.push_back({"ca", c.grpc_tls_client_ca, ""});
  if (!c.metrics_tls_cert.empty()) {
    files.push_back({"metrics", c.metrics_tls_cert, c.metrics_tls_key});
  }
  return files;
}

exporter::PrometheusEdgeOptions PrometheusEdgeOptionsFrom(
    const Config& c, std::chrono::system_clock::time_point start_time) {
  exporter::PrometheusEdgeOptions o;
  o.listen = c.metrics_listen;
  o.limits = c.metrics_limits;
  o.tls = {.cert_file = c.metrics_tls_cert,
           .key_file = c.metrics_tls_key,
           .client_ca_file = c.metrics_tls_client_ca,
           .bearer_token_file = c.metrics_bearer_token_file};
  o.build = {EFAWATCH_VERSION, EFAWATCH_REVISION, EFAWATCH_NCCL_VERSION};
  o.start_time = start_time;
  o.collector_budget = c.collector_budget;
  return o;
}

mesh::MeshOptions MeshOptionsFrom(const Config& c) {
  mesh::MeshOptions m;
  m.self_node = c.node_name;
  m.self_group = c.mesh_group;
  m.selection.fanout = c.mesh_fanout;
  m.selection.max_group = c.mesh_max_group;
  m.interval = c.mesh_interval;
  m.discovery_interval = c.mesh_discovery_interval;
  m.count = c.mesh_count;
  m.message_timeout = c.mesh_message_timeout;
  return m;
}

absl::StatusOr<std::unique_ptr<mesh::PeerSource>> MeshPeerSourceFrom(const Config& c) {
  std::unique_ptr<mesh::PeerSource> source;
  const int port = static_cast<int>(c.mesh_agent_port);
  if (c.mesh_discovery == "static") {
    auto peers = mesh::ParseStaticPeers(c.mesh_peers, port);
    if (!peers.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mesh-peers: ", std::string(peers.status().message())));
    }
    source = mesh::StaticPeerSource(*std::move(peers));
  } else if (c.mesh_discovery == "dns") {
    source = mesh::DnsPeerSource(c.mesh_dns_name, port);
  } else {
    mesh::KubernetesSourceOptions k;
    k.api_server = c.mesh_k8s_api;
    k.namespace_name = c.mesh_k8s_namespace;
    k.label_selector = c.mesh_k8s_label_selector;
    k.group_node_label = c.mesh_k8s_group_node_label;
    k.token_file = c.mesh_k8s_token_file;
    k.ca_file = c.mesh_k8s_ca_file;
    k.agent_port = port;
    source = mesh::KubernetesPeerSource(std::move(k));
  }
  return source;
}

workloads::WorkloadWatcherOptions WorkloadOptionsFrom(const Config& c) {
  workloads::WorkloadWatcherOptions w;
  w.api = KubeApiFrom(c);
  w.node_name = c.node_name;
  w.interval = c.workload_interval;
  return w;
}

signals::KubeSignalsOptions KubeSignalsOptionsFrom(const Config& c, const kube::ApiOptions& api) {
  signals::KubeSignalsOptions o;
  o.node_name = c.node_name;
  const char* pod = std::getenv("EFAWATCH_POD_NAME");
  o.reporting_instance = pod != nullptr && *pod != '\0' ? pod : "efawatchd-" + c.node_name;
  o.interval = c.kube_signals_interval;
  // The node's allocatable vpc.amazonaws.com/efa: what the EFA health rules expect (auto).
  o.list = [api](const std::stop_token& stop, const std::string& path,
                 const std::string& field_selector) {
    return kube::ListAll(api, stop, path, "", field_selector);
  };
  return o;
}

signals::Sender KubeSender(const kube::ApiOptions& api) {
  return [api](const std::stop_token& stop, const std::string& method, const std::string& path,
               const std::string& content_type, const nlohmann::json& body) {
    return kube::Send(api, stop, method, path, content_type, body);
  };
}

doctor::DoctorRunnerOptions DoctorOptionsFrom(const Config& c) {
  doctor::DoctorRunnerOptions o;
  o.sysfs = c.paths.sysfs;
  o.procfs = c.paths.procfs;
  o.pod_log_root = c.paths.pod_log_root;
  o.interval = c.doctor_interval;
  return o;
}

absl::StatusOr<CollectiveScheduleSpec> CollectiveScheduleSpecFrom(
    const Config& c, const collective::CollectiveLimits& limits) {
  auto peers = agent::ParseProbePeers(c.collective_probe_peers);
  if (!peers.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--collective-probe-peers=", c.collective_probe_peers, ": ",
                     std::string(peers.status().message())));
  }
  auto request = agent::ProbeRequest(c.collective_probe_sizes, c.collective_probe_op,
                                     c.collective_probe_backend, c.collective_probe_iters,
                                     c.collective_probe_deadline, limits);
  if (!request.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--collective-probe-sizes/-op/-backend: ",
                                                   std::string(request.status().message())));
  }
  CollectiveScheduleSpec spec;
  spec.options.interval = c.collective_probe_interval;
  spec.options.request = *std::move(request);
  spec.peers = *std::move(peers);
  return spec;
}

}  // namespace efawatch
