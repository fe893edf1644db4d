#include "daemon/export/prometheus_edge.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "daemon/export/bearer_token.h"
#include "daemon/export/family_sink.h"
#include "daemon/export/https_server.h"
#include "lib/common/metric_table.h"
#include "spdlog/spdlog.h"

namespace efawatch::exporter {

class PrometheusEdge::Scraper final : public prometheus::Collectable {
 public:
  Scraper(PrometheusEdgeOptions options, std::vector<common::Collector*> collectors,
          common::CollectorStatusBoard* status, const common::Clock& clock)
      : options_(std::move(options)),
        collectors_(std::move(collectors)),
        status_(status),
        clock_(clock) {
    for (auto* c : collectors_) status_->Register(std::string(c->Name()));
  }

  // Scrapes the HTTPS edge refused, by reason; exported once a check is configured.
  struct Refusals {
    bool checked = false;
    std::atomic<uint64_t> client_certificate{0};
    std::atomic<uint64_t> bearer_token{0};
  };
  Refusals& refusals() { return refusals_; }

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard lock(mu_);
    FamilySink sink;
    if (refusals_.checked) {
      sink.Add(metrics::M::kMetricsScrapesRefusedTotal, {{"reason", "client_certificate"}},
               static_cast<double>(refusals_.client_certificate.load()));
      sink.Add(metrics::M::kMetricsScrapesRefusedTotal, {{"reason", "bearer_token"}},
               static_cast<double>(refusals_.bearer_token.load()));
    }
    sink.Add(metrics::M::kBuildInfo,
             {{"version", options_.build.version},
              {"revision", options_.build.revision},
              {"nccl", options_.build.nccl}},
             1);
    sink.Add(metrics::M::kStartTimeSeconds, {},
             std::chrono::duration<double>(options_.start_time.time_since_epoch()).count());
    for (auto* c : collectors_) {
      const std::string name(c->Name());
      const auto start = clock_.Now();
      const auto deadline = start + options_.collector_budget;
      absl::Status st;
      try {
        st = c->Collect(deadline, sink);
      } catch (const std::exception& e) {
        st = absl::InternalError(absl::StrCat("collector threw: ", e.what()));
      }
      const auto end = clock_.Now();
      if (st.ok() && end > deadline) {
        st = absl::DeadlineExceededError("collector ran past its time budget");
      }
      const double secs = std::chrono::duration<double>(end - start).count();
      if (!st.ok()) spdlog::warn("collector {} failed: {}", name, std::string(st.message()));
      status_->Record(name, st, clock_.WallNow(), secs);
      sink.Add(metrics::M::kCollectorSuccess, {{"collector", name}}, st.ok() ? 1 : 0);
      sink.Add(metrics::M::kCollectorDurationSeconds, {{"collector", name}}, secs);
    }
    return sink.Take();
  }

 private:
  const PrometheusEdgeOptions options_;
  const std::vector<common::Collector*> collectors_;
  common::CollectorStatusBoard* status_;
  const common::Clock& clock_;
  mutable std::mutex mu_;
  Refusals refusals_;
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

class PrometheusEdge::Alive final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override { return {}; }
};

PrometheusEdge::PrometheusEdge(const common::Clock& clock) : clock_(clock) {}

absl::StatusOr<std::unique_ptr<PrometheusEdge>> PrometheusEdge::Create(
    PrometheusEdgeOptions options, std::vector<common::Collector*> collectors,
    common::CollectorStatusBoard* status, const common::Clock& clock) {
  std::unique_ptr<PrometheusEdge> edge(new PrometheusEdge(clock));
  const std::string listen = options.listen;
  const MetricsTlsOptions tls = options.tls;
  edge->scraper_ =
      std::make_shared<Scraper>(std::move(options), std::move(collectors), status, clock);
  edge->alive_ = std::make_shared<Alive>();
  auto st = tls.cert_file.empty() ? edge->ServeHttp(listen) : edge->ServeHttps(listen, tls);
  if (!st.ok()) return st;
  return edge;
}

absl::Status PrometheusEdge::ServeHttp(const std::string& listen) {
  try {
    // civetweb wants "port" alone for "any address"; we accept the usual ":port" too.
    std::string civet = listen.starts_with(":") ? listen.substr(1) : listen;
    exposer_ = std::make_unique<prometheus::Exposer>(civet, 2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics listen ", listen, ": cannot bind (", e.what(), ")"));
  }
  exposer_->RegisterCollectable(scraper_);
  exposer_->RegisterCollectable(alive_, "/healthz");
  exposer_->RegisterCollectable(alive_, "/readyz");
  const auto ports = exposer_->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("metrics listen ", listen, ": no listening port"));
  }
  port_ = ports.front();
  return absl::OkStatus();
}

// civetweb's TLS crashed on the first request in an earlier trial, so HTTPS is libmicrohttpd's
// (HttpsServer); the text is rendered here as the Exposer renders it, by prometheus-cpp's
// TextSerializer over what the scraper collects.
absl::Status PrometheusEdge::ServeHttps(const std::string& listen, const MetricsTlsOptions& tls) {
  if (!tls.bearer_token_file.empty()) {
    auto token = BearerTokenFile::Create(tls.bearer_token_file);
    if (!token.ok()) return token.status();
    token_ = *std::move(token);
  }
  require_client_cert_ = !tls.client_ca_file.empty();
  scraper_->refusals().checked = require_client_cert_ || token_ != nullptr;
  https_self_ = std::make_unique<ExposerMetrics>();
  const auto alive = [](const HttpRequest&) { return HttpResponse{}; };
  HttpsServerOptions o;
  o.listen = listen;
  o.cert_file = tls.cert_file;
  o.key_file = tls.key_file;
  o.client_ca_file = tls.client_ca_file;
  auto server = HttpsServer::Create(
      std::move(o), {{"/metrics", [this](const HttpRequest& r) { return Metrics(r); }},
                     {"/healthz", alive},
                     {"/readyz", alive}});
  if (!server.ok()) return server.status();
  https_ = *std::move(server);
  port_ = https_->port();
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
  std::vector<prometheus::MetricFamily> families = https_self_->registry->Collect();
  for (auto& f : scraper_->Collect()) families.push_back(std::move(f));
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = prometheus::TextSerializer().Serialize(families);
  const auto took = std::chrono::steady_clock::now() - start;
  https_self_->latencies.Observe(
      static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
  https_self_->bytes.Increment(static_cast<double>(r.body.size()));
  https_self_->scrapes.Increment();
  return r;
}

PrometheusEdge::~PrometheusEdge() {
  if (exposer_ == nullptr) return;
  // civetweb's master thread notices the stop flag only when its poll() on the listening socket
  // returns, which can take seconds on an idle server; SIGTERM must end the agent within 2 s.
  // Connecting to ourselves wakes it at once.
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load()) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port_));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (fd >= 0) {
        (void)::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
        ::close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  exposer_.reset();
  stopped = true;
  waker.join();
}

}  // namespace efawatch::exporter
