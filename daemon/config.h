// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/common/connection_table.h"
#include "lib/common/host_paths.h"
#include "lib/common/ip_address.h"

namespace efawatch {

enum class LogFormat { kText, kJson };

/// Everything efawatchd is told, parsed once at start and passed down by value (DCGM's habit):
/// no module reads flags or the environment itself.
struct Config {
  std::string config_file;
  // Default ports chosen to collide with nothing usual on a GPU node (docs/ports.md): 9400
  // dcgm-exporter, 9100 node_exporter, 8002/8003 EKS agent, 20256/20257 NPD, 28028 NCCL RAS.
  std::string metrics_listen = ":9477";
  // HTTPS on the metrics port (both set) instead of HTTP; /healthz and /readyz stay open.
  std::string metrics_tls_cert;
  std::string metrics_tls_key;
  std::string metrics_tls_client_ca;      // set: /metrics needs a client certificate it signed
  std::string metrics_bearer_token_file;  // set: /metrics needs its token (read per scrape)
  std::string grpc_listen = "127.0.0.1:9478";
  std::string grpc_tls_cert;
  std::string grpc_tls_key;
  std::string grpc_tls_client_ca;  // set: clients must present a certificate it signed (mTLS)
  bool grpc_insecure = false;      // plaintext gRPC on a non-loopback address, explicitly
  // Certificate identities per role (docs/security.md); all empty: no per-call authorization.
  std::vector<std::string> grpc_authz_readers;
  std::vector<std::string> grpc_authz_operators;
  std::vector<std::string> grpc_authz_agents;
  // Where probes and collectives may connect (daemon/agent/target_policy.h).
  std::vector<common::Cidr> probe_allowed_cidrs;  // empty: this host's subnets
  bool probe_allow_loopback = false;      // default: true when gRPC listens on loopback only
  bool probe_allow_loopback_set = false;  // given explicitly (else the default above applies)
  std::string port_file;
  common::HostPaths paths;
  std::filesystem::path state_dir = "/var/lib/efawatch";
  LogFormat log_format = LogFormat::kText;
  std::string log_level = "info";
  std::string node_name;  // default: the host name
  std::vector<std::string> fabric_providers = {"efa", "tcp"};
  std::string fabric_interface;  // empty: any; "lo" pins tcp to loopback
  bool fabric_responder = true;
  // Responder receive buffers: their product bounds its memory. 4 x 1 MiB keeps an idle agent
  // under 30 MiB; bandwidth sizes above the message size are skipped (and say so).
  unsigned fabric_rx_depth = 4;
  uint64_t fabric_max_message_bytes = (1u << 20) + 4096;
  std::chrono::milliseconds collector_budget{2000};
  // EFA health (daemon/efa). --efa-expected-devices: `auto` (what the node was given: the EFA
  // devices present at start, or the node's allocatable vpc.amazonaws.com/efa when larger),
  // `none`, `type` (what the instance type supports), or a number (`0` is `auto`, as it was
  // "from the type" before `auto` existed).
  enum class EfaExpectation { kAuto, kNone, kType, kCount };
  std::string instance_type;
  EfaExpectation efa_expectation = EfaExpectation::kAuto;
  unsigned efa_expected_devices = 0;       // kCount only
  bool efa_expected_devices_zero = false;  // given as 0: the deprecated spelling of auto
  std::chrono::seconds efa_clear_after{600};
  std::map<std::string, uint64_t> efa_rise_thresholds = {{"rx_drops", 100}};
  std::vector<std::string> net_interface_prefixes = {"eth", "ens", "enp", "eno"};
  std::chrono::milliseconds efa_min_read_interval{1000};
  std::chrono::seconds efa_evaluate_interval{15};
  std::chrono::seconds pod_grace_period{300};
  unsigned max_log_files = 4096;
  unsigned max_communicators_per_pod = 32;  // logs::PodAnalysisOptions says why 32
  unsigned max_watch_streams = 32;          // rpc::GrpcEdgeOptions
  // What clients of each port can hold (docs/security.md, Listeners). A few hundred connections
  // cost a few MiB at most on either port (HTTP: up to 32 KiB of buffers each, touched only as
  // used; gRPC: about 20 KiB each), inside --memory-budget; Prometheus, the kubelet and a fleet's
  // CLI users need a handful.
  // TLS files (gRPC's, the metrics port's) are read again this often: renewals need no restart.
  std::chrono::milliseconds tls_reload_interval{30000};
  common::ConnectionLimits metrics_limits{
      .total = 256, .per_peer = 64, .request_deadline = std::chrono::seconds(10)};
  // gRPC's own timeouts end idle and handshaking connections (rpc::GrpcEdgeOptions).
  common::ConnectionLimits grpc_limits{
      .total = 256, .per_peer = 64, .request_deadline = std::chrono::milliseconds(0)};
  // The shipped DaemonSet limits the pod to 256 MiB; the idle agent uses about 40 (responder
  // buffers, analyzers, tailer; docs/limits.md), so 96 MiB for requests leaves headroom.
  uint64_t memory_budget = 96u << 20;
  uint64_t log_history_bytes = 64ull << 20;  // per container on first sight (daemon/logs/tailer)
  uint64_t log_read_budget = 32ull << 20;    // bytes/s while backlogged (logs::TailerOptions)
  uint64_t log_first_read_max_bytes = 256ull << 20;  // larger on first sight: head and tail
  std::vector<std::string> log_globs;                // NCCL_DEBUG_FILE outputs, docker json logs
  // NCCL_DEBUG_FILE outputs in pod volumes, by file name (logs::PodVolumeOptions).
  std::vector<std::string> pod_volume_patterns = {"nccl*.log", "nccl.*.*", "*.nccl"};
  unsigned max_log_files_per_pod = 256;  // logs::PodVolumeOptions says why
  // Ray session logs in containers' own filesystems through <procfs>/<pid>/root (needs hostPID).
  bool container_rootfs = false;
  // A hostPath the jobs' NCCL Inspector writes to (NCCL_INSPECTOR_DUMP_DIR); empty: pod volumes
  // only (daemon/inspector).
  std::filesystem::path inspector_dir;
  unsigned inspector_stale_after_seconds = 600;  // inspector::InspectorCollectorOptions
  // Fleet ping mesh (probes/mesh); off unless a discovery is chosen.
  std::string mesh_discovery = "off";  // off | static | dns | kubernetes
  std::string mesh_peers;              // static: [node=]host[:port][/group],...
  std::string mesh_dns_name;           // dns: the headless Service's name
  unsigned mesh_agent_port = 9478;     // dns, kubernetes: peers' gRPC port
  std::string mesh_k8s_api;            // empty: in-cluster (KUBERNETES_SERVICE_HOST)
  std::string mesh_k8s_namespace;      // empty: the service account's
  std::string mesh_k8s_label_selector = "app.kubernetes.io/name=efawatch";
  std::string mesh_k8s_group_node_label;
  std::string mesh_k8s_token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string mesh_k8s_ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  // Workload identity (daemon/workloads): this node's pods listed through the Kubernetes API
  // (connection: the mesh-k8s-api, -token-file and -ca-file settings).
  bool workload_identity = false;
  std::chrono::milliseconds workload_interval{30000};
  // Kubernetes Events and NodeConditions (daemon/signals), through the same API connection.
  bool kube_signals = true;
  std::chrono::milliseconds kube_signals_interval{5000};
  std::chrono::milliseconds doctor_interval{3600 * 1000};  // daemon/doctor; hourly
  std::string mesh_group;                                  // this node's topology group
  unsigned mesh_fanout = 8;
  unsigned mesh_max_group = 32;
  std::chrono::milliseconds mesh_interval{15000};
  std::chrono::milliseconds mesh_discovery_interval{60000};
  unsigned mesh_count = 10;
  std::chrono::milliseconds mesh_message_timeout{500};
  std::string pod_ip;                 // this agent's address as peers dial it (downward API)
  std::string grpc_peer_server_name;  // certificate name expected of peer agents
  // The scheduled collective probe (daemon/agent/collective_schedule); 0: off. Sizes, op and
  // backend are checked against the collective limits when the agent builds the schedule.
  std::chrono::milliseconds collective_probe_interval{0};
  std::string collective_probe_peers;  // host:port,... or mesh:N
  std::string collective_probe_sizes = "1M,16M,64M";
  std::string collective_probe_op = "all_reduce";
  std::string collective_probe_backend = "host";
  unsigned collective_probe_iters = 5;
  std::chrono::milliseconds collective_probe_deadline{60000};
};

/// What parsing asks the caller to do: run, or print something and exit 0.
enum class Action { kRun, kHelp, kVersion, kMetricsDoc };

struct ParsedArgs {
  Action action = Action::kRun;
  Config config;
  std::string help_text;  // for Action::kHelp
};

/// Parses flags > EFAWATCH_* environment > config file > defaults, then validates. Every flag
/// `--some-name` has the environment twin `EFAWATCH_SOME_NAME` and the config-file key
/// `some-name` (file format: `key = value` lines, `#` comments). Errors are one line naming the
/// flag and the problem (InvalidArgument); the caller prints it and exits 2. `env` is passed in
/// so tests need not touch the process environment.
absl::StatusOr<ParsedArgs> ParseConfig(const std::vector<std::string>& args,
                                       const std::map<std::string, std::string>& env);

/// Checks a listen address: `host:port`, `:port` (all addresses), `[v6]:port`; port 0..65535.
absl::Status ValidateListenAddress(const std::string& flag, const std::string& address);

/// True for 127.0.0.0/8, ::1 and "localhost" hosts.
bool IsLoopbackAddress(const std::string& address);

/// The environment of this process as a map.
std::map<std::string, std::string> ProcessEnvironment();

}  // namespace efawatch
