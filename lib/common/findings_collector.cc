// SPDX-License-Identifier: Apache-2.0
#include "lib/common/findings_collector.h"

#include <map>
#include <tuple>

namespace efawatch::common {

absl::Status FindingsCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                        MetricSink& sink) {
  // By pod too: a job's failure is paged to that job, not to every job on the node. A pod's
  // series goes with its findings (withdrawn when the pod is gone).
  std::map<std::tuple<std::string, Severity, std::string, std::string>, int> counts;
  for (const auto& f : *board_.Snapshot()) ++counts[{f.kind, f.severity, f.namespace_name, f.pod}];
  for (const auto& [key, n] : counts) {
    const auto& [kind, severity, namespace_name, pod] = key;
    sink.Add(metrics::M::kFindings,
             {{"kind", kind},
              {"severity", std::string(SeverityName(severity))},
              {"namespace", namespace_name},
              {"pod", pod}},
             n);
  }
  return absl::OkStatus();
}

}  // namespace efawatch::common
