// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "lib/common/finding_kind.h"
#include "lib/kube/api_client.h"

/// Kubernetes-native signals, as node-problem-detector gives them: an Event on a pod whose NCCL
/// log shows a fallback, loopback or missing-plugin problem (`kubectl describe pod` shows it),
/// and NodeConditions for node-level faults (`kubectl describe node`). Prometheus stays the
/// fleet's engine; these reach the user who never opens Grafana.
namespace efawatch::signals {

/// One NCCL problem of one container, as an Event on its pod reports it.
struct PodProblem {
  std::string namespace_name, pod, uid, container;
  common::FindingKind kind =
      common::FindingKind::kTcpFallback;  ///< or loopback_misuse, net_plugin_missing
  std::string message;                    ///< the finding's message and its evidence line
};

/// One node condition: `ok` is the healthy state (status "True" for EfaHealthy).
struct NodeCondition {
  std::string type;  ///< EfaHealthy, FabricReachable
  bool ok = true;
  std::string reason;
  std::string message;
};

/// What the agent knows now; built by the app from its verdicts and findings.
struct Observation {
  std::vector<PodProblem> pods;
  std::vector<NodeCondition> conditions;
};

/// The Kubernetes API as this module uses it (kube::Send in the agent; a recorder in tests).
/// `stop` cancels a request in flight.
using Sender = std::function<absl::StatusOr<kube::Response>(
    const std::stop_token& stop, const std::string& method, const std::string& path,
    const std::string& content_type, const nlohmann::json& body)>;

/// Lists objects at `path` with a field selector (kube::ListAll in the agent; a fake in tests).
using Lister = std::function<absl::StatusOr<std::vector<nlohmann::json>>(
    const std::stop_token& stop, const std::string& path, const std::string& field_selector)>;

struct KubeSignalsOptions {
  std::string node_name;
  std::string reporting_instance;               ///< the agent's pod name, or efawatchd-<node>
  std::chrono::milliseconds interval{5000};     ///< between looks at the observation
  std::chrono::milliseconds heartbeat{300000};  ///< conditions re-sent though unchanged
  /// Events posted at most `event_burst` at once, then one per `event_refill`: a node whose 50
  /// pods all fall back at once must not flood the API server (the rest follow, not dropped).
  unsigned event_burst = 10;
  std::chrono::milliseconds event_refill{6000};
  /// After a 403 or 404 (no RBAC, no such API) a signal is not tried again for this long.
  std::chrono::milliseconds refused_backoff{600000};
  /// Reads this node's allocatable vpc.amazonaws.com/efa (what the EFA device plugin advertises)
  /// every `node_refresh`; empty: never (AdvertisedEfa() stays unknown).
  Lister list;
  std::chrono::milliseconds node_refresh{60000};
  /// Called on the signals' thread with each count read (the node-state board's publisher).
  std::function<void(std::optional<unsigned>)> on_advertised_efa;
};

/// The node's allocatable vpc.amazonaws.com/efa in a Node object; nullopt when the node has no
/// such resource (no EFA device plugin) or the quantity is not a plain count.
std::optional<unsigned> AllocatableEfa(const nlohmann::json& node);

/// The Event for `p`: events.k8s.io/v1, type Warning, reason NcclTcpFallback / NcclLoopbackMisuse
/// / NcclNetPluginMissing, regarding the pod (with its uid: `kubectl describe` selects on it),
/// note at most 1 KiB. Its name is derived from (pod uid, container, kind), so an agent that
/// restarts gets 409 AlreadyExists instead of posting the same Event again.
nlohmann::json EventFor(const PodProblem& p, const KubeSignalsOptions& o,
                        std::chrono::system_clock::time_point now);

/// A strategic merge patch of the node's status.conditions (merged by type, others untouched).
/// `transitions` holds each condition's lastTransitionTime.
nlohmann::json ConditionsPatch(
    const std::vector<NodeCondition>& conditions,
    const std::map<std::string, std::chrono::system_clock::time_point>& transitions,
    std::chrono::system_clock::time_point now);

/// Posts Events and patches NodeConditions from `observe()` every interval on its own thread:
/// an Event once per (pod, container, problem) while the problem lasts, conditions when they
/// change and every heartbeat. Failures are counted (efawatch_kube_signals_total) and retried
/// next round; a refused signal (RBAC) is logged once and backed off.
///
/// Threads: Start() launches the thread, Stop() (and the destructor) joins it within one request
/// timeout. SyncOnce() is one round on the caller's thread (the thread's loop; tests). Collect()
/// may run concurrently with a round.
class KubeSignals final : public common::Collector {
 public:
  KubeSignals(KubeSignalsOptions options, std::function<Observation()> observe, Sender send,
              const common::Clock& clock);
  ~KubeSignals() override;

  void Start();
  void Stop();
  void SyncOnce(const std::stop_token& stop = {});

  /// The node's allocatable vpc.amazonaws.com/efa as last read; nullopt until read, or when the
  /// node has none. Any thread.
  std::optional<unsigned> AdvertisedEfa() const;

  std::string_view Name() const override { return "kube_signals"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  // What one request's answer means for the signal.
  enum class Result { kSent, kExists, kRefused, kFailed };
  Result Send(const std::stop_token& stop, const char* signal, const std::string& method,
              const std::string& path, const std::string& content_type, const nlohmann::json& body);
  void SyncEvents(const std::stop_token& stop, const std::vector<PodProblem>& problems);
  void SyncConditions(const std::stop_token& stop, const std::vector<NodeCondition>& conditions);
  void SyncNode(const std::stop_token& stop);
  void Count(const char* signal, const char* result);
  bool Refused(const char* signal);

  const KubeSignalsOptions options_;
  const std::function<Observation()> observe_;
  const Sender send_;
  const common::Clock& clock_;

  // Round state, touched only by the round (one at a time).
  std::map<std::string, bool> posted_;  // (uid/container/kind) -> posted; erased when it clears
  double tokens_;
  std::chrono::steady_clock::time_point tokens_at_{};
  std::vector<NodeCondition> sent_conditions_;
  std::map<std::string, std::chrono::system_clock::time_point> transitions_;
  std::chrono::steady_clock::time_point conditions_at_{};
  std::map<std::string, std::chrono::steady_clock::time_point> refused_until_;
  std::optional<std::chrono::steady_clock::time_point> node_read_at_;

  mutable std::mutex node_mu_;
  std::optional<unsigned> advertised_efa_;  // guarded by node_mu_

  mutable std::mutex counts_mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;  // (signal, result)

  std::mutex wait_mu_;
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace efawatch::signals
