// SPDX-License-Identifier: Apache-2.0
#include "daemon/config.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/common/read_file.h"

extern char** environ;

namespace efawatch {
namespace {

using Setter = std::function<absl::Status(Config&, const std::string&)>;

struct Option {
  std::string name;  // flag without the leading "--"
  bool is_bool = false;
  std::string help;
  Setter set;
};

std::string EnvName(const std::string& flag) {
  std::string out = "EFAWATCH_";
  for (char c : flag) out += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return out;
}

absl::Status Bad(const std::string& flag, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", value, ": ", why));
}

Setter String(std::string Config::*field) {
  return [field](Config& c, const std::string& v) {
    c.*field = v;
    return absl::OkStatus();
  };
}

Setter Path(std::filesystem::path common::HostPaths::*field) {
  return [field](Config& c, const std::string& v) {
    c.paths.*field = v;
    return absl::OkStatus();
  };
}

absl::StatusOr<bool> ParseBool(const std::string& v) {
  std::string l = absl::AsciiStrToLower(v);
  if (l == "true" || l == "1" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "0" || l == "no" || l == "off") return false;
  return absl::InvalidArgumentError("not a boolean (true or false)");
}

Setter Bool(bool Config::*field, const std::string& flag) {
  return [field, flag](Config& c, const std::string& v) -> absl::Status {
    auto b = ParseBool(v);
    if (!b.ok()) return Bad(flag, v, std::string(b.status().message()));
    c.*field = *b;
    return absl::OkStatus();
  };
}

// "96Mi", "1Gi", "65536" (bytes): the Kubernetes quantity suffixes for memory.
absl::StatusOr<uint64_t> ParseBytes(std::string v) {
  uint64_t unit = 1;
  for (const auto& [suffix, mult] :
       {std::pair<const char*, uint64_t>{"Ki", 1u << 10}, {"Mi", 1u << 20}, {"Gi", 1u << 30}}) {
    if (absl::EndsWith(v, suffix)) {
      unit = mult;
      v.resize(v.size() - 2);
      break;
    }
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n > (uint64_t{1} << 40) / unit) {
    return absl::InvalidArgumentError("not a size (bytes, or a number with Ki, Mi or Gi)");
  }
  return n * unit;
}

// An integer flag within [lo, hi], stored through `store` (unit conversion lives there).
template <typename Store>
Setter Int(const std::string& flag, int64_t lo, int64_t hi, Store store) {
  return [flag, lo, hi, store](Config& c, const std::string& v) -> absl::Status {
    int64_t n = 0;
    if (!absl::SimpleAtoi(v, &n) || n < lo || n > hi) {
      return Bad(flag, v, absl::StrCat("must be an integer from ", lo, " to ", hi));
    }
    store(c, n);
    return absl::OkStatus();
  };
}

Setter Identities(std::vector<std::string> Config::*field) {
  return [field](Config& c, const std::string& v) {
    c.*field = absl::StrSplit(v, ',', absl::SkipWhitespace());
    for (auto& id : c.*field) id = std::string(absl::StripAsciiWhitespace(id));
    return absl::OkStatus();
  };
}

Setter Unsigned(unsigned Config::*field, const std::string& flag, int64_t lo, int64_t hi) {
  return Int(flag, lo, hi, [field](Config& c, int64_t n) { c.*field = static_cast<unsigned>(n); });
}

Setter Millis(std::chrono::milliseconds Config::*field, const std::string& flag, int64_t lo,
              int64_t hi) {
  return Int(flag, lo, hi,
             [field](Config& c, int64_t n) { c.*field = std::chrono::milliseconds(n); });
}

// The flag table: one row per flag. function-length: table
const std::vector<Option>& Options() {
  static const std::vector<Option> opts = {
      {"config", false, "Config file of `key = value` lines (keys are flag names).",
       String(&Config::config_file)},
      {"metrics-listen", false, "Prometheus /metrics address, host:port or :port.",
       String(&Config::metrics_listen)},
      {"metrics-tls-cert", false,
       "PEM server certificate: /metrics, /healthz and /readyz are served over HTTPS.",
       String(&Config::metrics_tls_cert)},
      {"metrics-tls-key", false, "PEM private key for --metrics-tls-cert.",
       String(&Config::metrics_tls_key)},
      {"metrics-tls-client-ca", false,
       "PEM CA bundle; a scrape of /metrics must present a client certificate it signed.",
       String(&Config::metrics_tls_client_ca)},
      {"metrics-bearer-token-file", false,
       "File holding a token; /metrics needs `Authorization: Bearer <token>` (read at every "
       "scrape, so a rotated token works at once; /healthz and /readyz stay open).",
       String(&Config::metrics_bearer_token_file)},
      {"metrics-max-connections", false,
       "Most connections the metrics port holds; at the bound a newcomer replaces the one that "
       "has waited longest for a request (docs/security.md, Listeners).",
       Int("metrics-max-connections", 4, 65536,
           [](Config& c, int64_t n) { c.metrics_limits.total = static_cast<size_t>(n); })},
      {"metrics-max-connections-per-peer", false,
       "Most connections to the metrics port from one address.",
       Int("metrics-max-connections-per-peer", 1, 65536,
           [](Config& c, int64_t n) { c.metrics_limits.per_peer = static_cast<size_t>(n); })},
      {"metrics-request-deadline-ms", false,
       "A request's headers are due this long after its connection opened or its previous "
       "answer went (also the keep-alive idle timeout); later, the connection is cut.",
       Int("metrics-request-deadline-ms", 100, 600000,
           [](Config& c, int64_t n) {
             c.metrics_limits.request_deadline = std::chrono::milliseconds(n);
           })},
      {"grpc-listen", false,
       "gRPC address, host:port, or unix:/path (a socket only the pod reaches: the default "
       "install's); plaintext only on loopback or a unix socket.",
       String(&Config::grpc_listen)},
      {"grpc-tls-cert", false, "PEM server certificate for gRPC.", String(&Config::grpc_tls_cert)},
      {"grpc-tls-key", false, "PEM private key for gRPC.", String(&Config::grpc_tls_key)},
      {"grpc-tls-client-ca", false, "PEM CA bundle; clients must present a certificate it signed.",
       String(&Config::grpc_tls_client_ca)},
      {"grpc-max-connections", false,
       "Most connections the gRPC port holds; at the bound a newcomer replaces the one idle "
       "longest (docs/security.md, Listeners).",
       Int("grpc-max-connections", 4, 65536,
           [](Config& c, int64_t n) { c.grpc_limits.total = static_cast<size_t>(n); })},
      {"grpc-max-connections-per-peer", false,
       "Most connections to the gRPC port from one address.",
       Int("grpc-max-connections-per-peer", 1, 65536,
           [](Config& c, int64_t n) { c.grpc_limits.per_peer = static_cast<size_t>(n); })},
      {"tls-reload-interval-ms", false,
       "How often TLS certificate, key and CA files are read again, so renewed ones are used "
       "without a restart (gRPC counts whole seconds).",
       Millis(&Config::tls_reload_interval, "tls-reload-interval-ms", 1000, 86400000)},
      {"grpc-insecure", true, "Allow plaintext gRPC on a non-loopback address.",
       Bool(&Config::grpc_insecure, "grpc-insecure")},
      {"grpc-authz-readers", false,
       "Certificate identities (SAN or CN) allowed health, node health and findings.",
       Identities(&Config::grpc_authz_readers)},
      {"grpc-authz-operators", false,
       "Certificate identities allowed probes and collectives (and what readers may).",
       Identities(&Config::grpc_authz_operators)},
      {"grpc-authz-agents", false,
       "Certificate identities of peer agents (join, start and abort collectives).",
       Identities(&Config::grpc_authz_agents)},
      {"probe-allowed-cidrs", false,
       "Comma-separated address blocks where peer agents live; probes and collectives connect "
       "nowhere else (default: this host's subnets).",
       [](Config& c, const std::string& v) -> absl::Status {
         auto list = common::ParseCidrList(v);
         if (!list.ok()) return Bad("probe-allowed-cidrs", v, std::string(list.status().message()));
         c.probe_allowed_cidrs = *std::move(list);
         return absl::OkStatus();
       }},
      {"probe-allow-loopback", true,
       "Let probes and collectives reach agents on loopback (default: only when gRPC listens on "
       "loopback).",
       [](Config& c, const std::string& v) -> absl::Status {
         auto b = ParseBool(v);
         if (!b.ok()) return Bad("probe-allow-loopback", v, std::string(b.status().message()));
         c.probe_allow_loopback = *b;
         c.probe_allow_loopback_set = true;
         return absl::OkStatus();
       }},
      {"port-file", false, "Write the bound ports as JSON to this file.",
       String(&Config::port_file)},
      {"sysfs-root", false, "Where the host's /sys is mounted.", Path(&common::HostPaths::sysfs)},
      {"procfs-root", false, "Where the host's /proc is mounted.",
       Path(&common::HostPaths::procfs)},
      {"pod-log-root", false, "Kubernetes pod log directory to analyze.",
       Path(&common::HostPaths::pod_log_root)},
      {"pod-volume-root", false,
       "kubelet's pods directory: Ray session logs and NCCL_DEBUG_FILE outputs in pod volumes "
       "are analyzed per pod (empty: off).",
       Path(&common::HostPaths::pod_volume_root)},
      {"pod-volume-patterns", false,
       "Comma-separated fnmatch(3) file name patterns of NCCL_DEBUG_FILE outputs in pod volumes.",
       [](Config& c, const std::string& v) -> absl::Status {
         c.pod_volume_patterns = absl::StrSplit(v, ',', absl::SkipWhitespace());
         return absl::OkStatus();
       }},
      {"max-log-files-per-pod", false,
       "Most pod volume files followed per pod; the least recently written are left (counted).",
       Unsigned(&Config::max_log_files_per_pod, "max-log-files-per-pod", 1, 100000)},
      {"container-rootfs", true,
       "Also read Ray session logs inside containers without a /tmp/ray volume, through "
       "<procfs-root>/<pid>/root (needs the host's PID namespace).",
       Bool(&Config::container_rootfs, "container-rootfs")},
      {"inspector-dir", false,
       "A directory (hostPath) the jobs' NCCL Inspector writes to (NCCL_INSPECTOR_DUMP_DIR); "
       "Inspector files in pod volumes are read without it.",
       [](Config& c, const std::string& v) {
         c.inspector_dir = v;
         return absl::OkStatus();
       }},
      {"inspector-stale-after-seconds", false,
       "A communicator whose newest NCCL Inspector progress is older than this shows as stale "
       "(efawatch_nccl_inspector_stale); longer than the jobs' dump interval (at least 30 s in "
       "Prometheus mode).",
       Unsigned(&Config::inspector_stale_after_seconds, "inspector-stale-after-seconds", 60,
                86400)},
      {"state-dir", false, "Directory for the agent's state (checkpoints).",
       [](Config& c, const std::string& v) {
         c.state_dir = v;
         return absl::OkStatus();
       }},
      {"log-format", false, "text or json.",
       [](Config& c, const std::string& v) -> absl::Status {
         if (v == "text") {
           c.log_format = LogFormat::kText;
         } else if (v == "json") {
           c.log_format = LogFormat::kJson;
         } else {
           return Bad("log-format", v, "must be text or json");
         }
         return absl::OkStatus();
       }},
      {"log-level", false, "trace, debug, info, warn, error.",
       [](Config& c, const std::string& v) -> absl::Status {
         static const std::vector<std::string> levels = {"trace", "debug", "info", "warn", "error"};
         if (std::find(levels.begin(), levels.end(), v) == levels.end()) {
           return Bad("log-level", v, "must be one of trace, debug, info, warn, error");
         }
         c.log_level = v;
         return absl::OkStatus();
       }},
      {"node-name", false, "This node's name (Kubernetes: from the downward API).",
       String(&Config::node_name)},
      {"fabric-providers", false, "Ordered libfabric providers to try for the responder.",
       [](Config& c, const std::string& v) -> absl::Status {
         std::vector<std::string> list = absl::StrSplit(v, ',', absl::SkipWhitespace());
         if (list.empty()) return Bad("fabric-providers", v, "empty provider list");
         c.fabric_providers = list;
         return absl::OkStatus();
       }},
      {"fabric-interface", false, "Restrict the fabric responder to this interface or domain.",
       String(&Config::fabric_interface)},
      {"fabric-rx-depth", false, "Receive buffers the fabric responder keeps posted.",
       [](Config& c, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 1 || n > 64) {
           return Bad("fabric-rx-depth", v, "must be an integer from 1 to 64");
         }
         c.fabric_rx_depth = static_cast<unsigned>(n);
         return absl::OkStatus();
       }},
      {"fabric-max-message-bytes", false,
       "Largest message the responder accepts (bandwidth sizes above it are skipped).",
       [](Config& c, const std::string& v) -> absl::Status {
         uint64_t n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 4096 || n > (64u << 20)) {
           return Bad("fabric-max-message-bytes", v, "must be from 4096 to 67108864");
         }
         c.fabric_max_message_bytes = n;
         return absl::OkStatus();
       }},
      {"fabric-responder", true, "Run the fabric responder.",
       Bool(&Config::fabric_responder, "fabric-responder")},
      {"collector-budget-ms", false, "Time budget of one collector at one scrape.",
       [](Config& c, const std::string& v) -> absl::Status {
         int ms = 0;
         if (!absl::SimpleAtoi(v, &ms) || ms < 10 || ms > 60000) {
           return Bad("collector-budget-ms", v, "must be an integer from 10 to 60000");
         }
         c.collector_budget = std::chrono::milliseconds(ms);
         return absl::OkStatus();
       }},
      {"instance-type", false,
       "EC2 instance type; says whether the node could have EFA (a type that supports it on a "
       "node launched without it is the info finding efa_not_attached) and, with "
       "--efa-expected-devices=type, how many devices. Default: the DMI product name under "
       "--sysfs-root.",
       String(&Config::instance_type)},
      {"efa-expected-devices", false,
       "EFA devices this node must keep: auto (those present at start, or the node's "
       "allocatable vpc.amazonaws.com/efa when --kube-signals reads more), none, type (what "
       "the instance type supports), or a number from 1 to 256 (0: auto).",
       [](Config& c, const std::string& v) -> absl::Status {
         using E = Config::EfaExpectation;
         if (v == "auto") {
           c.efa_expectation = E::kAuto;
           return absl::OkStatus();
         }
         if (v == "none") {
           c.efa_expectation = E::kNone;
           return absl::OkStatus();
         }
         if (v == "type") {
           c.efa_expectation = E::kType;
           return absl::OkStatus();
         }
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 0 || n > 256) {
           return Bad("efa-expected-devices", v,
                      "must be auto, none, type or an integer from 0 to 256");
         }
         c.efa_expectation = n == 0 ? E::kAuto : E::kCount;
         c.efa_expected_devices = static_cast<unsigned>(n);
         c.efa_expected_devices_zero = n == 0;
         return absl::OkStatus();
       }},
      {"efa-clear-after-seconds", false,
       "A rising EFA error counter's finding clears after this long without a rise.",
       [](Config& c, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 1 || n > 86400) {
           return Bad("efa-clear-after-seconds", v, "must be an integer from 1 to 86400");
         }
         c.efa_clear_after = std::chrono::seconds(n);
         return absl::OkStatus();
       }},
      {"efa-rise-thresholds", false,
       "counter=N,... minimum rise between evaluations that raises a finding (default "
       "rx_drops=100; other error counters 1).",
       [](Config& c, const std::string& v) -> absl::Status {
         std::map<std::string, uint64_t> m;
         for (absl::string_view item : absl::StrSplit(v, ',', absl::SkipWhitespace())) {
           std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
           uint64_t n = 0;
           if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &n)) {
             return Bad("efa-rise-thresholds", v, "expected counter=N,counter=N");
           }
           m[kv.first] = n;
         }
         c.efa_rise_thresholds = m;
         return absl::OkStatus();
       }},
      {"efa-min-read-interval-ms", false,
       "Never read a device's counters more often than this (each read costs the device admin "
       "commands).",
       [](Config& c, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 0 || n > 60000) {
           return Bad("efa-min-read-interval-ms", v, "must be an integer from 0 to 60000");
         }
         c.efa_min_read_interval = std::chrono::milliseconds(n);
         return absl::OkStatus();
       }},
      {"efa-evaluate-interval-seconds", false, "How often the EFA health rules run.",
       [](Config& c, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 1 || n > 3600) {
           return Bad("efa-evaluate-interval-seconds", v, "must be an integer from 1 to 3600");
         }
         c.efa_evaluate_interval = std::chrono::seconds(n);
         return absl::OkStatus();
       }},
      {"pod-grace-period-seconds", false,
       "Keep a container's NCCL series and findings this long after its logs disappear.",
       [](Config& c, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 0 || n > 86400) {
           return Bad("pod-grace-period-seconds", v, "must be an integer from 0 to 86400");
         }
         c.pod_grace_period = std::chrono::seconds(n);
         return absl::OkStatus();
       }},
      {"max-log-files", false, "Most container log files followed at once (more are counted).",
       [](Config& c, const std::string& v) -> absl::Status {
         int n = 0;
         if (!absl::SimpleAtoi(v, &n) || n < 1 || n > 100000) {
           return Bad("max-log-files", v, "must be an integer from 1 to 100000");
         }
         c.max_log_files = static_cast<unsigned>(n);
         return absl::OkStatus();
       }},
      {"max-communicators-per-pod", false,
       "Most NCCL communicator info series exported per pod (more are only counted).",
       Unsigned(&Config::max_communicators_per_pod, "max-communicators-per-pod", 0, 4096)},
      {"memory-budget", false,
       "Memory for what callers ask of the agent (fabric probe buffers): a request whose worst "
       "case does not fit what is left gets RESOURCE_EXHAUSTED (bytes, or with Ki, Mi, Gi).",
       [](Config& c, const std::string& v) -> absl::Status {
         auto n = ParseBytes(v);
         if (!n.ok() || *n < (1u << 20)) return Bad("memory-budget", v, "must be at least 1Mi");
         c.memory_budget = *n;
         return absl::OkStatus();
       }},
      {"log-read-budget", false,
       "Bytes a second the agent reads logs at, at most, while any file has a backlog (bytes, or "
       "with Ki, Mi, Gi; 0: no bound); a file written faster is skipped forward to its tail, "
       "counted.",
       [](Config& c, const std::string& v) -> absl::Status {
         auto n = ParseBytes(v);
         if (!n.ok()) return Bad("log-read-budget", v, "must be bytes, or with Ki, Mi, Gi");
         c.log_read_budget = *n;
         return absl::OkStatus();
       }},
      {"log-first-read-max-bytes", false,
       "A log file first seen larger than this is read at its head and its tail only (bytes, or "
       "with Ki, Mi, Gi; 0: read whole).",
       [](Config& c, const std::string& v) -> absl::Status {
         auto n = ParseBytes(v);
         if (!n.ok())
           return Bad("log-first-read-max-bytes", v, "must be bytes, or with Ki, Mi, Gi");
         c.log_first_read_max_bytes = *n;
         return absl::OkStatus();
       }},
      {"log-history-bytes", false,
       "On first sight of a container (a fresh agent, or its state lost), read this much of the "
       "current run's rotated logs (N.log.<time>, .gz) first, oldest first, so a job that "
       "started long ago still gets its verdict (bytes, or with Ki, Mi, Gi; 0: off).",
       [](Config& c, const std::string& v) -> absl::Status {
         auto n = ParseBytes(v);
         if (!n.ok()) return Bad("log-history-bytes", v, "must be a byte count such as 64Mi");
         c.log_history_bytes = *n;
         return absl::OkStatus();
       }},
      {"max-watch-streams", false,
       "Most WatchFindings streams open at once; more get RESOURCE_EXHAUSTED.",
       Unsigned(&Config::max_watch_streams, "max-watch-streams", 1, 4096)},
      {"log-glob", false,
       "Comma-separated glob(3) patterns of further logs to analyze: NCCL_DEBUG_FILE outputs on "
       "a hostPath, docker json-file logs (*-json.log).",
       [](Config& c, const std::string& v) -> absl::Status {
         c.log_globs = absl::StrSplit(v, ',', absl::SkipWhitespace());
         return absl::OkStatus();
       }},
      {"mesh-discovery", false,
       "Fleet ping mesh peer discovery: off, static (--mesh-peers), dns (--mesh-dns-name) or "
       "kubernetes (pods by label in the agent's namespace).",
       [](Config& c, const std::string& v) -> absl::Status {
         if (v != "off" && v != "static" && v != "dns" && v != "kubernetes") {
           return Bad("mesh-discovery", v, "must be off, static, dns or kubernetes");
         }
         c.mesh_discovery = v;
         return absl::OkStatus();
       }},
      {"mesh-peers", false,
       "Static mesh peers: comma-separated [node=]host[:port][/group] (port: --mesh-agent-port).",
       String(&Config::mesh_peers)},
      {"mesh-dns-name", false, "DNS name listing every agent (a headless Service).",
       String(&Config::mesh_dns_name)},
      {"mesh-agent-port", false, "gRPC port of peer agents found by DNS or Kubernetes.",
       Unsigned(&Config::mesh_agent_port, "mesh-agent-port", 1, 65535)},
      {"mesh-k8s-api", false, "Kubernetes API server URL (default: in-cluster).",
       String(&Config::mesh_k8s_api)},
      {"mesh-k8s-namespace", false, "Namespace of the agent pods (default: the service account's).",
       String(&Config::mesh_k8s_namespace)},
      {"mesh-k8s-label-selector", false, "Label selector of the agent pods.",
       String(&Config::mesh_k8s_label_selector)},
      {"mesh-k8s-group-node-label", false,
       "Node label whose value groups nodes into complete ping graphs (needs list on nodes).",
       String(&Config::mesh_k8s_group_node_label)},
      {"mesh-k8s-token-file", false, "Service-account token for the Kubernetes API.",
       String(&Config::mesh_k8s_token_file)},
      {"mesh-k8s-ca-file", false,
       "CA bundle the Kubernetes API server's certificate must chain to.",
       String(&Config::mesh_k8s_ca_file)},
      {"workload-identity", true,
       "Learn each pod's workload (RayCluster, PyTorchJob, JobSet, ...) from the Kubernetes API "
       "(list pods on this node; --mesh-k8s-api/-token-file/-ca-file) and export "
       "it per pod for the job rules.",
       Bool(&Config::workload_identity, "workload-identity")},
      {"workload-interval-ms", false, "Time between listings of this node's pods.",
       Millis(&Config::workload_interval, "workload-interval-ms", 1000, 3600000)},
      {"kube-signals", true,
       "Post a Kubernetes Event on each pod whose NCCL log shows TCP fallback, loopback misuse or "
       "a missing net plugin, and patch the node's EfaHealthy / FabricReachable conditions "
       "(needs the efawatch-kube-signals ClusterRole; off outside a pod).",
       Bool(&Config::kube_signals, "kube-signals")},
      {"kube-signals-interval-ms", false,
       "Time between looks at the findings for new Events and changed NodeConditions.",
       Millis(&Config::kube_signals_interval, "kube-signals-interval-ms", 100, 3600000)},
      {"doctor-interval-ms", false,
       "Time between the agent's doctor runs (the node's checks and, with hostPID, every NCCL "
       "process's); 0: at start and on demand (RunDoctor) only.",
       Millis(&Config::doctor_interval, "doctor-interval-ms", 0, 86400000)},
      {"mesh-group", false, "This node's topology group (static and dns discovery).",
       String(&Config::mesh_group)},
      {"mesh-fanout", false, "Peers each agent pings (besides its topology group).",
       Unsigned(&Config::mesh_fanout, "mesh-fanout", 1, 64)},
      {"mesh-max-group", false, "Most topology-group peers pinged on top of the fan-out.",
       Unsigned(&Config::mesh_max_group, "mesh-max-group", 0, 256)},
      {"mesh-interval-ms", false, "Time between mesh ping rounds (jittered by 10%).",
       Millis(&Config::mesh_interval, "mesh-interval-ms", 100, 3600000)},
      {"mesh-discovery-interval-ms", false, "Time between peer discoveries.",
       Millis(&Config::mesh_discovery_interval, "mesh-discovery-interval-ms", 100, 3600000)},
      {"mesh-count", false, "Timed pings per peer per round.",
       Unsigned(&Config::mesh_count, "mesh-count", 1, 1000)},
      {"mesh-message-timeout-ms", false, "A mesh pong later than this counts as lost.",
       Millis(&Config::mesh_message_timeout, "mesh-message-timeout-ms", 1, 60000)},
      {"pod-ip", false,
       "This agent's address as peers dial it (Kubernetes: status.podIP from the downward API).",
       String(&Config::pod_ip)},
      {"grpc-peer-server-name", false,
       "Name peer agents' TLS certificates carry, when they are dialled by IP address.",
       String(&Config::grpc_peer_server_name)},
      {"collective-probe-interval-ms", false,
       "Time between this agent's scheduled collective probes across itself and "
       "--collective-probe-peers (jittered by 10%, the first at a random point of the first "
       "interval); 0: off. Each run takes the fabric (and, with the nccl backend, the GPUs) "
       "from training for its duration (docs/collectives.md).",
       Millis(&Config::collective_probe_interval, "collective-probe-interval-ms", 0, 86400000)},
      {"collective-probe-peers", false,
       "Agents the scheduled collective probe runs with, besides this one: comma-separated "
       "host:port of their gRPC edges, or mesh:N for the first N reachable peers of this agent's "
       "fleet ping mesh (1 to 8).",
       String(&Config::collective_probe_peers)},
      {"collective-probe-sizes", false,
       "Sizes of the scheduled collective probe, as `efawatch collective --sizes`: at most 8, host "
       "backend up to 64M (default 1M,16M,64M).",
       String(&Config::collective_probe_sizes)},
      {"collective-probe-op", false,
       "Collective of the scheduled probe: all_reduce (default), all_gather, reduce_scatter (nccl: "
       "also broadcast).",
       String(&Config::collective_probe_op)},
      {"collective-probe-backend", false,
       "Backend of the scheduled collective probe: host (default; libfabric, host memory) or nccl.",
       [](Config& c, const std::string& v) -> absl::Status {
         if (v != "host" && v != "nccl") {
           return Bad("collective-probe-backend", v, "must be host or nccl");
         }
         c.collective_probe_backend = v;
         return absl::OkStatus();
       }},
      {"collective-probe-iters", false,
       "Timed iterations per size of the scheduled probe, after one warm-up (default 5).",
       Unsigned(&Config::collective_probe_iters, "collective-probe-iters", 1, 100)},
      {"collective-probe-deadline-ms", false,
       "Deadline of one scheduled collective probe run (a run past it fails and is aborted on "
       "every participant); less than the interval (default 60000).",
       Millis(&Config::collective_probe_deadline, "collective-probe-deadline-ms", 1000, 600000)},
      {"net-interface-prefixes", false,
       "Ethernet interfaces (name prefixes) whose bytes the EFA fallback check compares.",
       [](Config& c, const std::string& v) -> absl::Status {
         std::vector<std::string> list = absl::StrSplit(v, ',', absl::SkipWhitespace());
         if (list.empty()) return Bad("net-interface-prefixes", v, "empty list");
         c.net_interface_prefixes = list;
         return absl::OkStatus();
       }},
  };
  return opts;
}

const Option* FindOption(const std::string& name) {
  for (const auto& o : Options()) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::string HelpText() {
  std::string out =
      "Usage: efawatchd [flags]\n\nEvery flag --x-y also reads EFAWATCH_X_Y and the config "
      "file key x-y.\nPrecedence: flags > environment > config file > defaults.\n\n";
  for (const auto& o : Options()) {
    absl::StrAppend(&out, "  --", o.name, o.is_bool ? "" : " VALUE", "\n      ", o.help, " [",
                    EnvName(o.name), "]\n");
  }
  absl::StrAppend(&out, "  --help\n  --version\n  --print-metrics-doc\n");
  return out;
}

// Reads `key = value` lines; values may be double-quoted. Returns key -> (value, line number).
absl::StatusOr<std::map<std::string, std::pair<std::string, int>>> ReadConfigFile(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--config=", path, ": cannot read"));
  std::map<std::string, std::pair<std::string, int>> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    absl::string_view s = absl::StripAsciiWhitespace(line);
    if (s.empty() || s.front() == '#') continue;
    auto eq = s.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", n, ": expected `key = value`, got `", s, "`"));
    }
    std::string key(absl::StripAsciiWhitespace(s.substr(0, eq)));
    absl::string_view value = absl::StripAsciiWhitespace(s.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    if (FindOption(key) == nullptr || key == "config") {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", n, ": unknown key `", key, "`"));
    }
    out[key] = {std::string(value), n};
  }
  return out;
}

std::optional<std::string> HostOf(const std::string& address) {
  if (address.starts_with("[")) {
    auto close = address.find(']');
    if (close == std::string::npos) return std::nullopt;
    return address.substr(1, close - 1);
  }
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  return address.substr(0, colon);
}

absl::Status CheckReadable(const std::string& flag, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Bad(flag, path, "cannot read file");
  return absl::OkStatus();
}

// The metrics port's TLS: certificate and key together; client CA and bearer token only over
// TLS (a token sent in plaintext is anyone's on the path).
absl::Status ValidateMetricsTls(const Config& c) {
  const bool has_cert = !c.metrics_tls_cert.empty(), has_key = !c.metrics_tls_key.empty();
  if (has_cert != has_key) {
    return absl::InvalidArgumentError("--metrics-tls-cert and --metrics-tls-key go together");
  }
  if (!has_cert && !c.metrics_tls_client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--metrics-tls-client-ca needs --metrics-tls-cert and --metrics-tls-key");
  }
  if (!has_cert && !c.metrics_bearer_token_file.empty()) {
    return absl::InvalidArgumentError(
        "--metrics-bearer-token-file needs --metrics-tls-cert and --metrics-tls-key: a token "
        "sent over plain HTTP can be read by anyone on the path");
  }
  for (const auto& [flag, path] : {std::pair{"metrics-tls-cert", c.metrics_tls_cert},
                                   {"metrics-tls-key", c.metrics_tls_key},
                                   {"metrics-tls-client-ca", c.metrics_tls_client_ca}}) {
    if (path.empty()) continue;
    if (auto st = CheckReadable(flag, path); !st.ok()) return st;
  }
  if (!c.metrics_bearer_token_file.empty()) {
    auto token = common::ReadWholeFile(c.metrics_bearer_token_file);
    if (!token.ok())
      return Bad("metrics-bearer-token-file", c.metrics_bearer_token_file, "cannot read file");
    if (absl::StripAsciiWhitespace(*token).empty()) {
      return Bad("metrics-bearer-token-file", c.metrics_bearer_token_file, "holds no token");
    }
  }
  return absl::OkStatus();
}

// The DaemonSet builds the metrics address from the downward API ("$(EFAWATCH_POD_IP):9477"),
// which writes an IPv6 pod IP without brackets: "fd00::5:9477" is read as [fd00::5]:9477 (the
// last group is the port).
void BracketIpv6Host(std::string& address) {
  if (address.starts_with("[")) return;
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return;
  const std::string host = address.substr(0, colon);
  unsigned char buf[sizeof(struct in6_addr)];
  if (host.find(':') == std::string::npos || inet_pton(AF_INET6, host.c_str(), buf) != 1) return;
  address = absl::StrCat("[", host, "]", address.substr(colon));
}

absl::Status Validate(Config& c) {
  BracketIpv6Host(c.metrics_listen);
  BracketIpv6Host(c.grpc_listen);
  if (auto st = ValidateListenAddress("metrics-listen", c.metrics_listen); !st.ok()) return st;
  if (auto st = ValidateMetricsTls(c); !st.ok()) return st;
  const bool unix_socket = c.grpc_listen.starts_with("unix:");
  if (unix_socket && !c.grpc_listen.starts_with("unix:/")) {
    return Bad("grpc-listen", c.grpc_listen, "a unix socket needs an absolute path: unix:/path");
  }
  if (!unix_socket) {
    if (auto st = ValidateListenAddress("grpc-listen", c.grpc_listen); !st.ok()) return st;
  }
  const bool has_cert = !c.grpc_tls_cert.empty(), has_key = !c.grpc_tls_key.empty();
  if (has_cert != has_key) {
    return absl::InvalidArgumentError("--grpc-tls-cert and --grpc-tls-key go together");
  }
  if (!c.grpc_tls_client_ca.empty() && !has_cert) {
    return absl::InvalidArgumentError(
        "--grpc-tls-client-ca needs --grpc-tls-cert and --grpc-tls-key");
  }
  for (const auto& [flag, path] : {std::pair{"grpc-tls-cert", c.grpc_tls_cert},
                                   {"grpc-tls-key", c.grpc_tls_key},
                                   {"grpc-tls-client-ca", c.grpc_tls_client_ca}}) {
    if (path.empty()) continue;
    if (auto st = CheckReadable(flag, path); !st.ok()) return st;
  }
  // A unix socket in the pod's own filesystem is reachable only from inside the pod (kubectl
  // exec), unlike the node's loopback, which hostNetwork shares with every host-network pod.
  if (!has_cert && !c.grpc_insecure && !unix_socket && !IsLoopbackAddress(c.grpc_listen)) {
    return Bad("grpc-listen", c.grpc_listen,
               "not a loopback address: give --grpc-tls-cert/--grpc-tls-key, or --grpc-insecure "
               "to serve plaintext deliberately");
  }
  const bool authz = !c.grpc_authz_readers.empty() || !c.grpc_authz_operators.empty() ||
                     !c.grpc_authz_agents.empty();
  if (authz && c.grpc_tls_client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--grpc-authz-* roles need --grpc-tls-client-ca: identities come from client certificates");
  }
  if (!c.probe_allow_loopback_set) c.probe_allow_loopback = IsLoopbackAddress(c.grpc_listen);
  if (c.node_name.empty()) {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) == 0) c.node_name = buf;
  }
  if (unix_socket && c.mesh_discovery != "off") {
    return Bad("mesh-discovery", c.mesh_discovery,
               "needs gRPC on the network (--grpc-listen host:port with TLS): peers call it");
  }
  if (c.mesh_discovery == "static" && c.mesh_peers.empty()) {
    return Bad("mesh-discovery", c.mesh_discovery, "needs --mesh-peers");
  }
  if (c.mesh_discovery == "dns" && c.mesh_dns_name.empty()) {
    return Bad("mesh-discovery", c.mesh_discovery, "needs --mesh-dns-name");
  }
  if (c.collective_probe_interval.count() > 0) {
    const std::string interval = std::to_string(c.collective_probe_interval.count());
    if (c.collective_probe_peers.empty()) {
      return Bad("collective-probe-interval-ms", interval, "needs --collective-probe-peers");
    }
    if (unix_socket) {
      return Bad("collective-probe-interval-ms", interval,
                 "needs gRPC on the network (--grpc-listen host:port): the probe dials this "
                 "agent as its first participant");
    }
    if (c.collective_probe_deadline >= c.collective_probe_interval) {
      return Bad("collective-probe-deadline-ms",
                 std::to_string(c.collective_probe_deadline.count()),
                 "must be less than --collective-probe-interval-ms");
    }
    if (c.collective_probe_peers.starts_with("mesh:") && c.mesh_discovery == "off") {
      return Bad("collective-probe-peers", c.collective_probe_peers,
                 "needs the fleet ping mesh (--mesh-discovery)");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateListenAddress(const std::string& flag, const std::string& address) {
  auto host = HostOf(address);
  if (!host) return Bad(flag, address, "expected host:port, :port or [ipv6]:port");
  std::string port_str = address.substr(address.rfind(':') + 1);
  int port = -1;
  if (!absl::SimpleAtoi(port_str, &port) || port < 0 || port > 65535) {
    return Bad(flag, address, "port must be a number from 0 to 65535");
  }
  if (host->empty() || *host == "localhost") return absl::OkStatus();
  unsigned char buf[sizeof(struct in6_addr)];
  if (inet_pton(AF_INET, host->c_str(), buf) == 1) return absl::OkStatus();
  if (address.starts_with("[") && inet_pton(AF_INET6, host->c_str(), buf) == 1) {
    return absl::OkStatus();
  }
  return Bad(flag, address, "host must be an IPv4 address, [IPv6 address], localhost or empty");
}

bool IsLoopbackAddress(const std::string& address) {
  auto host = HostOf(address);
  if (!host) return false;
  if (*host == "localhost" || *host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, host->c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  return env;
}

absl::StatusOr<ParsedArgs> ParseConfig(const std::vector<std::string>& args,
                                       const std::map<std::string, std::string>& env) {
  ParsedArgs out;
  std::map<std::string, std::string> from_flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.action = Action::kHelp;
      out.help_text = HelpText();
      return out;
    }
    if (a == "--version") {
      out.action = Action::kVersion;
      return out;
    }
    if (a == "--print-metrics-doc") {
      out.action = Action::kMetricsDoc;
      return out;
    }
    if (!a.starts_with("--")) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument `", a, "`"));
    }
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Option* opt = FindOption(name);
    if (opt == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    if (!has_value) {
      if (opt->is_bool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      }
    }
    from_flags[name] = value;
  }

  // Resolve the config file first: its own flag and env twin decide which file to read.
  std::string config_file;
  if (auto it = from_flags.find("config"); it != from_flags.end()) {
    config_file = it->second;
  } else if (auto e = env.find(EnvName("config")); e != env.end() && !e->second.empty()) {
    config_file = e->second;
  }
  std::map<std::string, std::pair<std::string, int>> from_file;
  if (!config_file.empty()) {
    auto f = ReadConfigFile(config_file);
    if (!f.ok()) return f.status();
    from_file = std::move(*f);
  }

  for (const auto& opt : Options()) {
    std::optional<std::string> value;
    std::string origin;
    if (auto it = from_flags.find(opt.name); it != from_flags.end()) {
      value = it->second;
    } else if (auto e = env.find(EnvName(opt.name)); e != env.end() && !e->second.empty()) {
      value = e->second;
      origin = absl::StrCat(" (from ", EnvName(opt.name), ")");
    } else if (auto f = from_file.find(opt.name); f != from_file.end()) {
      value = f->second.first;
      origin = absl::StrCat(" (from ", config_file, ":", f->second.second, ")");
    }
    if (!value) continue;
    if (auto st = opt.set(out.config, *value); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(st.message(), origin));
    }
  }
  if (auto st = Validate(out.config); !st.ok()) return st;
  return out;
}

}  // namespace efawatch
