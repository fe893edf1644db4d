// SPDX-License-Identifier: Apache-2.0
#include "daemon/agent/collective_schedule.h"

#include <algorithm>
#include <optional>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "daemon/agent/coordination.h"
#include "lib/common/metric_table.h"
#include "probes/collective/coordinator.h"
#include "probes/collective/ops.h"
#include "spdlog/spdlog.h"

namespace efawatch::agent {

std::string_view ResultName(ScheduledRunResult r) {
  switch (r) {
    case ScheduledRunResult::kOk:
      return "ok";
    case ScheduledRunResult::kFailed:
      return "failed";
    case ScheduledRunResult::kSkippedBusy:
      return "skipped_busy";
    case ScheduledRunResult::kSkippedNoPeers:
      return "skipped_no_peers";
  }
  return "failed";
}

bool ClockWaiter::WaitUntil(std::chrono::steady_clock::time_point when,
                            const std::stop_token& stop) {
  std::unique_lock lock(mu_);
  const auto left = when - clock_.Now();
  if (left > std::chrono::steady_clock::duration::zero()) {
    cv_.wait_for(lock, stop, left, [] { return false; });
  }
  return !stop.stop_requested();
}

absl::StatusOr<std::unique_ptr<CollectiveSchedule>> CollectiveSchedule::Create(
    CollectiveScheduleOptions options, const collective::CollectiveLimits& limits, PeersFn peers,
    RunFn run, const common::Clock& clock, Waiter& waiter) {
  if (options.interval <= std::chrono::milliseconds::zero()) {
    return absl::InvalidArgumentError("collective probe: the interval must be positive");
  }
  if (options.self_agent.empty()) {
    return absl::InvalidArgumentError("collective probe: this agent's own address is unknown");
  }
  collective::RunRequest check = options.request;
  check.participants = {options.self_agent, "peer:0"};
  if (auto n = collective::Normalize(std::move(check), limits); !n.ok()) return n.status();
  return std::unique_ptr<CollectiveSchedule>(
      new CollectiveSchedule(std::move(options), std::move(peers), std::move(run), clock, waiter));
}

CollectiveSchedule::CollectiveSchedule(CollectiveScheduleOptions options, PeersFn peers, RunFn run,
                                       const common::Clock& clock, Waiter& waiter)
    : options_(std::move(options)),
      peers_(std::move(peers)),
      run_(std::move(run)),
      clock_(clock),
      waiter_(waiter),
      snap_(std::make_shared<const ScheduleSnapshot>()) {}

CollectiveSchedule::~CollectiveSchedule() { Stop(); }

void CollectiveSchedule::Start() {
  thread_ = std::jthread([this](const std::stop_token& stop) { Loop(stop); });
}

void CollectiveSchedule::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

std::shared_ptr<const ScheduleSnapshot> CollectiveSchedule::Snapshot() const {
  std::lock_guard lock(mu_);
  return snap_;
}

void CollectiveSchedule::Loop(const std::stop_token& stop) {
  std::mt19937_64 rng{options_.seed != 0 ? options_.seed : std::random_device{}()};
  std::uniform_real_distribution<double> spread(-options_.jitter, options_.jitter);
  const auto scaled = [&](double factor) {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.interval *
                                                                           factor);
  };
  // Waits are measured from each run's start, so a run's duration does not push the next ones.
  auto next = clock_.Now() + scaled(std::uniform_real_distribution<double>(0, 1)(rng));
  while (waiter_.WaitUntil(next, stop)) {
    const auto start = clock_.Now();
    RunOnce(stop);
    next = std::max(clock_.Now(), start + scaled(1.0 + spread(rng)));
  }
}

void CollectiveSchedule::RunOnce(const std::stop_token& stop) {
  collective::RunRequest request = options_.request;
  request.participants = {options_.self_agent};
  for (std::string& p : peers_()) {
    if (p != options_.self_agent) request.participants.push_back(std::move(p));
  }
  std::optional<absl::StatusOr<collective::Result>> result;
  const auto start = clock_.Now();
  if (request.participants.size() > 1) result = run_(request, stop);
  const double seconds = std::chrono::duration<double>(clock_.Now() - start).count();
  // A run cut short by the agent's shutdown says nothing about the fabric.
  if (stop.stop_requested()) return;

  ScheduledRunResult what = ScheduledRunResult::kOk;
  if (!result) {
    what = ScheduledRunResult::kSkippedNoPeers;
  } else if (!result->ok()) {
    what = absl::IsResourceExhausted(result->status()) ? ScheduledRunResult::kSkippedBusy
                                                       : ScheduledRunResult::kFailed;
  }
  std::lock_guard lock(mu_);
  auto next = std::make_shared<ScheduleSnapshot>(*snap_);
  ++next->runs[static_cast<size_t>(what)];
  if (what == ScheduledRunResult::kOk) {
    next->completed_any = true;
    next->last_ok = true;
    next->last_duration_seconds = seconds;
    next->consecutive_failures = 0;
    next->last_success = clock_.WallNow();
    next->busbw.clear();
    // Rows come in the order of the request's sizes; the configured size is the label (the rows'
    // own sizes are rounded per rank count, which the mesh may change from run to run).
    const auto& rows = (*result)->rows;
    for (size_t i = 0; i < rows.size() && i < options_.request.sizes.size(); ++i) {
      next->busbw.emplace_back(options_.request.sizes[i], rows[i].busbw_gbps * 1e9);
    }
  } else if (what == ScheduledRunResult::kFailed) {
    next->completed_any = true;
    next->last_ok = false;
    next->last_duration_seconds = seconds;
    ++next->consecutive_failures;
    next->last_error = std::string(result->status().message());
    spdlog::warn("scheduled collective probe with {} failed ({} in a row): {}",
                 absl::StrJoin(request.participants, ","), next->consecutive_failures,
                 next->last_error);
  } else {
    spdlog::info("scheduled collective probe skipped: {}",
                 result ? std::string(result->status().message()) : "no reachable mesh peer");
  }
  snap_ = std::move(next);
}

absl::Status CollectiveSchedule::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                         common::MetricSink& sink) {
  using metrics::M;
  const auto s = Snapshot();
  for (ScheduledRunResult r : kScheduledRunResults) {
    sink.Add(M::kCollectiveProbeRunsTotal, {{"result", std::string(ResultName(r))}},
             static_cast<double>(s->runs[static_cast<size_t>(r)]));
  }
  // Absent until a run ended, so a fresh agent is neither failing nor fine.
  if (s->completed_any) {
    sink.Add(M::kCollectiveProbeSuccess, {}, s->last_ok ? 1.0 : 0.0);
    sink.Add(M::kCollectiveProbeDurationSeconds, {}, s->last_duration_seconds);
    sink.Add(M::kCollectiveProbeConsecutiveFailures, {},
             static_cast<double>(s->consecutive_failures));
  }
  if (s->last_success != std::chrono::system_clock::time_point{}) {
    sink.Add(M::kCollectiveProbeLastSuccessTimestampSeconds, {},
             std::chrono::duration<double>(s->last_success.time_since_epoch()).count());
  }
  for (const auto& [size, bw] : s->busbw) {
    sink.Add(M::kCollectiveProbeBusbwBytesPerSecond, {{"size", std::to_string(size)}}, bw);
  }
  return absl::OkStatus();
}

CollectiveSchedule::RunFn CoordinationRunner(Coordination& coordination) {
  return [&coordination](const collective::RunRequest& request,
                         const std::stop_token& stop) -> absl::StatusOr<collective::Result> {
    // Shared with the done callback, which may outlive this call when the agent stops first.
    struct Answer {
      std::mutex mu;
      std::condition_variable_any cv;
      std::optional<absl::StatusOr<collective::Result>> result;
    };
    auto answer = std::make_shared<Answer>();
    CallContext call;
    call.cancel = stop;
    coordination.Run(call, request, [answer](absl::StatusOr<collective::Result> r) {
      {
        std::lock_guard lock(answer->mu);
        answer->result = std::move(r);
      }
      answer->cv.notify_all();
    });
    // The coordination ends every run by its deadline; the margin only guards against a bug.
    const auto limit = std::chrono::milliseconds(request.deadline_ms) + std::chrono::seconds(10);
    std::unique_lock lock(answer->mu);
    if (!answer->cv.wait_for(lock, stop, limit, [&] { return answer->result.has_value(); })) {
      if (stop.stop_requested()) return absl::CancelledError("agent stopping");
      return absl::DeadlineExceededError("the coordination did not answer past its deadline");
    }
    return *std::move(answer->result);
  };
}

absl::StatusOr<ProbePeers> ParseProbePeers(std::string_view spec_in) {
  // Debian's abseil has its own string_view.
  absl::string_view spec(spec_in.data(), spec_in.size());
  ProbePeers out;
  if (absl::ConsumePrefix(&spec, "mesh:")) {
    if (!absl::SimpleAtoi(spec, &out.from_mesh) || out.from_mesh < 1 || out.from_mesh > 8) {
      return absl::InvalidArgumentError("mesh:N takes N from 1 to 8");
    }
    return out;
  }
  for (absl::string_view p : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    p = absl::StripAsciiWhitespace(p);
    const auto colon = p.rfind(':');
    int port = 0;
    if (colon == std::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(p.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("'", p, "' is not host:port"));
    }
    out.agents.emplace_back(p);
  }
  if (out.agents.empty()) return absl::InvalidArgumentError("no peer agent");
  if (out.agents.size() > 63) return absl::InvalidArgumentError("at most 63 peer agents");
  return out;
}

absl::StatusOr<collective::RunRequest> ProbeRequest(std::string_view sizes, std::string_view op,
                                                    std::string_view backend, uint32_t iters,
                                                    std::chrono::milliseconds deadline,
                                                    const collective::CollectiveLimits& limits) {
  collective::RunRequest r;
  auto parsed = collective::ParseSizes(sizes);
  if (!parsed.ok()) return parsed.status();
  // Each size is one busbw series on every coordinating node: keep the set small.
  if (parsed->empty() || parsed->size() > 8) {
    return absl::InvalidArgumentError("give 1 to 8 sizes");
  }
  r.sizes = *std::move(parsed);
  const collective::OpInfo* info = collective::FindOp(op);
  if (info == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("op must be one of ", collective::OpNames()));
  }
  r.op = info->op;
  r.backend = backend == "nccl" ? collective::Backend::kNccl : collective::Backend::kHost;
  r.warmup = 1;
  r.iters = iters;
  r.deadline_ms = static_cast<uint32_t>(deadline.count());
  collective::RunRequest check = r;
  check.participants = {"self:0", "peer:0"};
  if (auto n = collective::Normalize(std::move(check), limits); !n.ok()) return n.status();
  return r;
}

}  // namespace efawatch::agent
