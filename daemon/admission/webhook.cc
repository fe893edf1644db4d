// SPDX-License-Identifier: Apache-2.0
#include "daemon/admission/webhook.h"

#include "lib/common/metric_table.h"
#include "spdlog/spdlog.h"

namespace efawatch::admission {

exporter::HttpResponse Webhook::Handle(const exporter::HttpRequest& request) {
  Policy policy = policy_;
  if (request.path == kEnforcePath) policy.enforce = true;
  auto decision = Review(request.body, policy);
  if (!decision.ok()) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return exporter::HttpResponse::Text(400, std::string(decision.status().message()) + "\n");
  }
  Count(*decision);
  if (decision->result == Result::kOptedOut) {
    // The reason is for people (the log), not a label: it is free text.
    spdlog::info("admission: pod opted out ({} finding(s) not applied): {}",
                 decision->findings.size(), decision->review["response"]["uid"].dump());
  }
  exporter::HttpResponse r;
  r.content_type = "application/json";
  r.body = decision->review.dump();
  return r;
}

void Webhook::Count(const Decision& d) {
  const std::string result(ResultName(d.result));
  std::lock_guard lock(mu_);
  ++results_[result];
  for (const Finding& f : d.findings) ++rules_[{f.rule, result}];
}

absl::Status Webhook::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                              common::MetricSink& sink) {
  {
    std::lock_guard lock(mu_);
    // Every result is exported from the start, so a rate() over a fresh webhook reads 0.
    for (Result r : {Result::kAllowed, Result::kWarned, Result::kDenied, Result::kSkipped,
                     Result::kExempt, Result::kOptedOut}) {
      const std::string name(ResultName(r));
      const auto it = results_.find(name);
      sink.Add(metrics::M::kAdmissionReviewsTotal, {{"result", name}},
               static_cast<double>(it == results_.end() ? 0 : it->second));
    }
    for (const auto& [key, n] : rules_) {
      sink.Add(metrics::M::kAdmissionFindingsTotal, {{"rule", key.first}, {"result", key.second}},
               static_cast<double>(n));
    }
  }
  sink.Add(metrics::M::kAdmissionBadRequestsTotal, {{"reason", "malformed"}},
           static_cast<double>(malformed_.load(std::memory_order_relaxed)));
  const exporter::HttpServerCounters* server = server_.load();
  sink.Add(metrics::M::kAdmissionBadRequestsTotal, {{"reason", "too_large"}},
           server == nullptr ? 0.0 : static_cast<double>(server->too_large.load()));
  return absl::OkStatus();
}

}  // namespace efawatch::admission
