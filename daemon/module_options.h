// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/agent/collective_schedule.h"
#include "daemon/agent/target_policy.h"
#include "daemon/config.h"
#include "daemon/doctor/doctor_runner.h"
#include "daemon/efa/efa_monitor.h"
#include "daemon/export/prometheus_edge.h"
#include "daemon/inspector/inspector_collector.h"
#include "daemon/logs/pod_analysis.h"
#include "daemon/logs/tailer.h"
#include "daemon/rpc/grpc_edge.h"
#include "daemon/rpc/peer_client.h"
#include "daemon/signals/kube_signals.h"
#include "daemon/tls/cert_watcher.h"
#include "daemon/workloads/workloads.h"
#include "lib/kube/api_client.h"
#include "probes/fabric/fabric_service.h"
#include "probes/mesh/discovery.h"
#include "probes/mesh/mesh.h"

// Each module's options from the agent's Config, in one place: the composition root (app.cc)
// builds and wires modules with these and copies no Config field itself. Functions that log say
// what they chose, once, at start.
namespace efawatch {

/// The Kubernetes API connection the agent's own API users share (workload identity, signals).
kube::ApiOptions KubeApiFrom(const Config& c);
/// The pod-log tailer's; creates --state-dir for its checkpoint (a warning when unusable).
logs::TailerOptions TailerOptionsFrom(const Config& c);
logs::PodAnalysisOptions PodAnalysisOptionsFrom(const Config& c);
inspector::InspectorCollectorOptions InspectorOptionsFrom(const Config& c);
efa::EfaMonitorOptions EfaOptionsFrom(const Config& c);
/// Without --fabric-interface, EFA (and shm, which never leaves the host) are tried on any
/// device; IP providers (tcp, sockets) are pinned to loopback, so an agent never exposes an
/// unauthenticated fabric endpoint on the network unless told to (the DaemonSet names the pod's
/// interface). Each attempt is (providers, interface), in order.
std::vector<std::pair<std::vector<std::string>, std::string>> FabricAttempts(const Config& c);
/// libfabric's rxm settings the agent's probes need, unless the user set them: in the
/// environment, before the first fi_getinfo, while no thread runs.
void SetLibfabricDefaults();
/// The fabric service's options but its providers and interface (FabricAttempts' to try).
fabric::FabricServiceOptions FabricServiceOptionsFrom(const Config& c);
agent::TargetPolicyOptions TargetPolicyOptionsFrom(const Config& c);
/// How this agent dials other agents, from its own TLS settings.
rpc::PeerTls PeerTlsFromConfig(const Config& c);
rpc::GrpcEdgeOptions GrpcEdgeOptionsFrom(const Config& c);
/// The TLS files in use, watched for renewal.
std::vector<tls::WatchedFiles> WatchedTlsFilesFrom(const Config& c);
exporter::PrometheusEdgeOptions PrometheusEdgeOptionsFrom(
    const Config& c, std::chrono::system_clock::time_point start_time);
/// How /metrics is protected, for the start-up line.
std::string MetricsSecurity(const Config& c);
/// The mesh's options but its own address and endpoint (known once gRPC and the fabric are up).
mesh::MeshOptions MeshOptionsFrom(const Config& c);
/// Where the mesh finds its peers (--mesh-discovery static, dns or kubernetes).
absl::StatusOr<std::unique_ptr<mesh::PeerSource>> MeshPeerSourceFrom(const Config& c);
workloads::WorkloadWatcherOptions WorkloadOptionsFrom(const Config& c);
signals::KubeSignalsOptions KubeSignalsOptionsFrom(const Config& c, const kube::ApiOptions& api);
/// The Kubernetes signals' requests, through `api`.
signals::Sender KubeSender(const kube::ApiOptions& api);
doctor::DoctorRunnerOptions DoctorOptionsFrom(const Config& c);
/// The scheduled collective probe (--collective-probe-*): its options but its own address, and
/// the peers it names; INVALID_ARGUMENT naming the flag when one does not parse.
struct CollectiveScheduleSpec {
  agent::CollectiveScheduleOptions options;
  agent::ProbePeers peers;
};
absl::StatusOr<CollectiveScheduleSpec> CollectiveScheduleSpecFrom(
    const Config& c, const collective::CollectiveLimits& limits);

}  // namespace efawatch
