// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "daemon/export/http_server.h"
#include "lib/admission/review.h"
#include "lib/common/collector.h"

namespace efawatch::admission {

/// The webhook's HTTP handler: POST /validate-pods takes an AdmissionReview v1 and answers one
/// (lib/admission decides); POST /validate-pods-enforce (the second webhook entry, for
/// namespaces labelled efawatch.io/enforce=true) turns warnings into denials as --enforce does
/// for all. A path, not a query: the API server accepts no query string in a webhook's service
/// path. A body that is not an AdmissionReview gets 400. Counts every answer for /metrics
/// (Collect), and reads the edge's 413 count when given the server's counters. Thread-safe: the
/// server calls Handle from several threads at once.
class Webhook final : public common::Collector {
 public:
  explicit Webhook(Policy policy) : policy_(std::move(policy)) {}

  static constexpr char kPath[] = "/validate-pods";
  static constexpr char kEnforcePath[] = "/validate-pods-enforce";

  exporter::HttpResponse Handle(const exporter::HttpRequest& request);
  /// The server whose 413s to report (set once it exists; it outlives the scrapes).
  void CountTooLargeOf(const exporter::HttpServerCounters* counters) { server_ = counters; }

  std::string_view Name() const override { return "admission"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  void Count(const Decision& d);

  const Policy policy_;
  std::atomic<const exporter::HttpServerCounters*> server_{nullptr};
  std::atomic<uint64_t> malformed_{0};
  std::mutex mu_;
  std::map<std::string, uint64_t> results_;                        // guarded by mu_
  std::map<std::pair<std::string, std::string>, uint64_t> rules_;  // (rule, result), by mu_
};

}  // namespace efawatch::admission
