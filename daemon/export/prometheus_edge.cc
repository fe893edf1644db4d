#include "daemon/export/prometheus_edge.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "daemon/export/family_sink.h"
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

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::lock_guard lock(mu_);
    FamilySink sink;
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
};

// /healthz and /readyz for the kubelet's HTTP probes: the kubelet presents no client certificate,
// so it cannot use the gRPC health service under mutual TLS. Serving at all is the answer (the
// agent binds this edge last, once everything else started): 200 with an empty body.
class PrometheusEdge::Alive final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override { return {}; }
};

absl::StatusOr<std::unique_ptr<PrometheusEdge>> PrometheusEdge::Create(
    PrometheusEdgeOptions options, std::vector<common::Collector*> collectors,
    common::CollectorStatusBoard* status, const common::Clock& clock) {
  std::unique_ptr<PrometheusEdge> edge(new PrometheusEdge());
  const std::string listen = options.listen;
  edge->scraper_ =
      std::make_shared<Scraper>(std::move(options), std::move(collectors), status, clock);
  try {
    // civetweb wants "port" alone for "any address"; we accept the usual ":port" too.
    std::string civet = listen.starts_with(":") ? listen.substr(1) : listen;
    edge->exposer_ = std::make_unique<prometheus::Exposer>(civet, 2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics listen ", listen, ": cannot bind (", e.what(), ")"));
  }
  edge->exposer_->RegisterCollectable(edge->scraper_);
  edge->alive_ = std::make_shared<Alive>();
  edge->exposer_->RegisterCollectable(edge->alive_, "/healthz");
  edge->exposer_->RegisterCollectable(edge->alive_, "/readyz");
  const auto ports = edge->exposer_->GetListeningPorts();
  if (ports.empty())
    return absl::UnavailableError(absl::StrCat("metrics listen ", listen, ": no listening port"));
  edge->port_ = ports.front();
  return edge;
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
