#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace efawatch::exporter {

enum class MetricType { kCounter, kGauge, kHistogram };

/// One metric the agent exports. Every metric is declared once, in metric_table.cc: the
/// Prometheus edge refuses samples of undeclared metrics, docs/metrics.md is generated from the
/// table, and a test keeps the two in step.
struct MetricDef {
  std::string_view name;
  MetricType type;
  std::string_view help;
  std::vector<std::string_view> labels;
};

/// The whole table, sorted by name.
const std::vector<MetricDef>& MetricTable();

/// The definition of `name`, or nullptr.
const MetricDef* FindMetric(std::string_view name);

/// docs/metrics.md as generated from the table.
std::string RenderMetricsDoc();

}  // namespace efawatch::exporter
