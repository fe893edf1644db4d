// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <prometheus/metric_family.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/common/collector.h"
#include "lib/common/metric_table.h"

namespace efawatch::exporter {

using metrics::FindMetric;
using metrics::MetricDef;
using metrics::MetricType;

// Collects samples of one scrape into metric families, checking each against the metric table.
// A sample of an undeclared metric or with the wrong label names is a programming error; it is
// dropped and logged rather than served, so /metrics always passes `promtool check metrics`.
class FamilySink final : public common::MetricSink {
 public:
  void Add(metrics::Metric metric, const common::Labels& labels, double value) override;
  void AddHistogram(metrics::Metric metric, const common::Labels& labels,
                    const common::HistogramSample& sample) override;

  /// The families collected so far, sorted by name; the sink is empty afterwards.
  std::vector<prometheus::MetricFamily> Take();

 private:
  // The checked metric with its labels filled in, or nullopt (logged) when the table disagrees.
  std::optional<prometheus::ClientMetric> Start(std::string_view metric,
                                                const common::Labels& labels, MetricType want);
  void Append(std::string_view metric, prometheus::ClientMetric m);

  std::map<std::string_view, prometheus::MetricFamily> families_;
};

/// Runs `collectors` into a FamilySink and returns the text exposition format (for golden-file
/// tests and tools). Collector errors are ignored: what they wrote is rendered.
std::string RenderCollectors(const std::vector<common::Collector*>& collectors,
                             std::chrono::steady_clock::time_point deadline);

}  // namespace efawatch::exporter
