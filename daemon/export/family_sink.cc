#include "daemon/export/family_sink.h"

#include <prometheus/text_serializer.h>

#include "daemon/export/metric_table.h"
#include "spdlog/spdlog.h"

namespace efawatch::exporter {
namespace {

prometheus::MetricType ToPrometheus(MetricType t) {
  return t == MetricType::kCounter ? prometheus::MetricType::Counter
                                   : prometheus::MetricType::Gauge;
}

}  // namespace

void FamilySink::Add(std::string_view metric, const common::Labels& labels, double value) {
  const MetricDef* def = FindMetric(metric);
  if (def == nullptr || def->labels.size() != labels.size()) {
    spdlog::error("metric {} is not declared in the metric table as written; sample dropped",
                  metric);
    return;
  }
  prometheus::ClientMetric m;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (def->labels[i] != labels[i].first) {
      spdlog::error("metric {}: label {} where the table says {}; sample dropped", metric,
                    labels[i].first, def->labels[i]);
      return;
    }
    m.label.push_back({labels[i].first, labels[i].second});
  }
  if (def->type == MetricType::kCounter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  auto& family = families_[def->name];
  if (family.name.empty()) {
    family.name = std::string(def->name);
    family.help = std::string(def->help);
    family.type = ToPrometheus(def->type);
  }
  family.metric.push_back(std::move(m));
}

std::vector<prometheus::MetricFamily> FamilySink::Take() {
  std::vector<prometheus::MetricFamily> out;
  out.reserve(families_.size());
  for (auto& [name, f] : families_) out.push_back(std::move(f));
  families_.clear();
  return out;
}

std::string RenderCollectors(const std::vector<common::Collector*>& collectors,
                             std::chrono::steady_clock::time_point deadline) {
  FamilySink sink;
  for (auto* c : collectors) (void)c->Collect(deadline, sink);
  return prometheus::TextSerializer().Serialize(sink.Take());
}

}  // namespace efawatch::exporter
