#pragma once

#include <chrono>
#include <memory>
#include <mutex>
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

class BearerTokenFile;
class HttpsServer;
struct HttpRequest;
struct HttpResponse;

struct BuildInfo {
  std::string version;
  std::string revision;
  std::string nccl;  // empty when built without the NCCL probe
};

/// HTTPS for the metrics port (all empty: plain HTTP, as prometheus-cpp's Exposer serves it).
struct MetricsTlsOptions {
  std::string cert_file;          // PEM server certificate; set together with key_file
  std::string key_file;           // PEM private key
  std::string client_ca_file;     // set: /metrics needs a client certificate this CA signed
  std::string bearer_token_file;  // set: /metrics needs `Authorization: Bearer <its token>`
};

struct PrometheusEdgeOptions {
  std::string listen;  // host:port; port 0 picks a free one
  MetricsTlsOptions tls;
  BuildInfo build;
  std::chrono::system_clock::time_point start_time;
  /// Budget for one collector at one scrape; a slower one is reported as failed.
  std::chrono::milliseconds collector_budget{2000};
};

/// The only place that knows prometheus-cpp. Serves /metrics, and /healthz and /readyz (200,
/// empty) for the kubelet, over HTTP (prometheus-cpp's Exposer) or, given a TLS certificate, over
/// HTTPS (HttpsServer, with the Exposer's text and its exposer_* families). Over HTTPS /metrics
/// may also need a client certificate or a bearer token (refused with 403 or 401, logged once a
/// minute); the probes' paths stay open, since the kubelet presents neither. At each scrape it
/// runs every collector with its time budget, renders what they wrote through the metric table
/// and adds efawatch_build_info, efawatch_start_time_seconds and per-collector success and
/// duration. Scrapes are serialized (collectors need not be thread-safe). Collectors must outlive
/// the edge.
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
  struct ExposerMetrics;
  explicit PrometheusEdge(const common::Clock& clock);
  absl::Status ServeHttp(const std::string& listen);
  absl::Status ServeHttps(const std::string& listen, const MetricsTlsOptions& tls);
  HttpResponse Metrics(const HttpRequest& request);

  const common::Clock& clock_;
  std::shared_ptr<Scraper> scraper_;
  std::shared_ptr<Alive> alive_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  // HTTPS only. The server goes first on destruction: its handlers use the scraper and token.
  bool require_client_cert_ = false;
  std::unique_ptr<BearerTokenFile> token_;
  std::unique_ptr<ExposerMetrics> https_self_;
  std::mutex refusal_log_mu_;
  std::chrono::steady_clock::time_point last_refusal_log_;  // guarded by refusal_log_mu_
  std::unique_ptr<HttpsServer> https_;
  int port_ = 0;
};

}  // namespace efawatch::exporter
