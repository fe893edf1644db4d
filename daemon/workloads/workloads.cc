// SPDX-License-Identifier: Apache-2.0
#include "daemon/workloads/workloads.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace efawatch::workloads {
namespace {

using Json = nlohmann::json;

std::string Str(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// Kubeflow training operator v1 names its controllers "<kind in lower case>-controller".
std::string KubeflowKind(const std::string& operator_name) {
  static const std::map<std::string, std::string> kinds = {
      {"pytorchjob-controller", "PyTorchJob"}, {"mpijob-controller", "MPIJob"},
      {"tfjob-controller", "TFJob"},           {"xgboostjob-controller", "XGBoostJob"},
      {"paddlejob-controller", "PaddleJob"},   {"jaxjob-controller", "JAXJob"},
  };
  auto it = kinds.find(operator_name);
  return it != kinds.end() ? it->second : "KubeflowJob";
}

}  // namespace

Workload WorkloadOf(const Json& pod) {
  const Json meta = pod.is_object() ? pod.value("metadata", Json::object()) : Json::object();
  const Json labels = meta.is_object() ? meta.value("labels", Json::object()) : Json::object();
  auto label = [&](const char* key) { return Str(labels, key); };
  Workload controller;
  if (meta.is_object() && meta.contains("ownerReferences") && meta["ownerReferences"].is_array()) {
    for (const Json& o : meta["ownerReferences"]) {
      if (o.is_object() && o.value("controller", false) == true) {
        controller = {Str(o, "kind"), Str(o, "name")};
      }
    }
    if (controller.kind.empty() && !meta["ownerReferences"].empty()) {
      const Json& o = meta["ownerReferences"][0];
      controller = {Str(o, "kind"), Str(o, "name")};
    }
  }
  if (label("ray.io/originated-from-crd") == "RayJob" &&
      !label("ray.io/originated-from-cr-name").empty()) {
    return {"RayJob", label("ray.io/originated-from-cr-name")};
  }
  if (!label("ray.io/cluster").empty()) return {"RayCluster", label("ray.io/cluster")};
  if (!label("trainer.kubeflow.org/trainjob-name").empty()) {
    return {"TrainJob", label("trainer.kubeflow.org/trainjob-name")};
  }
  if (const std::string job = label("training.kubeflow.org/job-name"); !job.empty()) {
    if (controller.name == job && !controller.kind.empty()) return {controller.kind, job};
    return {KubeflowKind(label("training.kubeflow.org/operator-name")), job};
  }
  if (!label("jobset.sigs.k8s.io/jobset-name").empty()) {
    return {"JobSet", label("jobset.sigs.k8s.io/jobset-name")};
  }
  if (!label("leaderworkerset.sigs.k8s.io/name").empty()) {
    return {"LeaderWorkerSet", label("leaderworkerset.sigs.k8s.io/name")};
  }
  if (!label("batch.kubernetes.io/job-name").empty()) {
    return {"Job", label("batch.kubernetes.io/job-name")};
  }
  if (!label("job-name").empty()) return {"Job", label("job-name")};
  if (controller.kind == "ReplicaSet") {
    const std::string hash = label("pod-template-hash");
    const std::string suffix = "-" + hash;
    if (!hash.empty() && controller.name.size() > suffix.size() &&
        controller.name.ends_with(suffix)) {
      return {"Deployment", controller.name.substr(0, controller.name.size() - suffix.size())};
    }
  }
  if (!controller.kind.empty() && !controller.name.empty()) return controller;
  return {"Pod", Str(meta, "name")};
}

WorkloadWatcher::WorkloadWatcher(WorkloadWatcherOptions options)
    : options_(std::move(options)), table_(std::make_shared<const Table>()) {}

WorkloadWatcher::~WorkloadWatcher() { Stop(); }

void WorkloadWatcher::Start() {
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void WorkloadWatcher::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

absl::Status WorkloadWatcher::ListOnce(const std::stop_token& stop) {
  auto pods = kube::ListAll(options_.api, stop, "/api/v1/pods", "",
                            absl::StrCat("spec.nodeName=", options_.node_name));
  if (!pods.ok()) return pods.status();
  auto table = std::make_shared<Table>();
  for (const Json& pod : *pods) {
    const Json meta = pod.value("metadata", Json::object());
    const std::string ns = Str(meta, "namespace"), name = Str(meta, "name");
    if (ns.empty() || name.empty()) continue;
    (*table)[{ns, name}] = WorkloadOf(pod);
  }
  std::shared_ptr<const Table> published = std::move(table);
  {
    std::lock_guard lock(mu_);
    table_ = published;
  }
  if (options_.on_table) options_.on_table(std::move(published));
  return absl::OkStatus();
}

void WorkloadWatcher::Run(const std::stop_token& stop) {
  bool failing = false;
  while (!stop.stop_requested()) {
    const absl::Status st = ListOnce(stop);
    if (!st.ok() && !failing && !stop.stop_requested()) {
      spdlog::warn(
          "workload identity: listing this node's pods failed: {} (keeping the last "
          "table; retrying every {} s)",
          std::string(st.message()),
          std::chrono::duration_cast<std::chrono::seconds>(options_.interval).count());
    } else if (st.ok() && failing) {
      spdlog::info("workload identity: listing this node's pods works again");
    }
    failing = !st.ok();
    std::unique_lock lock(wait_mu_);
    wake_.wait_for(lock, stop, options_.interval, [] { return false; });
  }
}

std::optional<Workload> WorkloadWatcher::Lookup(const std::string& namespace_name,
                                                const std::string& pod) const {
  std::shared_ptr<const Table> table;
  {
    std::lock_guard lock(mu_);
    table = table_;
  }
  auto it = table->find({namespace_name, pod});
  if (it == table->end()) return std::nullopt;
  return it->second;
}

absl::Status WorkloadWatcher::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                      common::MetricSink& sink) {
  std::shared_ptr<const Table> table;
  {
    std::lock_guard lock(mu_);
    table = table_;
  }
  for (const auto& [key, w] : *table) {
    sink.Add(metrics::M::kPodWorkloadInfo,
             {{"namespace", key.first},
              {"pod", key.second},
              {"workload_kind", w.kind},
              {"workload", w.name}},
             1);
  }
  return absl::OkStatus();
}

}  // namespace efawatch::workloads
