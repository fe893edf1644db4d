#include "daemon/export/metric_table.h"

#include <algorithm>

namespace efawatch::exporter {
namespace {

// Label cardinality is bounded by design: collectors, devices and ports are few per node, and
// per-pod series are deleted when the pod's logs go away. Never label by pid, rank or file.
std::vector<MetricDef> BuildTable() {
  using T = MetricType;
  std::vector<MetricDef> t = {
      // Agent itself.
      {"efawatch_build_info",
       T::kGauge,
       "Always 1; labels carry the agent version, git revision and the NCCL version the NCCL "
       "probe was built against (empty when built without CUDA).",
       {"version", "revision", "nccl"}},
      {"efawatch_start_time_seconds", T::kGauge, "Unix time at which the agent started.", {}},
      {"efawatch_collector_success",
       T::kGauge,
       "1 when the collector's last run at this scrape succeeded, 0 when it failed or ran out of "
       "its time budget.",
       {"collector"}},
      {"efawatch_collector_duration_seconds",
       T::kGauge,
       "Time the collector took at this scrape.",
       {"collector"}},
      {"efawatch_findings",
       T::kGauge,
       "Current findings on this node by kind and severity (self-clearing).",
       {"kind", "severity"}},
      // Process.
      {"efawatch_process_resident_memory_bytes",
       T::kGauge,
       "Resident set size of the agent process.",
       {}},
      {"efawatch_process_cpu_seconds_total",
       T::kCounter,
       "User and system CPU time the agent process has used.",
       {}},
      {"efawatch_process_open_fds", T::kGauge, "File descriptors the agent process has open.", {}},
      // EFA presence (the EFA collector adds the device counters).
      {"efawatch_efa_devices",
       T::kGauge,
       "EFA devices found under the configured sysfs root's class/infiniband.",
       {}},
      {"efawatch_rdma_devices",
       T::kGauge,
       "RDMA devices of any kind found under the configured sysfs root's class/infiniband.",
       {}},
      // Fabric responder.
      {"efawatch_fabric_responder_up",
       T::kGauge,
       "1 when the fabric responder runs; labels name the libfabric provider and fabric in use.",
       {"provider", "fabric"}},
  };
  std::sort(t.begin(), t.end(),
            [](const MetricDef& a, const MetricDef& b) { return a.name < b.name; });
  return t;
}

std::string_view TypeName(MetricType t) { return t == MetricType::kCounter ? "counter" : "gauge"; }

}  // namespace

const std::vector<MetricDef>& MetricTable() {
  static const std::vector<MetricDef> table = BuildTable();
  return table;
}

const MetricDef* FindMetric(std::string_view name) {
  const auto& t = MetricTable();
  auto it = std::lower_bound(t.begin(), t.end(), name,
                             [](const MetricDef& d, std::string_view n) { return d.name < n; });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

std::string RenderMetricsDoc() {
  std::string out =
      "# Metrics\n\n"
      "Generated from `daemon/export/metric_table.cc` (a unit test keeps this file in step).\n"
      "All metrics are served on `/metrics` of the agent's `--metrics-listen` address.\n\n"
      "| name | type | labels | help |\n|---|---|---|---|\n";
  for (const auto& d : MetricTable()) {
    std::string labels;
    for (auto l : d.labels) (labels += labels.empty() ? "" : ", ") += l;
    ((((out += "| `") += d.name) += "` | ") += TypeName(d.type)) += " | ";
    (((out += labels) += " | ") += d.help) += " |\n";
  }
  return out;
}

}  // namespace efawatch::exporter
