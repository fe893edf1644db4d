// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/verdict_metrics.h"

#include <algorithm>
#include <cctype>

#include "lib/common/metric_table.h"
#include "lib/nccl/labels.h"

namespace efawatch::logs {
namespace {

common::Labels PodLabels(const LogSource& s) {
  return {{"namespace", s.namespace_name}, {"pod", s.pod}, {"container", s.container}};
}

}  // namespace

void WriteVerdictMetrics(const ContainerVerdict& v, common::MetricSink& sink) {
  const common::Labels l = PodLabels(v.source);
  sink.Add(metrics::M::kLogsLinesTotal, l, static_cast<double>(v.lines));
  sink.Add(metrics::M::kLogsNcclLinesTotal, l, static_cast<double>(v.nccl_lines));
  if (v.nccl_lines == 0) return;  // pods without NCCL get no verdict series
  const nccl::Verdict& n = v.nccl;
  sink.Add(metrics::M::kNcclTcpFallback, l, n.tcp_fallback ? 1 : 0);
  sink.Add(metrics::M::kNcclTcpDeliberate, l, n.tcp_deliberate ? 1 : 0);
  sink.Add(metrics::M::kNcclLoopbackMisuse, l, n.loopback_misuse ? 1 : 0);
  sink.Add(metrics::M::kNcclNetPluginMissing, l, n.net_plugin_missing ? 1 : 0);
  sink.Add(metrics::M::kNcclGdrDisabled, l, n.gdr_disabled ? 1 : 0);
  common::Labels info = l;
  info.push_back({"network", nccl::NetworkLabel(n.network)});
  info.push_back({"transport", nccl::TransportLabel(n.transport)});
  info.push_back({"ofi_provider", nccl::ProviderLabel(n.ofi_provider)});
  info.push_back({"nccl_version", nccl::VersionLabel(n.nccl_version)});
  info.push_back({"nodes", std::string(nccl::NameOf(n.nodes_evidence))});
  sink.Add(metrics::M::kNcclInfo, info, 1);
  if (v.stack.Known()) {
    const nccl::Stack& st = v.stack;
    common::Labels stack = l;
    stack.push_back({"nccl_version", nccl::VersionLabel(st.nccl_version)});
    stack.push_back({"net_plugin", nccl::PluginLabel(st.net_plugin)});
    stack.push_back({"net_plugin_version", nccl::PluginVersionLabel(st.net_plugin_version)});
    stack.push_back({"ofi_provider", nccl::ProviderLabel(st.ofi_provider)});
    stack.push_back({"gdr", st.gdr});
    for (std::string_view name : nccl::kLabelledSettings) {
      std::string label(name);
      std::transform(label.begin(), label.end(), label.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      stack.push_back({std::move(label), nccl::SettingLabel(nccl::SettingValue(st, name))});
    }
    stack.push_back({"settings_fingerprint", nccl::SettingsFingerprint(st)});
    sink.Add(metrics::M::kNcclStackInfo, stack, 1);
  }
  sink.Add(metrics::M::kNcclProcesses, l, static_cast<double>(n.processes));
  sink.Add(metrics::M::kNcclCommunicators, l, static_cast<double>(n.communicators));
  sink.Add(metrics::M::kNcclWarningsTotal, l, static_cast<double>(n.warnings));
  sink.Add(metrics::M::kNcclErrorsTotal, l, static_cast<double>(n.errors));
  for (const CommunicatorSeries& c : v.communicators) {
    if (!nccl::CommIdLabelOk(c.id)) continue;  // not an id NCCL prints: no series to join on
    common::Labels cl = l;
    cl.push_back({"comm_id", c.id});
    cl.push_back({"nranks", c.nranks > 0 ? std::to_string(c.nranks) : "unknown"});
    cl.push_back({"nnodes", c.nnodes > 0 ? std::to_string(c.nnodes) : "unknown"});
    cl.push_back({"transport", nccl::TransportLabel(c.transport)});
    cl.push_back({"provider", nccl::ProviderLabel(c.provider)});
    sink.Add(metrics::M::kNcclCommunicatorInfo, cl, 1);
  }
}

absl::Status VerdictCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                       common::MetricSink& sink) {
  uint64_t malformed = 0;
  pods_.ForEachVerdict([&](const ContainerVerdict& v) {
    WriteVerdictMetrics(v, sink);
    malformed += v.malformed_lines;
  });
  const PodAnalysis::Drops drops = pods_.Dropped();
  sink.Add(metrics::M::kLogsMalformedLinesTotal, {}, static_cast<double>(malformed));
  sink.Add(metrics::M::kLogsStateEvictedTotal, {}, static_cast<double>(drops.containers));
  sink.Add(metrics::M::kNcclCommunicatorsDroppedTotal, {},
           static_cast<double>(drops.communicators));
  return absl::OkStatus();
}

}  // namespace efawatch::logs
