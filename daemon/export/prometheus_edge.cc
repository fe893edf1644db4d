// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/prometheus_edge.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "daemon/export/bearer_token.h"
#include "daemon/export/bounded_collector.h"
#include "daemon/export/family_sink.h"
#include "daemon/export/http_server.h"
#include "lib/common/metric_table.h"
#include "spdlog/spdlog.h"

namespace efawatch::exporter {

class PrometheusEdge::Scraper final : public prometheus::Collectable {
 public:
  Scraper(PrometheusEdgeOptions options, const std::vector<common::Collector*>& collectors,
          common::CollectorStatusBoard* status, const common::Clock& clock)
      : options_(std::move(options)), status_(status), clock_(clock) {
    for (auto* c : collectors) {
      status_->Register(std::string(c->Name()));
      collectors_.push_back(std::make_unique<Bounded>(*c, workers_));
    }
  }

  // Scrapes the HTTPS edge refused, by reason; exported once a check is configured.
  struct Refusals {
    bool checked = false;
    std::atomic<uint64_t> client_certificate{0};
    std::atomic<uint64_t> bearer_token{0};
  };
  Refusals& refusals() { return refusals_; }
  // Set once, before the first scrape: the server's connection counters.
  void set_server(const HttpServerCounters* server) { server_ = server; }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard lock(mu_);
    FamilySink sink;
    if (refusals_.checked) {
      sink.Add(metrics::M::kMetricsScrapesRefusedTotal, {{"reason", "client_certificate"}},
               static_cast<double>(refusals_.client_certificate.load()));
      sink.Add(metrics::M::kMetricsScrapesRefusedTotal, {{"reason", "bearer_token"}},
               static_cast<double>(refusals_.bearer_token.load()));
    }
    if (server_ != nullptr) {
      common::AddCounters(sink, metrics::M::kMetricsConnectionsTotal, "outcome",
                          {{"accepted", &server_->accepted},
                           {"refused", &server_->refused},
                           {"evicted", &server_->evicted},
                           {"timed_out", &server_->timed_out}});
    }
    sink.Add(metrics::M::kBuildInfo,
             {{"version", options_.build.version},
              {"revision", options_.build.revision},
              {"nccl", options_.build.nccl}},
             1);
    sink.Add(metrics::M::kStartTimeSeconds, {},
             std::chrono::duration<double>(options_.start_time.time_since_epoch()).count());
    for (const auto& b : collectors_) {
      const std::string name(b->run.collector().Name());
      const auto start = clock_.Now();
      const auto deadline = start + options_.collector_budget;
      absl::Status st = b->run.Collect(deadline, options_.collector_budget, sink);
      const auto end = clock_.Now();
      if (st.ok() && end > deadline) {
        st = absl::DeadlineExceededError("collector ran past its time budget");
      }
      const double secs = std::chrono::duration<double>(end - start).count();
      if (!st.ok()) Warn(*b, st);
      status_->Record(name, st, clock_.WallNow(), secs);
      sink.Add(metrics::M::kCollectorSuccess, {{"collector", name}}, st.ok() ? 1 : 0);
      sink.Add(metrics::M::kCollectorDurationSeconds, {{"collector", name}}, secs);
    }
    return sink.Take();
  }

 private:
  struct Bounded {
    Bounded(common::Collector& c, CollectorWorkers& workers) : run(c, workers) {}
    BoundedCollector run;
    std::chrono::steady_clock::time_point last_overrun_log{};  // guarded by the scraper's mu_
  };

  // A collector's error, logged. An overrun is logged once a minute per collector: a collector
  // stuck on a read overruns at every scrape, and the metric already says so each time.
  void Warn(Bounded& b, const absl::Status& st) const {
    const std::string name(b.run.collector().Name());
    if (st.code() == absl::StatusCode::kDeadlineExceeded) {
      const auto now = clock_.Now();
      if (b.last_overrun_log != std::chrono::steady_clock::time_point{} &&
          now - b.last_overrun_log < std::chrono::minutes(1)) {
        return;
      }
      b.last_overrun_log = now;
      spdlog::warn("collector {} failed: {} (further overruns this minute are not logged)", name,
                   std::string(st.message()));
      return;
    }
    spdlog::warn("collector {} failed: {}", name, std::string(st.message()));
  }

  const PrometheusEdgeOptions options_;
  // The threads the collectors run on; their destructor waits for a late run.
  CollectorWorkers workers_;
  // Each runs bounded on the workers (BoundedCollector); destroyed with the scraper, after the
  // server.
  std::vector<std::unique_ptr<Bounded>> collectors_;
  common::CollectorStatusBoard* status_;
  const common::Clock& clock_;
  mutable std::mutex mu_;
  Refusals refusals_;
  const HttpServerCounters* server_ = nullptr;
};

// /healthz and /readyz for the kubelet's HTTP probes: the kubelet presents no client certificate,
// so it cannot use the gRPC health service under mutual TLS. Serving at all is the answer (the
// agent binds this edge last, once everything else started): 200 with an empty body.
// The families prometheus-cpp's Exposer adds to every /metrics it serves (pull/src/handler.cc,
// names, help and quantiles as there), so a scrape over HTTPS has the same text as over HTTP.
struct PrometheusEdge::ExposerMetrics {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Counter& bytes = prometheus::BuildCounter()
                                   .Name("exposer_transferred_bytes_total")
                                   .Help("Transferred bytes to metrics services")
                                   .Register(*registry)
                                   .Add({});
  prometheus::Counter& scrapes = prometheus::BuildCounter()
                                     .Name("exposer_scrapes_total")
                                     .Help("Number of times metrics were scraped")
                                     .Register(*registry)
                                     .Add({});
  prometheus::Summary& latencies =
      prometheus::BuildSummary()
          .Name("exposer_request_latencies")
          .Help("Latencies of serving scrape requests, in microseconds")
          .Register(*registry)
          .Add({}, prometheus::Summary::Quantiles{{0.5, 0.05}, {0.9, 0.01}, {0.99, 0.001}});
};

PrometheusEdge::PrometheusEdge(const common::Clock& clock) : clock_(clock) {}

absl::StatusOr<std::unique_ptr<PrometheusEdge>> PrometheusEdge::Create(
    PrometheusEdgeOptions options, const std::vector<common::Collector*>& collectors,
    common::CollectorStatusBoard* status, const common::Clock& clock) {
  std::unique_ptr<PrometheusEdge> edge(new PrometheusEdge(clock));
  const std::string listen = options.listen;
  const MetricsTlsOptions tls = options.tls;
  const common::ConnectionLimits limits = options.limits;
  edge->scraper_ = std::make_shared<Scraper>(std::move(options), collectors, status, clock);
  auto st = edge->Serve(listen, tls, limits);
  if (!st.ok()) return st;
  return edge;
}

// One server, HttpServer, for plain HTTP and HTTPS: prometheus-cpp's Exposer (civetweb)
// gives each connection a worker thread and bounds neither how many a client holds nor how long
// its headers may take, so two idle connections took /metrics and /healthz down. The text is
// rendered here as the Exposer renders it, by prometheus-cpp's TextSerializer over what the
// scraper collects, with the Exposer's own exposer_* families.
absl::Status PrometheusEdge::Serve(const std::string& listen, const MetricsTlsOptions& tls,
                                   const common::ConnectionLimits& limits) {
  if (!tls.bearer_token_file.empty()) {
    auto token = BearerTokenFile::Create(tls.bearer_token_file);
    if (!token.ok()) return token.status();
    token_ = *std::move(token);
  }
  require_client_cert_ = !tls.client_ca_file.empty();
  scraper_->refusals().checked = require_client_cert_ || token_ != nullptr;
  self_metrics_ = std::make_unique<ExposerMetrics>();
  const auto alive = [](const HttpRequest&) { return HttpResponse{}; };
  HttpServerOptions o;
  o.listen = listen;
  o.limits = limits;
  o.cert_file = tls.cert_file;
  o.key_file = tls.key_file;
  o.client_ca_file = tls.client_ca_file;
  auto server =
      HttpServer::Create(std::move(o),
                         {{"/metrics", [this](const HttpRequest& r) { return Metrics(r); }},
                          {"/healthz", alive},
                          {"/readyz", alive}},
                         clock_);
  if (!server.ok()) return server.status();
  http_ = *std::move(server);
  scraper_->set_server(&http_->counters());
  port_ = http_->port();
  return absl::OkStatus();
}

HttpResponse PrometheusEdge::Metrics(const HttpRequest& request) {
  std::string refused;
  HttpResponse r;
  if (require_client_cert_ && request.client_cert != ClientCert::kTrusted) {
    r = HttpResponse::Text(403, "a client certificate signed by the metrics client CA is needed\n");
    scraper_->refusals().client_certificate.fetch_add(1);
    refused = request.client_cert == ClientCert::kNone
                  ? "no client certificate"
                  : absl::StrCat("client certificate not trusted: ", request.client_cert_problem);
  } else if (token_ != nullptr && !token_->Allows(request.authorization)) {
    r = {.status = 401,
         .body = "a bearer token is needed\n",
         .headers = {{"WWW-Authenticate", "Bearer realm=\"efawatch\""}}};
    refused = request.authorization.empty() ? "no bearer token" : "wrong bearer token";
    scraper_->refusals().bearer_token.fetch_add(1);
  }
  if (!refused.empty()) {
    // A misconfigured scraper retries every interval: one line a minute says what is wrong.
    std::lock_guard lock(refusal_log_mu_);
    const auto now = clock_.Now();
    if (last_refusal_log_ == std::chrono::steady_clock::time_point{} ||
        now - last_refusal_log_ >= std::chrono::minutes(1)) {
      last_refusal_log_ = now;
      spdlog::warn("metrics: scrape refused ({}); further refusals this minute are not logged",
                   refused);
    }
    return r;
  }
  // As prometheus-cpp's MetricsHandler does: its own families first, then the scraper's, and
  // the latency in microseconds.
  const auto start = std::chrono::steady_clock::now();
  std::vector<prometheus::MetricFamily> families = self_metrics_->registry->Collect();
  for (auto& f : scraper_->Collect()) families.push_back(std::move(f));
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = prometheus::TextSerializer().Serialize(families);
  const auto took = std::chrono::steady_clock::now() - start;
  self_metrics_->latencies.Observe(
      static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
  self_metrics_->bytes.Increment(static_cast<double>(r.body.size()));
  self_metrics_->scrapes.Increment();
  return r;
}

absl::Status PrometheusEdge::ReloadTls() { return http_->ReloadTls(); }

PrometheusEdge::~PrometheusEdge() = default;

}  // namespace efawatch::exporter
