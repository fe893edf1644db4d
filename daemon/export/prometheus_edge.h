// SPDX-License-Identifier: Apache-2.0
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
#include "lib/common/connection_table.h"

namespace efawatch::exporter {

class BearerTokenFile;
class HttpServer;
struct HttpRequest;
struct HttpResponse;

struct BuildInfo {
  std::string version;
  std::string revision;
  std::string nccl;  // empty when built without the NCCL probe
};

/// HTTPS for the metrics port (all empty: plain HTTP).
struct MetricsTlsOptions {
  std::string cert_file;          // PEM server certificate; set together with key_file
  std::string key_file;           // PEM private key
  std::string client_ca_file;     // set: /metrics needs a client certificate this CA signed
  std::string bearer_token_file;  // set: /metrics needs `Authorization: Bearer <its token>`
};

struct PrometheusEdgeOptions {
  std::string listen;  // host:port; port 0 picks a free one
  MetricsTlsOptions tls;
  common::ConnectionLimits limits;  // what clients of the port can hold (docs/security.md)
  BuildInfo build;
  std::chrono::system_clock::time_point start_time;
  /// Budget for one collector at one scrape; a slower one is cut off (reported failed, its
  /// samples dropped) and not run again while it is still running (bounded_collector.h).
  std::chrono::milliseconds collector_budget{2000};
};

/// The only place that knows prometheus-cpp. Serves /metrics, and /healthz and /readyz (200,
/// empty) for the kubelet, over HTTP or, given a TLS certificate, HTTPS (HttpServer, with the
/// text and exposer_* families of prometheus-cpp's Exposer). Over HTTPS /metrics
/// may also need a client certificate or a bearer token (refused with 403 or 401, logged once a
/// minute); the probes' paths stay open, since the kubelet presents neither. At each scrape it
/// runs every collector with its time budget, each on a worker so that one past its budget is cut
/// off rather than waited for, renders what they wrote through the metric table and adds
/// efawatch_build_info, efawatch_start_time_seconds and per-collector success and duration.
/// Scrapes are serialized and so is each collector's run (collectors need not be thread-safe).
/// Collectors must outlive the edge, whose destruction waits for a run in flight.
class PrometheusEdge {
 public:
  static absl::StatusOr<std::unique_ptr<PrometheusEdge>> Create(
      PrometheusEdgeOptions options, const std::vector<common::Collector*>& collectors,
      common::CollectorStatusBoard* status, const common::Clock& clock);
  ~PrometheusEdge();

  /// The port actually bound.
  int port() const { return port_; }
  /// HTTPS: serve with the TLS files as they are now (HttpServer::ReloadTls). Any thread.
  absl::Status ReloadTls();

 private:
  class Scraper;
  struct ExposerMetrics;
  explicit PrometheusEdge(const common::Clock& clock);
  absl::Status Serve(const std::string& listen, const MetricsTlsOptions& tls,
                     const common::ConnectionLimits& limits);
  HttpResponse Metrics(const HttpRequest& request);

  const common::Clock& clock_;
  std::shared_ptr<Scraper> scraper_;
  // The server goes first on destruction: its handlers use the scraper and token.
  bool require_client_cert_ = false;        // HTTPS only
  std::unique_ptr<BearerTokenFile> token_;  // HTTPS only
  std::unique_ptr<ExposerMetrics> self_metrics_;
  std::mutex refusal_log_mu_;
  std::chrono::steady_clock::time_point last_refusal_log_;  // guarded by refusal_log_mu_
  std::unique_ptr<HttpServer> http_;
  int port_ = 0;
};

}  // namespace efawatch::exporter
