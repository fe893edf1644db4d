#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "lib/common/collector_status.h"

namespace prometheus {
class Exposer;
}

namespace efawatch::exporter {

struct BuildInfo {
  std::string version;
  std::string revision;
  std::string nccl;  // empty when built without the NCCL probe
};

struct PrometheusEdgeOptions {
  std::string listen;  // host:port; port 0 picks a free one
  BuildInfo build;
  std::chrono::system_clock::time_point start_time;
  /// Budget for one collector at one scrape; a slower one is reported as failed.
  std::chrono::milliseconds collector_budget{2000};
};

/// The only place that knows prometheus-cpp. Serves /metrics over HTTP, and /healthz and /readyz
/// (200, empty) for the kubelet; at each scrape it runs
/// every collector with its time budget, renders what they wrote through the metric table and
/// adds efawatch_build_info, efawatch_start_time_seconds and per-collector success and duration.
/// Scrapes are serialized (collectors need not be thread-safe). Collectors must outlive the edge.
class PrometheusEdge {
 public:
  static absl::StatusOr<std::unique_ptr<PrometheusEdge>> Create(
      PrometheusEdgeOptions options, std::vector<common::Collector*> collectors,
      common::CollectorStatusBoard* status, const common::Clock& clock);
  ~PrometheusEdge();

  /// The port actually bound.
  int port() const { return port_; }

 private:
  class Scraper;
  class Alive;
  PrometheusEdge() = default;

  std::shared_ptr<Scraper> scraper_;
  std::shared_ptr<Alive> alive_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace efawatch::exporter
