// SPDX-License-Identifier: Apache-2.0
#include "daemon/app.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/agent/collective_schedule.h"
#include "daemon/agent/coordination.h"
#include "daemon/agent/operations.h"
#include "daemon/agent/probe_runner.h"
#include "daemon/agent/self_ping.h"
#include "daemon/agent/target_policy.h"
#include "daemon/doctor/doctor_runner.h"
#include "daemon/efa/efa_monitor.h"
#include "daemon/export/prometheus_edge.h"
#include "daemon/inspector/inspector_collector.h"
#include "daemon/logs/pod_analysis.h"
#include "daemon/logs/tailer.h"
#include "daemon/logs/tailer_collector.h"
#include "daemon/logs/verdict_metrics.h"
#include "daemon/rpc/grpc_edge.h"
#include "daemon/rpc/limits_collector.h"
#include "daemon/rpc/peer_client.h"
#include "daemon/signals/fabric_ready.h"
#include "daemon/signals/kube_signals.h"
#include "daemon/tls/cert_watcher.h"
#include "daemon/workloads/workloads.h"
#include "efawatch/version.h"
#include "lib/common/collector_group.h"
#include "lib/common/findings_collector.h"
#include "lib/common/instance_types.h"
#include "lib/common/process_collector.h"
#include "lib/kube/node_conditions.h"
#include "probes/collective/collective_collector.h"
#include "probes/collective/host_backend.h"
#include "probes/collective/nccl_backend.h"
#include "probes/fabric/endpoint.h"
#include "probes/fabric/fabric_collector.h"
#include "probes/fabric/fabric_findings.h"
#include "probes/mesh/discovery.h"
#include "probes/mesh/mesh.h"
#include "probes/mesh/mesh_collector.h"
#include "spdlog/spdlog.h"

namespace efawatch {

absl::Status WritePortFile(const std::string& path, int metrics_port, int grpc_port) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"metrics\": " << metrics_port << ", \"grpc\": " << grpc_port << "}\n";
    out.flush();
    if (!out)
      return absl::InvalidArgumentError(absl::StrCat("--port-file=", path, ": cannot write"));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("--port-file=", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

App::App(const Config& config, const common::Clock& clock)
    : config_(config), clock_(clock), start_time_(clock.WallNow()), findings_(clock) {}

absl::StatusOr<std::unique_ptr<App>> App::Create(const Config& config, const common::Clock& clock) {
  std::unique_ptr<App> app(new App(config, clock));
  if (auto st = app->Start(); !st.ok()) return st;
  return app;
}

namespace {

// The Kubernetes API connection the agent's own API users share (workload identity, signals).
kube::ApiOptions KubeApiFrom(const Config& c) {
  kube::ApiOptions api;
  api.api_server = c.mesh_k8s_api;
  api.token_file = c.mesh_k8s_token_file;
  api.ca_file = c.mesh_k8s_ca_file;
  return api;
}

// "efa_admin_queue_stuck" -> "EfaAdminQueueStuck": a NodeCondition reason is CamelCase.
std::string CamelCase(std::string_view kind) {
  std::string out;
  bool upper = true;
  for (char ch : kind) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  return out;
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

}  // namespace

absl::Status App::Start() {
  spdlog::info("efawatchd {} ({}) starting on node {}", EFAWATCH_VERSION, EFAWATCH_REVISION,
               config_.node_name);
  if (std::string(EFAWATCH_NCCL_VERSION).empty()) {
    spdlog::info("NCCL probe: not built (this build has no CUDA/NCCL)");
  }
  process_collector_ = std::make_unique<common::ProcessCollector>();
  findings_collector_ = std::make_unique<common::FindingsCollector>(findings_);
  CreateLogs();
  CreateInspector();
  CreateEfa();
  const fabric::EndpointOptions endpoint = CreateFabric();
  if (auto st = CreateCerts(); !st.ok()) return st;
  if (auto st = CreatePeers(); !st.ok()) return st;
  CreateDoctor();  // before the gRPC edge, which hands RunDoctor to it
  if (auto st = CreateGrpc(); !st.ok()) return st;
  if (auto st = CreateMesh(endpoint); !st.ok()) return st;
  if (auto st = CreateCollectiveSchedule(); !st.ok()) return st;
  CreateWorkloads();
  CreateSignals();
  if (auto st = CreateMetrics(); !st.ok()) return st;
  // Background work starts once both edges are bound: a bad configuration exits before any.
  efa_->Start();
  if (mesh_) mesh_->Start();
  if (collective_schedule_) collective_schedule_->Start();
  if (workloads_) workloads_->Start();
  if (self_ping_) self_ping_->Start();
  if (signals_) signals_->Start();
  doctor_->Start();
  if (auto st = inspector_tailer_->Start(); !st.ok()) return st;
  return tailer_->Start();
}

void App::CreateInspector() {
  inspector::InspectorCollectorOptions o;
  o.volume_root = config_.paths.pod_volume_root;
  o.pod_log_root = config_.paths.pod_log_root;
  o.inspector_dir = config_.inspector_dir;
  o.max_comms_per_pod = config_.max_communicators_per_pod;
  o.progress_stale_after = std::chrono::seconds(config_.inspector_stale_after_seconds);
  o.instance_type = config_.instance_type.empty() ? common::InstanceTypeFromDmi(config_.paths.sysfs)
                                                  : config_.instance_type;
  o.expected_bytes_per_second = common::ExpectedNetworkBytesPerSecond(o.instance_type);
  inspector_ = std::make_unique<inspector::InspectorCollector>(o, clock_);
  inspector_tailer_ = std::make_unique<logs::Tailer>(
      inspector::InspectorTailerOptions(o, inspector_.get()), inspector_.get(), clock_);
  spdlog::info("NCCL Inspector files: pod volumes{}{}",
               o.inspector_dir.empty() ? "" : " and " + o.inspector_dir.string(),
               o.expected_bytes_per_second > 0
                   ? fmt::format(", expected network bandwidth {:.1f} GB/s ({})",
                                 o.expected_bytes_per_second / 1e9, o.instance_type)
                   : "");
}

void App::CreateLogs() {
  std::error_code ec;
  if (!std::filesystem::is_directory(config_.paths.pod_log_root, ec)) {
    spdlog::warn("pod log root {} does not exist: no pod logs to analyze until it does",
                 config_.paths.pod_log_root.string());
  } else {
    spdlog::info("log analysis: pod log root {}", config_.paths.pod_log_root.string());
  }
  logs::PodAnalysisOptions popts;
  popts.grace_period = config_.pod_grace_period;
  popts.max_communicators_per_pod = config_.max_communicators_per_pod;
  pods_ = std::make_unique<logs::PodAnalysis>(popts, clock_, &findings_);
  verdict_collector_ = std::make_unique<logs::VerdictCollector>(*pods_);
  tailer_ = std::make_unique<logs::Tailer>(TailerOptionsFrom(config_), pods_.get(), clock_);
  tailer_collector_ = std::make_unique<logs::TailerCollector>(tailer_->counters());
  // One collector to operators, as before the split: efawatch_collector_success{"nccl_logs"}.
  logs_collector_ = std::make_unique<common::CollectorGroup>(
      "nccl_logs",
      std::vector<common::Collector*>{verdict_collector_.get(), tailer_collector_.get()});
}

void App::CreateEfa() {
  efa::EfaMonitorOptions eopts = EfaOptionsFrom(config_);
  // The node's advertised EFA devices, which the Kubernetes signals read with the node (signals_
  // is set once at start, before the EFA thread runs; the first evaluation, here, sees none).
  eopts.advertised = [this]() -> std::optional<unsigned> {
    return signals_ ? signals_->AdvertisedEfa() : std::nullopt;
  };
  // The EFA fallback rule needs to know whether NCCL jobs run here: the log analysis says.
  efa_ = std::make_unique<efa::EfaMonitor>(
      eopts, clock_, &findings_, [this] { return pods_->NcclActive(); },
      [this]() -> uint64_t {
        // Only an IP provider's probe traffic shows on the ethernet counters. fabric_ is set
        // once at start, before the EFA thread runs its first evaluation.
        const fabric::FabricService* f = fabric_.get();
        if (f == nullptr || f->responder() == nullptr ||
            f->responder()->info().provider.starts_with("efa")) {
          return 0;
        }
        return f->OwnTrafficBytes();
      });
  efa_->EvaluateOnce();
  if (efa_->efa_devices() == 0) {
    spdlog::info("EFA: absent (no EFA devices under {}/class/infiniband)",
                 config_.paths.sysfs.string());
  } else {
    spdlog::info("EFA: {} device(s) under {}/class/infiniband{}", efa_->efa_devices(),
                 config_.paths.sysfs.string(),
                 eopts.health.expectation == efa::Expectation::kCount
                     ? fmt::format(", {} expected", eopts.health.expected_devices)
                     : "");
  }
}

fabric::EndpointOptions App::CreateFabric() {
  // The fabric is optional: a node without a usable provider still reports everything else, and
  // says why it has no responder.
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
  spdlog::info("libfabric {}", fabric::LoadedLibfabric());
  fabric::FabricServiceOptions fopts;
  fopts.responder = config_.fabric_responder;
  fopts.responder_options.rx_depth = config_.fabric_rx_depth;
  fopts.responder_options.max_message_bytes = config_.fabric_max_message_bytes;
  fopts.on_probe_done = [this] { PublishFabricFindings(); };
  fopts.budget = &memory_budget_;
  absl::StatusOr<std::unique_ptr<fabric::FabricService>> fabric =
      absl::NotFoundError("no fabric provider configured");
  std::vector<std::string> why;
  for (const auto& [providers, iface] : FabricAttempts(config_)) {
    fopts.endpoint.providers = providers;
    fopts.endpoint.interface = iface;
    fabric = fabric::FabricService::Create(fopts, clock_);
    if (fabric.ok()) break;
    why.push_back(std::string(fabric.status().message()));
  }
  if (!fabric.ok() && !why.empty()) fabric = absl::NotFoundError(absl::StrJoin(why, "; "));
  if (!fabric.ok()) {
    spdlog::warn("fabric: {}; no responder and no fabric probes",
                 std::string(fabric.status().message()));
    return fopts.endpoint;
  }
  fabric_ = *std::move(fabric);
  // Collectives use the same providers and interface as the responder that worked.
  collective_ = std::make_unique<collective::Participant>(
      config_.node_name, collective::CollectiveLimits{},
      collective::HostBackendFactory(fopts.endpoint),
      collective::NcclBackendFactory({.log_dir = config_.state_dir}), clock_);
  collective_collector_ = std::make_unique<collective::CollectiveCollector>(*collective_);
  fabric_collector_ = std::make_unique<fabric::FabricCollector>(*fabric_);
  if (const fabric::Responder* r = fabric_->responder(); r != nullptr) {
    spdlog::info("fabric responder: provider {} fabric {} domain {} at {}; {}", r->info().provider,
                 r->info().fabric, r->info().domain, r->printable_address(),
                 r->info().source ? "answers only the real sender (FI_SOURCE)"
                                  : "answers the sender a message claims (no trusted FI_SOURCE "
                                    "on this provider; docs/security.md)");
  } else {
    spdlog::info("fabric responder: off (--fabric-responder=false); probes still run");
  }
  PublishFabricFindings();
  // FabricReady's proof that the fabric carries messages: a ping of our own responder.
  const fabric::Responder* responder = fabric_->responder();
  self_ping_ = std::make_unique<agent::SelfPing>(fopts.endpoint,
                                                 responder != nullptr ? responder->address() : "",
                                                 std::chrono::minutes(1), clock_);
  return fopts.endpoint;
}

absl::Status App::CreatePeers() {
  auto channels = rpc::PeerChannels::Create(PeerTlsFromConfig(config_));
  if (!channels.ok()) return channels.status();
  peer_channels_ = *std::move(channels);
  peer_lookup_ = std::make_unique<rpc::GrpcPeerLookup>(*peer_channels_);
  collective_calls_ = std::make_unique<rpc::GrpcCollectiveCalls>(*peer_channels_);
  agent::TargetPolicyOptions t;
  t.allowed =
      config_.probe_allowed_cidrs.empty() ? agent::HostSubnets() : config_.probe_allowed_cidrs;
  t.allow_loopback = config_.probe_allow_loopback;
  std::vector<std::string> blocks;
  for (const auto& c : t.allowed) blocks.push_back(c.ToString());
  spdlog::info("probe targets: agents in {}{}",
               blocks.empty() ? "(none)" : absl::StrJoin(blocks, ", "),
               t.allow_loopback ? " and on loopback" : "");
  targets_ = std::make_unique<agent::TargetPolicy>(std::move(t));
  probes_ = std::make_unique<agent::ProbeRunner>(fabric_.get(), *peer_lookup_, *targets_);
  coordination_ = std::make_unique<agent::Coordination>(
      *collective_calls_, collective::CollectiveLimits{}, *targets_, clock_);
  return absl::OkStatus();
}

absl::Status App::CreateGrpc() {
  rpc::GrpcEdgeOptions gopts;
  gopts.listen = config_.grpc_listen;
  gopts.tls_cert_file = config_.grpc_tls_cert;
  gopts.tls_key_file = config_.grpc_tls_key;
  gopts.tls_client_ca_file = config_.grpc_tls_client_ca;
  gopts.authz = {.readers = config_.grpc_authz_readers,
                 .operators = config_.grpc_authz_operators,
                 .agents = config_.grpc_authz_agents};
  if (!config_.grpc_tls_client_ca.empty() && config_.grpc_authz_readers.empty() &&
      config_.grpc_authz_operators.empty() && config_.grpc_authz_agents.empty()) {
    spdlog::warn(
        "gRPC: no --grpc-authz-* roles: every client certificate the CA signed may call every "
        "RPC (docs/security.md)");
  }
  gopts.max_watch_streams = config_.max_watch_streams;
  gopts.limits = config_.grpc_limits;
  gopts.tls_refresh = config_.tls_reload_interval;
  ops_ = std::make_unique<agent::Operations>(
      agent::OperationsParts{.node_name = config_.node_name,
                             .findings = &findings_,
                             .node_health = [this] { return GetNodeHealth(); },
                             .fabric = fabric_.get(),
                             .probes = probes_.get(),
                             .coordination = coordination_.get(),
                             .collective = collective_.get(),
                             .doctor = doctor_.get()});
  auto grpc = rpc::GrpcEdge::Create(gopts, ops_.get());
  if (!grpc.ok()) return grpc.status();
  grpc_ = std::move(*grpc);
  return absl::OkStatus();
}

// The TLS files in use, watched for renewal: gRPC reads its own copies through its file
// watchers; the metrics port is told to reload by the watcher (see CreateMetrics).
absl::Status App::CreateCerts() {
  std::vector<tls::WatchedFiles> files;
  if (!config_.grpc_tls_cert.empty()) {
    // The agent presents its server certificate to peers too (rpc::PeerTls).
    files.push_back({"server", config_.grpc_tls_cert, config_.grpc_tls_key});
    files.push_back({"client", config_.grpc_tls_cert, config_.grpc_tls_key});
  }
  if (!config_.grpc_tls_client_ca.empty()) files.push_back({"ca", config_.grpc_tls_client_ca, ""});
  if (!config_.metrics_tls_cert.empty()) {
    files.push_back({"metrics", config_.metrics_tls_cert, config_.metrics_tls_key});
  }
  if (files.empty()) return absl::OkStatus();
  auto certs = tls::CertificateWatcher::Create(std::move(files), config_.tls_reload_interval,
                                               clock_, &findings_);
  if (!certs.ok()) return certs.status();
  certs_ = *std::move(certs);
  return absl::OkStatus();
}

absl::Status App::CreateMetrics() {
  exporter::PrometheusEdgeOptions mopts;
  mopts.listen = config_.metrics_listen;
  mopts.limits = config_.metrics_limits;
  mopts.tls = {.cert_file = config_.metrics_tls_cert,
               .key_file = config_.metrics_tls_key,
               .client_ca_file = config_.metrics_tls_client_ca,
               .bearer_token_file = config_.metrics_bearer_token_file};
  mopts.build = {EFAWATCH_VERSION, EFAWATCH_REVISION, EFAWATCH_NCCL_VERSION};
  mopts.start_time = start_time_;
  mopts.collector_budget = config_.collector_budget;
  std::vector<common::Collector*> collectors = {process_collector_.get(), efa_.get(),
                                                logs_collector_.get(), findings_collector_.get()};
  collectors.push_back(inspector_.get());
  if (fabric_collector_) collectors.push_back(fabric_collector_.get());
  if (collective_collector_) collectors.push_back(collective_collector_.get());
  if (mesh_collector_) collectors.push_back(mesh_collector_.get());
  if (collective_schedule_) collectors.push_back(collective_schedule_.get());
  if (workloads_) collectors.push_back(workloads_.get());
  if (signals_) collectors.push_back(signals_.get());
  collectors.push_back(doctor_.get());
  collectors.push_back(&grpc_->denial_collector());
  limits_collector_ = std::make_unique<rpc::LimitsCollector>(
      grpc_->counters(), grpc_->gate_counters(), memory_budget_);
  collectors.push_back(limits_collector_.get());
  if (certs_) collectors.push_back(certs_.get());
  auto metrics = exporter::PrometheusEdge::Create(mopts, collectors, &collector_status_, clock_);
  if (!metrics.ok()) return metrics.status();
  metrics_ = std::move(*metrics);
  if (certs_) {
    certs_->OnChange("metrics", [this] {
      if (auto st = metrics_->ReloadTls(); !st.ok()) {
        spdlog::warn("metrics https: still on the previous certificate: {}",
                     std::string(st.message()));
      }
    });
  }
  spdlog::info("metrics on {} (port {}, {}), gRPC on {} (port {}, {})", config_.metrics_listen,
               metrics_->port(), MetricsSecurity(config_), config_.grpc_listen, grpc_->port(),
               config_.grpc_tls_cert.empty()        ? "plaintext"
               : config_.grpc_tls_client_ca.empty() ? "TLS"
                                                    : "mutual TLS");
  if (!config_.port_file.empty()) {
    return WritePortFile(config_.port_file, metrics_->port(), grpc_->port());
  }
  return absl::OkStatus();
}

absl::Status App::CreateMesh(const fabric::EndpointOptions& endpoint) {
  if (config_.mesh_discovery == "off") return absl::OkStatus();
  if (!fabric_) {
    spdlog::warn("mesh: off, this agent has no fabric provider to ping with");
    return absl::OkStatus();
  }
  std::unique_ptr<mesh::PeerSource> source;
  const int port = static_cast<int>(config_.mesh_agent_port);
  if (config_.mesh_discovery == "static") {
    auto peers = mesh::ParseStaticPeers(config_.mesh_peers, port);
    if (!peers.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mesh-peers: ", std::string(peers.status().message())));
    }
    source = mesh::StaticPeerSource(*std::move(peers));
  } else if (config_.mesh_discovery == "dns") {
    source = mesh::DnsPeerSource(config_.mesh_dns_name, port);
  } else {
    mesh::KubernetesSourceOptions k;
    k.api_server = config_.mesh_k8s_api;
    k.namespace_name = config_.mesh_k8s_namespace;
    k.label_selector = config_.mesh_k8s_label_selector;
    k.group_node_label = config_.mesh_k8s_group_node_label;
    k.token_file = config_.mesh_k8s_token_file;
    k.ca_file = config_.mesh_k8s_ca_file;
    k.agent_port = port;
    source = mesh::KubernetesPeerSource(std::move(k));
  }
  mesh::MeshOptions m;
  m.self_node = config_.node_name;
  if (!config_.pod_ip.empty()) {
    m.self_agent = config_.pod_ip.find(':') != std::string::npos
                       ? absl::StrCat("[", config_.pod_ip, "]:", grpc_->port())
                       : absl::StrCat(config_.pod_ip, ":", grpc_->port());
  }
  m.self_group = config_.mesh_group;
  m.selection.fanout = config_.mesh_fanout;
  m.selection.max_group = config_.mesh_max_group;
  m.interval = config_.mesh_interval;
  m.discovery_interval = config_.mesh_discovery_interval;
  m.count = config_.mesh_count;
  m.message_timeout = config_.mesh_message_timeout;
  m.endpoint = endpoint;
  auto created = mesh::Mesh::Create(
      m, std::move(source), *peer_lookup_,
      [this](std::vector<common::Finding> f) { findings_.Publish("mesh", std::move(f)); }, clock_);
  if (!created.ok()) return created.status();
  mesh_ = *std::move(created);
  mesh_collector_ = std::make_unique<mesh::MeshCollector>(*mesh_);
  spdlog::info("mesh: {} discovery, fan-out {}, every {} ms, {} pings per peer",
               config_.mesh_discovery, config_.mesh_fanout, config_.mesh_interval.count(),
               config_.mesh_count);
  return absl::OkStatus();
}

absl::Status App::CreateCollectiveSchedule() {
  if (config_.collective_probe_interval.count() == 0) return absl::OkStatus();
  const collective::CollectiveLimits limits{};
  auto peers = agent::ParseProbePeers(config_.collective_probe_peers);
  if (!peers.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--collective-probe-peers=", config_.collective_probe_peers, ": ",
                     std::string(peers.status().message())));
  }
  auto request = agent::ProbeRequest(
      config_.collective_probe_sizes, config_.collective_probe_op, config_.collective_probe_backend,
      config_.collective_probe_iters, config_.collective_probe_deadline, limits);
  if (!request.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--collective-probe-sizes/-op/-backend: ",
                                                   std::string(request.status().message())));
  }
  agent::CollectiveScheduleOptions o;
  o.interval = config_.collective_probe_interval;
  o.request = *std::move(request);
  // This agent is rank 0 and dials itself: as its peers would (--pod-ip), else on the address
  // gRPC listens on (loopback when it listens on every address).
  std::string host = config_.pod_ip;
  if (host.empty()) {
    const auto colon = config_.grpc_listen.rfind(':');
    host = config_.grpc_listen.substr(0, colon);
    if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
    if (host == "[::]") host = "[::1]";
  } else if (host.find(':') != std::string::npos) {
    host = absl::StrCat("[", host, "]");
  }
  o.self_agent = absl::StrCat(host, ":", grpc_->port());
  agent::CollectiveSchedule::PeersFn peer_list;
  if (peers->from_mesh > 0) {
    // The first N reachable peers (by node name) of those the mesh already pings: each node's
    // mesh peers differ (consistent hashing), so the fleet's probes spread over it.
    peer_list = [this, n = peers->from_mesh] {
      std::vector<std::string> out;
      if (!mesh_) return out;
      for (const mesh::PeerState& p : mesh_->Snapshot().peers) {
        if (out.size() == n) break;
        if (p.up) out.push_back(p.agent);
      }
      return out;
    };
  } else {
    peer_list = [list = peers->agents] { return list; };
  }
  schedule_waiter_ = std::make_unique<agent::ClockWaiter>(clock_);
  auto created = agent::CollectiveSchedule::Create(std::move(o), limits, std::move(peer_list),
                                                   agent::CoordinationRunner(*coordination_),
                                                   clock_, *schedule_waiter_);
  if (!created.ok()) return created.status();
  collective_schedule_ = *std::move(created);
  spdlog::info("collective probe: {} {} backend every {} ms (jittered) with {}",
               config_.collective_probe_op, config_.collective_probe_backend,
               config_.collective_probe_interval.count(), config_.collective_probe_peers);
  return absl::OkStatus();
}

void App::CreateWorkloads() {
  if (!config_.workload_identity) {
    spdlog::info(
        "workload identity: off (--workload-identity=false): no efawatch_pod_workload_info");
    return;
  }
  std::error_code ec;
  if (!std::filesystem::exists(config_.mesh_k8s_token_file, ec)) {
    spdlog::info("workload identity: off, no service-account token at {}",
                 config_.mesh_k8s_token_file);
    return;
  }
  workloads::WorkloadWatcherOptions w;
  w.api = KubeApiFrom(config_);
  w.node_name = config_.node_name;
  w.interval = config_.workload_interval;
  workloads_ = std::make_unique<workloads::WorkloadWatcher>(std::move(w));
  spdlog::info("workload identity: pods of node {} from the Kubernetes API every {} ms",
               config_.node_name, config_.workload_interval.count());
}

void App::CreateSignals() {
  if (!config_.kube_signals) {
    spdlog::info("kubernetes signals: off (--kube-signals=false): no Events, no NodeConditions");
    return;
  }
  std::error_code ec;
  if (!std::filesystem::exists(config_.mesh_k8s_token_file, ec)) {
    spdlog::info("kubernetes signals: off, no service-account token at {}",
                 config_.mesh_k8s_token_file);
    return;
  }
  const kube::ApiOptions api = KubeApiFrom(config_);
  signals::KubeSignalsOptions o;
  o.node_name = config_.node_name;
  const char* pod = std::getenv("EFAWATCH_POD_NAME");
  o.reporting_instance = pod != nullptr && *pod != '\0' ? pod : "efawatchd-" + config_.node_name;
  o.interval = config_.kube_signals_interval;
  auto send = [api](const std::stop_token& stop, const std::string& method, const std::string& path,
                    const std::string& content_type, const nlohmann::json& body) {
    return kube::Send(api, stop, method, path, content_type, body);
  };
  // The node's allocatable vpc.amazonaws.com/efa: what the EFA health rules expect (auto).
  o.list = [api](const std::stop_token& stop, const std::string& path,
                 const std::string& field_selector) {
    return kube::ListAll(api, stop, path, "", field_selector);
  };
  signals_ = std::make_unique<signals::KubeSignals>(
      std::move(o), [this] { return ObserveSignals(); }, std::move(send), clock_);
  spdlog::info("kubernetes signals: Events on pods with NCCL problems, NodeConditions on node {}",
               config_.node_name);
}

signals::Observation App::ObserveSignals() const {
  signals::Observation out;
  const auto findings = findings_.Snapshot();
  auto finding_text = [&](const std::string& subject, common::FindingKind kind) {
    for (const common::Finding& f : *findings) {
      if (f.subject != subject || !f.Is(kind)) continue;
      std::string text = f.message;
      if (!f.evidence.empty()) {
        absl::StrAppend(&text, " (", f.evidence.source,
                        f.evidence.line > 0 ? absl::StrCat(":", f.evidence.line) : "", ": ",
                        f.evidence.text, ")");
      }
      return text;
    }
    return std::string();
  };
  if (pods_) {
    for (const auto& v : pods_->Verdicts()) {
      // An Event needs the pod's uid (kubectl describe selects on it): container logs have it.
      if (v.gone || v.nccl_lines == 0 || v.source.uid.empty()) continue;
      const std::string subject = v.source.PodKey() + "/" + v.source.container;
      // A TCP net the job chose (NCCL_IB_DISABLE=1, NCCL_NET=Socket) is not news to its owner.
      for (auto [on, kind] :
           {std::pair{v.nccl.tcp_fallback && !v.nccl.tcp_deliberate,
                      common::FindingKind::kTcpFallback},
            {v.nccl.loopback_misuse, common::FindingKind::kLoopbackMisuse},
            {v.nccl.net_plugin_missing, common::FindingKind::kNetPluginMissing}}) {
        if (!on) continue;
        out.pods.push_back({v.source.namespace_name, v.source.pod, v.source.uid, v.source.container,
                            kind, finding_text(subject, kind)});
      }
    }
  }
  // Node conditions: only those this node can judge (EFA present or expected; a mesh running).
  auto condition = [&](const char* type, std::initializer_list<common::FindingKind> kinds,
                       const char* ok_reason, const char* ok_message) {
    signals::NodeCondition c{type, true, ok_reason, ok_message};
    std::string messages;
    for (const common::Finding& f : *findings) {
      if (f.severity != common::Severity::kCritical ||
          std::ranges::none_of(kinds, [&f](common::FindingKind k) { return f.Is(k); })) {
        continue;
      }
      if (c.ok) c.reason = CamelCase(f.kind);
      c.ok = false;
      absl::StrAppend(&messages, messages.empty() ? "" : "; ", f.kind, " ", f.subject, ": ",
                      f.message);
    }
    if (!c.ok) c.message = messages;
    return c;
  };
  const signals::NodeCondition efa =
      condition(kube::kEfaHealthy,
                {common::FindingKind::kEfaAdminQueueStuck, common::FindingKind::kEfaDeviceGone,
                 common::FindingKind::kEfaDevicesMissing},
                "EfaDevicesHealthy", "efawatch sees no EFA device fault");
  if ((efa_ && efa_->efa_devices() > 0) || !efa.ok) out.conditions.push_back(efa);
  // FabricReady (a NodeReadinessRule's gate, docs/node-readiness.md) where EFA is or should be.
  signals::FabricReadyInputs ready;
  if (const auto report = doctor_ ? doctor_->Latest() : nullptr) ready.doctor = report->node;
  ready.efa_devices = efa_ ? efa_->efa_devices() : 0;
  ready.efa_expected = common::ExpectedEfaDevices(common::InstanceTypeFromDmi(config_.paths.sysfs));
  if (self_ping_) ready.self_ping = self_ping_->Latest();
  if (ready.efa_devices > 0 || ready.efa_expected > 0) {
    out.conditions.push_back(signals::FabricReadyCondition(ready));
  }
  if (mesh_) {
    out.conditions.push_back(condition(kube::kFabricReachable,
                                       {common::FindingKind::kMeshSelfSuspect}, "MeshPeersAnswer",
                                       "this node's fabric ping mesh peers answer"));
  }
  return out;
}

void App::CreateDoctor() {
  doctor::DoctorRunnerOptions o;
  o.sysfs = config_.paths.sysfs;
  o.procfs = config_.paths.procfs;
  o.pod_log_root = config_.paths.pod_log_root;
  o.interval = config_.doctor_interval;
  doctor_ = std::make_unique<doctor::DoctorRunner>(std::move(o), &findings_, clock_);
}

void App::Stop() {
  // No certificate reload from here on: the watcher calls into the metrics edge.
  certs_.reset();
  // The scheduled probe stops waiting for its run at once; the run itself is cancelled next.
  if (collective_schedule_) collective_schedule_->Stop();
  // A coordination in flight is cancelled first: its RunCollective call then finishes at once.
  if (coordination_) coordination_->Stop();
  // A collective in progress is aborted first: its StartCollective call then finishes at once.
  if (collective_) collective_->Stop();
  // The mesh pings through its own endpoint and asks peers over gRPC: stop it before anything.
  if (mesh_) mesh_->Stop();
  // Its listing in flight is cancelled (the collector keeps answering from the last table).
  if (workloads_) workloads_->Stop();
  // Its request in flight is cancelled; Events not yet posted are posted by the next agent.
  if (signals_) signals_->Stop();
  // Its ping in flight ends with the fabric service's Stop below; the thread stops here.
  if (self_ping_) self_ping_->Stop();
  // A doctor run in progress finishes (a few file reads); waiting RunDoctor calls get UNAVAILABLE.
  if (doctor_) doctor_->Stop();
  // Fabric probes first: cancelling them finishes their pending Ping/Bandwidth calls at once, so
  // the gRPC shutdown below does not wait for a long probe.
  if (fabric_) fabric_->Stop();
  // The two edges stop in parallel (each takes a few hundred milliseconds to drain) and before
  // the modules they call into; SIGTERM must end the agent within 2 s.
  std::thread metrics_stop([this] {
    metrics_.reset();
    spdlog::debug("metrics edge stopped");
  });
  if (grpc_) grpc_->Shutdown();
  spdlog::debug("gRPC edge stopped");
  metrics_stop.join();
  fabric_collector_.reset();
  mesh_collector_.reset();
  mesh_.reset();
  collective_.reset();
  fabric_.reset();
  if (tailer_) tailer_->Stop();  // writes the last checkpoint
  if (inspector_tailer_) inspector_tailer_->Stop();
  efa_.reset();
  tailer_.reset();
  pods_.reset();
  inspector_tailer_.reset();
  inspector_.reset();
}

App::~App() { Stop(); }

void App::PublishFabricFindings() {
  fabric::FabricFindingInputs in;
  if (const fabric::Responder* r = fabric_ ? fabric_->responder() : nullptr; r != nullptr) {
    in.has_responder = true;
    in.responder = r->info();
    in.responder_printable = r->printable_address();
    in.peers = fabric_->PeerStates();
  }
  // libfabric's view of the host, not the configured (possibly fixture) sysfs root.
  in.efa_devices = fabric::CountEfaDevicesForLibfabric();
  findings_.Publish("fabric", fabric::EvaluateFabricFindings(in));
}

rpc::PeerTls PeerTlsFromConfig(const Config& c) {
  return {.cert_file = c.grpc_tls_cert,
          .key_file = c.grpc_tls_key,
          .ca_file = c.grpc_tls_client_ca,
          .server_name = c.grpc_peer_server_name,
          .refresh = c.tls_reload_interval};
}

int App::metrics_port() const { return metrics_ ? metrics_->port() : 0; }
int App::grpc_port() const { return grpc_ ? grpc_->port() : 0; }

common::NodeHealth App::GetNodeHealth() const {
  common::NodeHealth h;
  h.node = config_.node_name;
  h.agent_version = EFAWATCH_VERSION;
  h.agent_revision = EFAWATCH_REVISION;
  h.start_time = start_time_;
  h.collectors = collector_status_.Snapshot();
  h.findings = *findings_.Snapshot();
  h.efa_devices = efa_ ? efa_->efa_devices() : 0;
  if (pods_) {
    for (const auto& v : pods_->Verdicts()) {
      if (v.nccl_lines == 0 || v.gone) continue;
      common::PodVerdict p{.namespace_name = v.source.namespace_name,
                           .pod = v.source.pod,
                           .container = v.source.container,
                           .nccl = v.nccl,
                           .workload_kind = {},
                           .workload = {},
                           .source = std::string(logs::OriginName(v.source.origin)),
                           .files = v.files};
      if (workloads_) {
        if (auto w = workloads_->Lookup(v.source.namespace_name, v.source.pod)) {
          p.workload_kind = w->kind;
          p.workload = w->name;
        }
      }
      h.pods.push_back(std::move(p));
    }
  }
  if (fabric_ && fabric_->responder() != nullptr) {
    h.fabric_provider = fabric_->responder()->info().provider;
  }
  return h;
}

}  // namespace efawatch
