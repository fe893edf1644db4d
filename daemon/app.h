// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "daemon/agent/agent_handler.h"
#include "daemon/config.h"
#include "daemon/state/node_rules.h"
#include "daemon/state/node_state.h"
#include "lib/common/clock.h"
#include "lib/common/collector_status.h"
#include "lib/common/findings_board.h"
#include "lib/common/memory_budget.h"

namespace efawatch {

namespace exporter {
class PrometheusEdge;
}
namespace rpc {
class GrpcEdge;
class LimitsCollector;
}  // namespace rpc
namespace efa {
class EfaMonitor;
}
namespace tls {
class CertificateWatcher;
}
namespace fabric {
class FabricCollector;
class FabricService;
struct EndpointOptions;
}  // namespace fabric
namespace collective {
class Participant;
class CollectiveCollector;
}  // namespace collective
namespace mesh {
class Mesh;
class MeshCollector;
}  // namespace mesh
namespace agent {
class ProbeRunner;
class SelfPing;
class Coordination;
class CollectiveSchedule;
class ClockWaiter;
class TargetPolicy;
class Operations;
}  // namespace agent
namespace rpc {
class GrpcCollectiveCalls;
class GrpcPeerLookup;
class PeerChannels;
struct PeerTls;
}  // namespace rpc
namespace workloads {
class WorkloadWatcher;
}  // namespace workloads
namespace signals {
class KubeSignals;
struct Observation;
struct NodeCondition;
}  // namespace signals
namespace doctor {
class DoctorRunner;
}  // namespace doctor
namespace logs {
class Tailer;
class TailerCollector;
class PodAnalysis;
class VerdictCollector;
}  // namespace logs
namespace inspector {
class InspectorCollector;
}  // namespace inspector
namespace common {
class ProcessCollector;
class CollectorGroup;
class FindingsCollector;
}  // namespace common

/// The composition root: the only place that knows every module. Create() builds and starts
/// everything (edges bound, port file written); Stop() (and the destructor) stops everything
/// within about a second. Create and Stop are called from the main thread; GetNodeHealth from
/// gRPC threads.
class App final {
 public:
  static absl::StatusOr<std::unique_ptr<App>> Create(const Config& config,
                                                     const common::Clock& clock);
  ~App();

  void Stop();

  /// The node's health now (the gRPC edge reaches it through agent::Operations).
  common::NodeHealth GetNodeHealth() const;

  int metrics_port() const;
  int grpc_port() const;

 private:
  App(const Config& config, const common::Clock& clock);
  // Start builds the modules in dependency order through one small factory each, then starts
  // the background threads once both edges are bound.
  absl::Status Start();
  void CreateLogs();
  void CreateInspector();
  void CreateEfa();
  // Opens the fabric service (and the collective participant) on the first provider that works;
  // returns the endpoint settings the mesh should use (those of the attempt that worked).
  fabric::EndpointOptions CreateFabric();
  // The clients this agent uses toward other agents (one channel cache, one lookup client) and
  // the on-demand operations built on them.
  absl::Status CreatePeers();
  absl::Status CreateGrpc();
  absl::Status CreateCerts();
  absl::Status CreateMetrics();
  // Re-evaluates the fabric findings (not on EFA, loopback address) and publishes them. Called at
  // start and from probe threads after each probe.
  void PublishFabricFindings();
  // Builds the fleet ping mesh when a discovery is configured (not started).
  absl::Status CreateMesh(const fabric::EndpointOptions& endpoint);
  void CreateWorkloads();  // sets workloads_ when --workload-identity is on and a token exists
  void CreateSignals();    // sets signals_ when --kube-signals is on and a token exists
  // Sets self_ping_ (FabricReady's ping of our own responder) where the signals run.
  void CreateSelfPing(const fabric::EndpointOptions& endpoint);
  void CreateDoctor();
  // Builds the scheduled collective probe with --collective-probe-interval-ms (not started).
  absl::Status CreateCollectiveSchedule();

  const Config config_;
  const common::Clock& clock_;
  const std::chrono::system_clock::time_point start_time_;
  common::CollectorStatusBoard collector_status_;
  mutable common::FindingsBoard findings_;
  // What the modules last published; the rules that read several of them read this.
  state::NodeStateBoard board_;
  state::SelfAddress self_;  // derived once, when gRPC has its port
  common::MemoryBudget memory_budget_{config_.memory_budget};  // Probes draw from it.
  std::unique_ptr<common::ProcessCollector> process_collector_;
  std::unique_ptr<common::FindingsCollector> findings_collector_;
  std::unique_ptr<logs::PodAnalysis> pods_;
  std::unique_ptr<logs::VerdictCollector> verdict_collector_;  // Reads pods_.
  std::unique_ptr<logs::Tailer> tailer_;
  std::unique_ptr<logs::TailerCollector> tailer_collector_;  // Reads tailer_'s counters.
  std::unique_ptr<common::CollectorGroup> logs_collector_;   // The two above, as one.
  // The NCCL Inspector's files, followed by a tailer of their own (daemon/inspector).
  std::unique_ptr<inspector::InspectorCollector> inspector_;
  std::unique_ptr<logs::Tailer> inspector_tailer_;
  std::unique_ptr<efa::EfaMonitor> efa_;
  std::unique_ptr<fabric::FabricService> fabric_;  // Null when no provider could be opened.
  std::unique_ptr<fabric::FabricCollector> fabric_collector_;
  std::unique_ptr<rpc::PeerChannels> peer_channels_;
  std::unique_ptr<rpc::GrpcPeerLookup> peer_lookup_;
  std::unique_ptr<rpc::GrpcCollectiveCalls> collective_calls_;
  std::unique_ptr<agent::TargetPolicy> targets_;
  std::unique_ptr<agent::ProbeRunner> probes_;
  std::unique_ptr<agent::Coordination> coordination_;
  std::unique_ptr<agent::ClockWaiter> schedule_waiter_;
  // Null unless --collective-probe-interval-ms; runs through coordination_.
  std::unique_ptr<agent::CollectiveSchedule> collective_schedule_;
  std::unique_ptr<collective::Participant> collective_;
  std::unique_ptr<collective::CollectiveCollector> collective_collector_;
  std::unique_ptr<mesh::Mesh> mesh_;
  std::unique_ptr<mesh::MeshCollector> mesh_collector_;
  std::unique_ptr<workloads::WorkloadWatcher> workloads_;  // Null when workload identity is off.
  std::unique_ptr<doctor::DoctorRunner> doctor_;
  std::unique_ptr<agent::SelfPing> self_ping_;     // Null without a fabric service (FabricReady).
  std::unique_ptr<signals::KubeSignals> signals_;  // Null when Kubernetes signals are off.
  std::unique_ptr<rpc::LimitsCollector> limits_collector_;  // Reads grpc_'s counters.
  std::unique_ptr<tls::CertificateWatcher> certs_;          // Null without TLS files.
  std::unique_ptr<exporter::PrometheusEdge> metrics_;
  std::unique_ptr<agent::Operations> ops_;  // What the gRPC edge calls.
  std::unique_ptr<rpc::GrpcEdge> grpc_;
};

}  // namespace efawatch
