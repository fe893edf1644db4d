// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "lib/common/collector.h"
#include "lib/kube/api_client.h"

namespace efawatch::workloads {

/// The workload a pod belongs to: kind ("RayCluster", "PyTorchJob", "JobSet", "Job",
/// "StatefulSet", ...) and name, in the pod's namespace.
struct Workload {
  std::string kind;
  std::string name;
  bool operator==(const Workload&) const = default;
};

/// The workload of `pod` (a Pod object as the API server gives it), from the labels the
/// operators set, first match wins:
///   RayJob (KubeRay: ray.io/originated-from-crd=RayJob, ray.io/originated-from-cr-name),
///   RayCluster (ray.io/cluster), Kubeflow TrainJob (trainer.kubeflow.org/trainjob-name),
///   Kubeflow training operator jobs (training.kubeflow.org/job-name; the kind from the pod's
///   controller, else training.kubeflow.org/operator-name, e.g. pytorchjob-controller),
///   JobSet (jobset.sigs.k8s.io/jobset-name), LeaderWorkerSet (leaderworkerset.sigs.k8s.io/name),
///   batch Job (batch.kubernetes.io/job-name, job-name);
/// else the pod's controller owner (a ReplicaSet named <deployment>-<pod-template-hash> counts as
/// its Deployment: reading the owner's own owners needs more permissions than list on pods),
/// else the pod itself (kind "Pod").
Workload WorkloadOf(const nlohmann::json& pod);

/// The workload of each pod of the node, by (namespace, pod).
using WorkloadTable = std::map<std::pair<std::string, std::string>, Workload>;

struct WorkloadWatcherOptions {
  kube::ApiOptions api;
  std::string node_name;                      ///< pods are listed with spec.nodeName=<node_name>
  std::chrono::milliseconds interval{30000};  ///< between listings
  /// Called with each new table, on the listing thread (the node-state board takes it).
  std::function<void(std::shared_ptr<const WorkloadTable>)> on_table;
};

/// Lists the pods of this node through the Kubernetes API every `interval` on its own thread
/// and keeps the latest pod -> workload table; Collect() exports it as efawatch_pod_workload_info
/// (a pod that is gone from the listing loses its series). A failed listing keeps the last table
/// and is logged once per run of failures.
///
/// Threads: Start() launches the listing thread; Stop() (and the destructor) stops it within one
/// request timeout. Collect() and Lookup() may run on any thread: they read an immutable
/// snapshot.
class WorkloadWatcher final : public common::Collector {
 public:
  explicit WorkloadWatcher(WorkloadWatcherOptions options);
  ~WorkloadWatcher() override;

  void Start();
  void Stop();
  /// One listing, on the caller's thread (Start() calls it in a loop).
  absl::Status ListOnce(const std::stop_token& stop);

  /// The workload of namespace/pod, when the latest listing had it.
  std::optional<Workload> Lookup(const std::string& namespace_name, const std::string& pod) const;

  std::string_view Name() const override { return "workloads"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  using Table = WorkloadTable;
  void Run(const std::stop_token& stop);

  const WorkloadWatcherOptions options_;
  mutable std::mutex mu_;
  std::shared_ptr<const Table> table_;  // guarded by mu_; the table itself is immutable
  std::mutex wait_mu_;
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace efawatch::workloads
