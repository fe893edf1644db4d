// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/family_sink.h"

#include <prometheus/text_serializer.h>

#include <limits>

#include "lib/common/utf8.h"
#include "spdlog/spdlog.h"

namespace efawatch::exporter {
namespace {

prometheus::MetricType ToPrometheus(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return prometheus::MetricType::Counter;
    case MetricType::kGauge:
      return prometheus::MetricType::Gauge;
    case MetricType::kHistogram:
      return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

}  // namespace

std::optional<prometheus::ClientMetric> FamilySink::Start(std::string_view metric,
                                                          const common::Labels& labels,
                                                          MetricType want) {
  const MetricDef* def = FindMetric(metric);
  if (def == nullptr || def->labels.size() != labels.size() ||
      (def->type == MetricType::kHistogram) != (want == MetricType::kHistogram)) {
    spdlog::error("metric {} is not declared in the metric table as written; sample dropped",
                  metric);
    return std::nullopt;
  }
  prometheus::ClientMetric m;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (def->labels[i] != labels[i].first) {
      spdlog::error("metric {}: label {} where the table says {}; sample dropped", metric,
                    labels[i].first, def->labels[i]);
      return std::nullopt;
    }
    // Label values carry pod and file names and log text: the text format and the scraper
    // require UTF-8, and one bad value fails the whole scrape, so invalid bytes become U+FFFD.
    m.label.push_back({labels[i].first, labels[i].second});
    common::MakeValidUtf8(&m.label.back().value);
  }
  return m;
}

void FamilySink::Append(std::string_view metric, prometheus::ClientMetric m) {
  const MetricDef* def = FindMetric(metric);
  auto& family = families_[def->name];
  if (family.name.empty()) {
    family.name = std::string(def->name);
    family.help = std::string(def->help);
    family.type = ToPrometheus(def->type);
  }
  family.metric.push_back(std::move(m));
}

void FamilySink::Add(metrics::Metric handle, const common::Labels& labels, double value) {
  const std::string_view metric = handle.name();
  auto m = Start(metric, labels, MetricType::kGauge);
  if (!m) return;
  if (FindMetric(metric)->type == MetricType::kCounter) {
    m->counter.value = value;
  } else {
    m->gauge.value = value;
  }
  Append(metric, *std::move(m));
}

void FamilySink::AddHistogram(metrics::Metric handle, const common::Labels& labels,
                              const common::HistogramSample& sample) {
  const std::string_view metric = handle.name();
  auto m = Start(metric, labels, MetricType::kHistogram);
  if (!m) return;
  if (sample.bounds.size() != sample.cumulative.size()) {
    spdlog::error("metric {}: {} bounds but {} bucket counts; sample dropped", metric,
                  sample.bounds.size(), sample.cumulative.size());
    return;
  }
  m->histogram.sample_count = sample.count;
  m->histogram.sample_sum = sample.sum;
  for (size_t i = 0; i < sample.bounds.size(); ++i) {
    m->histogram.bucket.push_back({sample.cumulative[i], sample.bounds[i]});
  }
  m->histogram.bucket.push_back({sample.count, std::numeric_limits<double>::infinity()});
  Append(metric, *std::move(m));
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
