// SPDX-License-Identifier: Apache-2.0
#include "lib/common/findings_collector.h"

#include <map>

namespace efawatch::common {

absl::Status FindingsCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                        MetricSink& sink) {
  std::map<std::pair<std::string, Severity>, int> counts;
  for (const auto& f : *board_.Snapshot()) ++counts[{f.kind, f.severity}];
  for (const auto& [key, n] : counts) {
    sink.Add(metrics::M::kFindings,
             {{"kind", key.first}, {"severity", std::string(SeverityName(key.second))}}, n);
  }
  return absl::OkStatus();
}

}  // namespace efawatch::common
