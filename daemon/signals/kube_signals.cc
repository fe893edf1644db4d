// SPDX-License-Identifier: Apache-2.0
#include "daemon/signals/kube_signals.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/common/stable_hash.h"
#include "lib/common/utf8.h"

namespace efawatch::signals {
namespace {

using Json = nlohmann::json;
using std::chrono::system_clock;

constexpr char kEvent[] = "event";
constexpr char kCondition[] = "node_condition";
constexpr char kNode[] = "node_read";
constexpr size_t kMaxNote = 1024;  // the API server refuses a longer Event note

// RFC 3339 in UTC; with microseconds for an Event's eventTime (a MicroTime).
std::string Rfc3339(system_clock::time_point t, bool micros) {
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string out = absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (micros) absl::StrAppendFormat(&out, ".%06d", static_cast<int>(us % 1000000));
  return out + "Z";
}

struct ProblemText {
  const char* reason;
  const char* lead;
};

// The Event's reason and the lead of its note, per kind of pod problem.
ProblemText TextOf(common::FindingKind kind) {
  using common::FindingKind;
  switch (kind) {
    case FindingKind::kTcpFallback:
      return {"NcclTcpFallback", "NCCL inter-node traffic over TCP sockets: "};
    case FindingKind::kLoopbackMisuse:
      return {"NcclLoopbackMisuse", "NCCL uses the loopback interface between nodes: "};
    case FindingKind::kNetPluginMissing:
      return {"NcclNetPluginMissing", "NCCL net plugin (aws-ofi-nccl) missing or failed: "};
    default:
      return {"NcclProblem", "NCCL problem: "};
  }
}

std::string KeyOf(const PodProblem& p) {
  return absl::StrCat(p.uid, "/", p.container, "/", common::KindName(p.kind));
}

}  // namespace

Json EventFor(const PodProblem& p, const KubeSignalsOptions& o, system_clock::time_point now) {
  const ProblemText text = TextOf(p.kind);
  // A DNS subdomain of at most 253 characters: the pod's name (already one) and a hash.
  const std::string name =
      absl::StrFormat("%s.%016x", p.pod.substr(0, 200), common::StableHash(0, KeyOf(p)));
  std::string note =
      common::ToValidUtf8(absl::StrCat(text.lead, "container ", p.container, ": ", p.message));
  if (note.size() > kMaxNote) note = std::string(common::Utf8Prefix(note, kMaxNote - 3)) + "...";
  return Json{
      {"apiVersion", "events.k8s.io/v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", p.namespace_name}}},
      {"eventTime", Rfc3339(now, true)},
      {"reportingController", "efawatch.io/efawatchd"},
      {"reportingInstance", o.reporting_instance},
      {"action", "AnalyzeNcclLog"},
      {"reason", text.reason},
      {"type", "Warning"},
      {"regarding",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"namespace", p.namespace_name},
        {"name", p.pod},
        {"uid", p.uid},
        {"fieldPath", absl::StrCat("spec.containers{", p.container, "}")}}},
      {"note", note},
  };
}

std::optional<unsigned> AllocatableEfa(const Json& node) {
  const Json* q = nullptr;
  if (node.is_object() && node.contains("status") && node["status"].is_object() &&
      node["status"].contains("allocatable") && node["status"]["allocatable"].is_object()) {
    const Json& a = node["status"]["allocatable"];
    if (auto it = a.find("vpc.amazonaws.com/efa"); it != a.end()) q = &*it;
  }
  // A device plugin's resource is a plain count ("1", "32"); anything else is not ours to read.
  unsigned n = 0;
  if (q == nullptr || !q->is_string() || !absl::SimpleAtoi(q->get<std::string>(), &n) || n > 1024) {
    return std::nullopt;
  }
  return n;
}

Json ConditionsPatch(const std::vector<NodeCondition>& conditions,
                     const std::map<std::string, system_clock::time_point>& transitions,
                     system_clock::time_point now) {
  Json list = Json::array();
  for (const NodeCondition& c : conditions) {
    auto t = transitions.find(c.type);
    list.push_back(
        {{"type", c.type},
         {"status", c.ok ? "True" : "False"},
         {"reason", c.reason},
         {"message", std::string(common::Utf8Prefix(common::ToValidUtf8(c.message), kMaxNote))},
         {"lastHeartbeatTime", Rfc3339(now, false)},
         {"lastTransitionTime", Rfc3339(t != transitions.end() ? t->second : now, false)}});
  }
  return Json{{"status", {{"conditions", list}}}};
}

KubeSignals::KubeSignals(KubeSignalsOptions options, std::function<Observation()> observe,
                         Sender send, const common::Clock& clock)
    : options_(std::move(options)),
      observe_(std::move(observe)),
      send_(std::move(send)),
      clock_(clock),
      tokens_(options_.event_burst),
      tokens_at_(clock.Now()) {}

KubeSignals::~KubeSignals() { Stop(); }

void KubeSignals::Start() {
  thread_ = std::jthread([this](const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      SyncOnce(stop);
      std::unique_lock lock(wait_mu_);
      wake_.wait_for(lock, stop, options_.interval, [] { return false; });
    }
  });
}

void KubeSignals::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

void KubeSignals::SyncOnce(const std::stop_token& stop) {
  const Observation now = observe_();
  SyncEvents(stop, now.pods);
  SyncConditions(stop, now.conditions);
  SyncNode(stop);
}

void KubeSignals::SyncNode(const std::stop_token& stop) {
  if (!options_.list) return;
  const auto now = clock_.Now();
  if (node_read_at_ && now - *node_read_at_ < options_.node_refresh) return;
  node_read_at_ = now;
  auto items =
      options_.list(stop, "/api/v1/nodes", absl::StrCat("metadata.name=", options_.node_name));
  if (!items.ok()) {
    // Kept: the last count read stands (a device plugin's count rarely changes). Logged once
    // per backoff (a missing `list` on nodes fails every read).
    if (!Refused(kNode)) {
      spdlog::warn("kubernetes {}: {} (the advertised EFA count stays {})", kNode,
                   std::string(items.status().message()),
                   AdvertisedEfa() ? absl::StrCat(*AdvertisedEfa()) : "unknown");
      refused_until_[kNode] = now + options_.refused_backoff;
    }
    Count(kNode, "failed");
    return;
  }
  Count(kNode, "sent");
  std::optional<unsigned> efa;
  if (!items->empty()) efa = AllocatableEfa(items->front());
  if (options_.on_advertised_efa) options_.on_advertised_efa(efa);
  std::lock_guard lock(node_mu_);
  advertised_efa_ = efa;
}

std::optional<unsigned> KubeSignals::AdvertisedEfa() const {
  std::lock_guard lock(node_mu_);
  return advertised_efa_;
}

void KubeSignals::Count(const char* signal, const char* result) {
  std::lock_guard lock(counts_mu_);
  ++counts_[{signal, result}];
}

bool KubeSignals::Refused(const char* signal) {
  auto it = refused_until_.find(signal);
  return it != refused_until_.end() && clock_.Now() < it->second;
}

KubeSignals::Result KubeSignals::Send(const std::stop_token& stop, const char* signal,
                                      const std::string& method, const std::string& path,
                                      const std::string& content_type, const Json& body) {
  auto r = send_(stop, method, path, content_type, body);
  if (!r.ok()) {
    spdlog::warn("kubernetes {}: {}", signal, std::string(r.status().message()));
    Count(signal, "failed");
    return Result::kFailed;
  }
  if (r->code >= 200 && r->code < 300) {
    Count(signal, "sent");
    return Result::kSent;
  }
  if (r->code == 409) {
    Count(signal, "exists");
    return Result::kExists;
  }
  const std::string msg = r->body.is_object() ? r->body.value("message", "") : "";
  if (r->code == 403 || r->code == 404) {
    // Logged once per backoff: the RBAC (or the API) is missing, and will be for a while.
    spdlog::warn(
        "kubernetes {}: {} {} refused (HTTP {}: {}); not tried again for {} s (check the "
        "ClusterRole efawatch-kube-signals)",
        signal, method, path, r->code, msg,
        std::chrono::duration_cast<std::chrono::seconds>(options_.refused_backoff).count());
    refused_until_[signal] = clock_.Now() + options_.refused_backoff;
    Count(signal, "refused");
    return Result::kRefused;
  }
  spdlog::warn("kubernetes {}: {} {}: HTTP {}: {}", signal, method, path, r->code, msg);
  Count(signal, "failed");
  return Result::kFailed;
}

void KubeSignals::SyncEvents(const std::stop_token& stop, const std::vector<PodProblem>& problems) {
  // Problems that cleared are forgotten: if one comes back, it is news again.
  std::map<std::string, bool> current;
  for (const PodProblem& p : problems) {
    const std::string key = KeyOf(p);
    auto it = posted_.find(key);
    current[key] = it != posted_.end() && it->second;
  }
  posted_ = std::move(current);
  if (Refused(kEvent)) return;
  const auto now = clock_.Now();
  const double refill = std::chrono::duration<double>(now - tokens_at_) /
                        std::chrono::duration<double>(options_.event_refill);
  tokens_ = std::min<double>(options_.event_burst, tokens_ + refill);
  tokens_at_ = now;
  for (const PodProblem& p : problems) {
    bool& posted = posted_[KeyOf(p)];
    if (posted) continue;
    if (tokens_ < 1) {
      Count(kEvent, "deferred");
      continue;
    }
    tokens_ -= 1;
    const Result r =
        Send(stop, kEvent, "POST",
             absl::StrCat("/apis/events.k8s.io/v1/namespaces/", p.namespace_name, "/events"),
             "application/json", EventFor(p, options_, clock_.WallNow()));
    if (r == Result::kSent || r == Result::kExists) posted = true;
    if (r == Result::kRefused) return;
  }
}

void KubeSignals::SyncConditions(const std::stop_token& stop,
                                 const std::vector<NodeCondition>& conditions) {
  if (conditions.empty() || Refused(kCondition)) return;
  const auto wall = clock_.WallNow();
  bool changed = conditions.size() != sent_conditions_.size();
  for (const NodeCondition& c : conditions) {
    auto old = std::find_if(sent_conditions_.begin(), sent_conditions_.end(),
                            [&](const NodeCondition& s) { return s.type == c.type; });
    if (old == sent_conditions_.end() || old->ok != c.ok) transitions_[c.type] = wall;
    if (old == sent_conditions_.end() || old->ok != c.ok || old->reason != c.reason ||
        old->message != c.message) {
      changed = true;
    }
  }
  if (!changed && clock_.Now() - conditions_at_ < options_.heartbeat) return;
  const Result r = Send(
      stop, kCondition, "PATCH", absl::StrCat("/api/v1/nodes/", options_.node_name, "/status"),
      "application/strategic-merge-patch+json", ConditionsPatch(conditions, transitions_, wall));
  if (r == Result::kSent) {
    sent_conditions_ = conditions;
    conditions_at_ = clock_.Now();
  }
}

absl::Status KubeSignals::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                  common::MetricSink& sink) {
  std::lock_guard lock(counts_mu_);
  for (const auto& [key, n] : counts_) {
    sink.Add(metrics::M::kKubeSignals, {{"signal", key.first}, {"result", key.second}},
             static_cast<double>(n));
  }
  return absl::OkStatus();
}

}  // namespace efawatch::signals
