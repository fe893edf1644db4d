// SPDX-License-Identifier: Apache-2.0
#include "daemon/app.h"

#include <filesystem>
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
#include "daemon/module_options.h"
#include "daemon/port_file.h"
#include "daemon/rpc/grpc_edge.h"
#include "daemon/rpc/limits_collector.h"
#include "daemon/rpc/peer_client.h"
#include "daemon/signals/fabric_ready.h"
#include "daemon/signals/kube_signals.h"
#include "daemon/signals/observe.h"
#include "daemon/startup_log.h"
#include "daemon/state/node_rules.h"
#include "daemon/state/node_state.h"
#include "daemon/tls/cert_watcher.h"
#include "daemon/workloads/workloads.h"
#include "efawatch/version.h"
#include "lib/common/collector_group.h"
#include "lib/common/findings_collector.h"
#include "lib/common/process_collector.h"
#include "probes/collective/collective_collector.h"
#include "probes/collective/host_backend.h"
#include "probes/collective/nccl_backend.h"
#include "probes/fabric/endpoint.h"
#include "probes/fabric/fabric_collector.h"
#include "probes/fabric/fabric_findings.h"
#include "probes/mesh/mesh.h"
#include "probes/mesh/mesh_collector.h"
#include "spdlog/spdlog.h"

namespace efawatch {

App::App(const Config& config, const common::Clock& clock)
    : config_(config), clock_(clock), start_time_(clock.WallNow()), findings_(clock) {}

absl::StatusOr<std::unique_ptr<App>> App::Create(const Config& config, const common::Clock& clock) {
  std::unique_ptr<App> app(new App(config, clock));
  if (auto st = app->Start(); !st.ok()) return st;
  return app;
}

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
  self_ = state::SelfAddressOf(config_.pod_ip, config_.grpc_listen, grpc_->port());
  if (auto st = CreateMesh(endpoint); !st.ok()) return st;
  if (auto st = CreateCollectiveSchedule(); !st.ok()) return st;
  CreateWorkloads();
  CreateSignals();
  CreateSelfPing(endpoint);
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
  inspector::InspectorCollectorOptions o = InspectorOptionsFrom(config_);
  o.on_summaries = [this](auto comms) { board_.PublishInspector(std::move(comms)); };
  inspector_ = std::make_unique<inspector::InspectorCollector>(o, clock_);
  inspector_tailer_ = std::make_unique<logs::Tailer>(
      inspector::InspectorTailerOptions(o, inspector_.get()), inspector_.get(), clock_);
  startup::LogInspector(o);
}

void App::CreateLogs() {
  startup::LogPodLogs(config_);
  logs::PodAnalysisOptions popts = PodAnalysisOptionsFrom(config_);
  popts.on_verdicts = [this](auto verdicts) { board_.PublishPods(std::move(verdicts)); };
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
  // The node's advertised EFA devices, which the Kubernetes signals read with the node.
  eopts.advertised = [this] { return board_.Snapshot()->efa_advertised; };
  eopts.on_efa_devices = [this](unsigned n) { board_.PublishEfa(n); };
  // The EFA fallback rule needs to know whether NCCL jobs run here, and what our own probes
  // moved over ethernet. fabric_ is set once at start, before the EFA thread runs.
  efa_ = std::make_unique<efa::EfaMonitor>(
      eopts, clock_, &findings_, [this] { return state::NcclActive(*board_.Snapshot()); },
      [this]() -> uint64_t { return fabric_ ? fabric_->OwnEthernetTrafficBytes() : 0; });
  board_.PublishEfaExpected(eopts.health.type_supports);
  efa_->EvaluateOnce();
  startup::LogEfa(config_, efa_->efa_devices(), eopts);
}

fabric::EndpointOptions App::CreateFabric() {
  // The fabric is optional: a node without a usable provider still reports everything else, and
  // says why it has no responder.
  SetLibfabricDefaults();
  spdlog::info("libfabric {}", fabric::LoadedLibfabric());
  fabric::FabricServiceOptions fopts = FabricServiceOptionsFrom(config_);
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
  if (const fabric::Responder* r = fabric_->responder(); r != nullptr) {
    board_.PublishResponder({.provider = r->info().provider});
  }
  // Collectives use the same providers and interface as the responder that worked.
  collective_ = std::make_unique<collective::Participant>(
      config_.node_name, collective::CollectiveLimits{},
      collective::HostBackendFactory(fopts.endpoint),
      collective::NcclBackendFactory({.log_dir = config_.state_dir}), clock_);
  collective_collector_ = std::make_unique<collective::CollectiveCollector>(*collective_);
  fabric_collector_ = std::make_unique<fabric::FabricCollector>(*fabric_);
  startup::LogResponder(fabric_->responder());
  PublishFabricFindings();
  return fopts.endpoint;
}

void App::CreateSelfPing(const fabric::EndpointOptions& endpoint) {
  // FabricReady's proof that the fabric carries messages: a ping of our own responder. Only
  // where FabricReady is written (the Kubernetes signals run): elsewhere nobody reads it, and a
  // fresh endpoint a minute costs an idle agent 2 MiB and its responder's counters a ping.
  if (!signals_ || !fabric_) return;
  const fabric::Responder* responder = fabric_->responder();
  self_ping_ = std::make_unique<agent::SelfPing>(
      endpoint, responder != nullptr ? responder->address() : "", std::chrono::minutes(1), clock_,
      [this](const auto& s) { board_.PublishSelfPing(s); });
  board_.PublishSelfPing(self_ping_->Latest());
}

absl::Status App::CreatePeers() {
  auto channels = rpc::PeerChannels::Create(PeerTlsFromConfig(config_));
  if (!channels.ok()) return channels.status();
  peer_channels_ = *std::move(channels);
  peer_lookup_ = std::make_unique<rpc::GrpcPeerLookup>(*peer_channels_);
  collective_calls_ = std::make_unique<rpc::GrpcCollectiveCalls>(*peer_channels_);
  agent::TargetPolicyOptions t = TargetPolicyOptionsFrom(config_);
  startup::LogTargets(t);
  targets_ = std::make_unique<agent::TargetPolicy>(std::move(t));
  probes_ = std::make_unique<agent::ProbeRunner>(fabric_.get(), *peer_lookup_, *targets_, clock_);
  coordination_ = std::make_unique<agent::Coordination>(
      *collective_calls_, collective::CollectiveLimits{}, *targets_, clock_);
  return absl::OkStatus();
}

absl::Status App::CreateGrpc() {
  rpc::GrpcEdgeOptions gopts = GrpcEdgeOptionsFrom(config_);
  gopts.clock = &clock_;  // the operations' clock: call deadlines reach them on it
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
  std::vector<tls::WatchedFiles> files = WatchedTlsFilesFrom(config_);
  if (files.empty()) return absl::OkStatus();
  auto certs = tls::CertificateWatcher::Create(std::move(files), config_.tls_reload_interval,
                                               clock_, &findings_);
  if (!certs.ok()) return certs.status();
  certs_ = *std::move(certs);
  return absl::OkStatus();
}

absl::Status App::CreateMetrics() {
  const exporter::PrometheusEdgeOptions mopts = PrometheusEdgeOptionsFrom(config_, start_time_);
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
  startup::LogEdges(config_, metrics_->port(), grpc_->port());
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
  absl::StatusOr<std::unique_ptr<mesh::PeerSource>> source = MeshPeerSourceFrom(config_);
  if (!source.ok()) return source.status();
  mesh::MeshOptions m = MeshOptionsFrom(config_);
  m.self_agent = self_.advertised;
  m.endpoint = endpoint;
  auto created = mesh::Mesh::Create(
      m, *std::move(source), *peer_lookup_,
      [this](std::vector<common::Finding> f) {
        findings_.Publish("mesh", std::move(f));
        board_.PublishMesh(state::MeshPeersOf(mesh_->Snapshot()));
      },
      clock_);
  if (!created.ok()) return created.status();
  mesh_ = *std::move(created);
  board_.PublishMesh({});
  mesh_collector_ = std::make_unique<mesh::MeshCollector>(*mesh_);
  spdlog::info("mesh: {} discovery, fan-out {}, every {} ms, {} pings per peer",
               config_.mesh_discovery, config_.mesh_fanout, config_.mesh_interval.count(),
               config_.mesh_count);
  return absl::OkStatus();
}

absl::Status App::CreateCollectiveSchedule() {
  if (config_.collective_probe_interval.count() == 0) return absl::OkStatus();
  const collective::CollectiveLimits limits{};
  absl::StatusOr<CollectiveScheduleSpec> spec = CollectiveScheduleSpecFrom(config_, limits);
  if (!spec.ok()) return spec.status();
  agent::CollectiveScheduleOptions o = std::move(spec->options);
  const agent::ProbePeers& peers = spec->peers;
  // This agent is rank 0 and dials itself: as its peers would (--pod-ip), else on the address
  // gRPC listens on.
  o.self_agent = self_.dialable;
  agent::CollectiveSchedule::PeersFn peer_list;
  if (peers.from_mesh > 0) {
    peer_list = [this, n = peers.from_mesh] {
      return state::ReachableMeshPeers(*board_.Snapshot(), n);
    };
  } else {
    peer_list = [list = peers.agents] { return list; };
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
  workloads::WorkloadWatcherOptions w = WorkloadOptionsFrom(config_);
  w.on_table = [this](auto table) { board_.PublishWorkloads(std::move(table)); };
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
  signals::KubeSignalsOptions o = KubeSignalsOptionsFrom(config_, api);
  o.on_advertised_efa = [this](auto efa) { board_.PublishEfaAdvertised(efa); };
  signals_ = std::make_unique<signals::KubeSignals>(
      std::move(o), [this] { return signals::Observe(*board_.Snapshot(), *findings_.Snapshot()); },
      KubeSender(api), clock_);
  spdlog::info("kubernetes signals: Events on pods with NCCL problems, NodeConditions on node {}",
               config_.node_name);
}

void App::CreateDoctor() {
  doctor::DoctorRunnerOptions o = DoctorOptionsFrom(config_);
  o.on_report = [this](const doctor::Report& r) { board_.PublishDoctor(r.node); };
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

int App::metrics_port() const { return metrics_ ? metrics_->port() : 0; }
int App::grpc_port() const { return grpc_ ? grpc_->port() : 0; }

common::NodeHealth App::GetNodeHealth() const {
  return state::NodeHealthOf(*board_.Snapshot(),
                             {.node = config_.node_name,
                              .version = EFAWATCH_VERSION,
                              .revision = EFAWATCH_REVISION,
                              .start_time = start_time_},
                             collector_status_.Snapshot(), *findings_.Snapshot());
}

}  // namespace efawatch
