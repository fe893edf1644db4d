// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/coordinator.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace efawatch::collective {
namespace {

// Time given to Abort calls and to a Start call beyond the deadline (the participant's own
// deadline ends its run; this only covers the answer's trip back).
constexpr auto kGrace = std::chrono::milliseconds(2000);

std::string NewSession() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return absl::StrCat(absl::Hex(v, absl::kZeroPad16));
}

// Time left until `deadline`, at least 1 ms. Participants and calls get durations, never time
// points: `clock` may be a test's, and they wait on the real one.
std::chrono::milliseconds Left(const common::Clock& clock,
                               std::chrono::steady_clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.Now()));
}

// Runs f(i) for every participant on its own thread and waits for all.
template <typename F>
void ForEach(size_t n, F f) {
  std::vector<std::jthread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i) threads.emplace_back([&f, i] { f(i); });
}

}  // namespace

absl::StatusOr<RunRequest> Normalize(RunRequest r, const CollectiveLimits& limits) {
  if (r.participants.empty()) {
    return absl::InvalidArgumentError("give the participants (host:port of each agent)");
  }
  std::set<std::string> seen;
  for (const auto& p : r.participants) {
    if (p.empty() || !seen.insert(p).second) {
      return absl::InvalidArgumentError(absl::StrCat("participant '", p, "' is empty or repeated"));
    }
  }
  if (r.backend == Backend::kUnspecified) r.backend = Backend::kHost;
  if (r.sizes.empty()) {
    for (uint64_t s : {1ull << 20, 4ull << 20, 16ull << 20}) r.sizes.push_back(s);
  }
  if (r.warmup == 0) r.warmup = 2;
  if (r.iters == 0) r.iters = 10;
  if (r.deadline_ms == 0) r.deadline_ms = 60000;
  const OpInfo* op = FindOp(r.op);
  if (op == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("op must be one of ", OpNames()));
  const auto n = static_cast<uint32_t>(r.participants.size());
  if (r.backend == Backend::kHost) {
    for (auto& s : r.sizes) s = RoundSize(s, n, *op);
  }
  // The participants check the same limits; checking here answers before any network work.
  JoinRequest probe;
  probe.rank = 0;
  probe.nranks = n;
  probe.op = r.op;
  probe.backend = r.backend;
  probe.sizes = r.sizes;
  probe.warmup = r.warmup;
  probe.iters = r.iters;
  probe.deadline_ms = r.deadline_ms;
  if (auto st = ValidateJoin(probe, limits); !st.ok()) return st;
  return r;
}

namespace {

// What every Start call shares (every rank's fabric address, NCCL's id, the rank count) and each
// participant's first rank: ranks by position, NCCL agents run one rank per GPU from their offset.
struct StartPlan {
  StartRequest base;
  std::vector<uint32_t> offset;
};

StartPlan PlanStart(const std::string& session, const std::vector<JoinResponse>& joins) {
  StartPlan plan;
  plan.base.session = session;
  uint32_t nranks = 0;
  plan.offset.resize(joins.size());
  for (size_t i = 0; i < joins.size(); ++i) {
    plan.offset[i] = nranks;
    nranks += std::max(1u, joins[i].local_ranks);
    plan.base.fabric_addresses.push_back(joins[i].fabric_address);
  }
  plan.base.nranks = nranks;
  plan.base.nccl_unique_id = joins[0].nccl_unique_id;
  return plan;
}

// Which of the participants running at once failed first. Thread-safe.
class FirstFailure {
 public:
  // True for the first caller only.
  bool Claim(size_t i) {
    std::lock_guard lock(mu_);
    if (index_) return false;
    index_ = i;
    return true;
  }
  std::optional<size_t> index() const {
    std::lock_guard lock(mu_);
    return index_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<size_t> index_;
};

// The participant to blame for a failed start: the one that could not be reached at all (its
// agent died or its network went) before those that only lost it as a ring neighbour or hit the
// deadline waiting. Then a rank that ran out of time: its neighbours only saw it close its
// endpoint. Else the first to fail.
size_t Culprit(const std::vector<absl::StatusOr<RankResult>>& results, size_t first_failure) {
  for (absl::StatusCode code :
       {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded}) {
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].ok() && results[i].status().code() == code) return i;
    }
  }
  return first_failure;
}

// Row `k` of the table: the mean time over the ranks that ran that size (nccl-tests' default),
// wrong elements summed. Nothing when no rank ran it.
std::optional<Row> MakeRow(const std::vector<RankResult>& ranks, size_t k, const OpInfo& op,
                           uint32_t nranks) {
  double time_sum = 0;
  uint64_t wrong = 0, size = 0;
  int ranks_with = 0;
  for (const auto& res : ranks) {
    if (k >= res.timings.size()) continue;
    time_sum += res.timings[k].time_us;
    wrong += res.timings[k].wrong;
    size = res.timings[k].size;
    ++ranks_with;
  }
  if (ranks_with == 0) return std::nullopt;
  Row row;
  row.size = size;
  row.count = op.Count(size, nranks);
  row.time_us = time_sum / ranks_with;
  row.algbw_gbps = row.time_us > 0 ? static_cast<double>(size) / (row.time_us * 1e3) : 0;
  row.busbw_gbps = row.algbw_gbps * op.BusFactor(nranks);
  row.wrong = wrong;
  return row;
}

// The answer of a completed run: the participants' nodes and results and nccl-tests' rows.
Result Tabulate(const RunRequest& r, const std::vector<JoinResponse>& joins,
                std::vector<RankResult> ranks, uint32_t nranks) {
  const OpInfo* op = FindOp(r.op);
  Result out;
  out.op = r.op;
  out.backend = r.backend;
  out.nranks = nranks;
  out.provider = joins[0].provider;
  for (const auto& j : joins) out.nodes.push_back(j.node_name);
  out.ranks = std::move(ranks);
  double busbw_sum = 0;
  for (size_t k = 0; k < r.sizes.size(); ++k) {
    std::optional<Row> row = MakeRow(out.ranks, k, *op, nranks);
    if (!row) continue;
    busbw_sum += row->busbw_gbps;
    out.rows.push_back(*row);
  }
  if (out.rows.size() > 0) out.avg_busbw_gbps = busbw_sum / static_cast<double>(out.rows.size());
  return out;
}

// One RunCollective call past Normalize: the session, the participants and the deadline that
// its join and start phases share. The phases call the participants in parallel, one thread
// each, and the first participant to fail aborts all the others.
class CollectiveRun {
 public:
  CollectiveRun(const RunRequest& r, ParticipantCalls& calls, const common::Clock& clock,
                std::chrono::steady_clock::time_point deadline)
      : r_(r), calls_(calls), clock_(clock), deadline_(deadline), n_(r.participants.size()) {}

  // Every participant's answer, or the error of the first (by rank) that could not join.
  absl::StatusOr<std::vector<JoinResponse>> Join();
  // Every participant's result, or ABORTED naming the participant to blame.
  absl::StatusOr<std::vector<RankResult>> Start(const StartPlan& plan);
  const std::string& session() const { return session_; }

 private:
  std::string Name(size_t i) const { return absl::StrCat(r_.participants[i], " (rank ", i, ")"); }
  JoinRequest Invitation(size_t i) const;
  void AbortAll(const std::string& reason);
  // Starts participant `i`; the first to fail aborts everyone else at once rather than at the
  // deadline.
  void StartOne(const StartPlan& plan, size_t i, absl::StatusOr<RankResult>* result,
                FirstFailure* first);

  const RunRequest& r_;
  ParticipantCalls& calls_;
  const common::Clock& clock_;
  const std::chrono::steady_clock::time_point deadline_;
  const size_t n_;
  const std::string session_ = NewSession();
};

JoinRequest CollectiveRun::Invitation(size_t i) const {
  JoinRequest j;
  j.session = session_;
  j.rank = static_cast<uint32_t>(i);
  j.nranks = static_cast<uint32_t>(n_);
  j.op = r_.op;
  j.sizes = r_.sizes;
  j.backend = r_.backend;
  j.warmup = r_.warmup;
  j.iters = r_.iters;
  j.deadline_ms = static_cast<uint32_t>(Left(clock_, deadline_).count());
  return j;
}

void CollectiveRun::AbortAll(const std::string& reason) {
  AbortRequest abort;
  abort.session = session_;
  abort.reason = reason;
  ForEach(n_, [&](size_t i) { calls_.Abort(r_.participants[i], abort, kGrace); });
}

absl::StatusOr<std::vector<JoinResponse>> CollectiveRun::Join() {
  std::vector<absl::StatusOr<JoinResponse>> joins(n_, absl::UnknownError("not joined"));
  ForEach(n_, [&](size_t i) {
    const JoinRequest j = Invitation(i);
    joins[i] = calls_.Join(r_.participants[i], j, Left(clock_, deadline_));
  });
  std::vector<JoinResponse> out;
  for (size_t i = 0; i < n_; ++i) {
    if (!joins[i].ok()) {
      const std::string why =
          absl::StrCat("participant ", Name(i), " could not join: ", joins[i].status().message());
      AbortAll(why);
      return absl::Status(joins[i].status().code(), why);
    }
    out.push_back(*std::move(joins[i]));
  }
  return out;
}

void CollectiveRun::StartOne(const StartPlan& plan, size_t i, absl::StatusOr<RankResult>* result,
                             FirstFailure* first) {
  StartRequest s = plan.base;
  s.rank = plan.offset[i];
  *result = calls_.Start(r_.participants[i], s, Left(clock_, deadline_) + kGrace);
  if (result->ok() || !first->Claim(i)) return;
  AbortAll(absl::StrCat("participant ", Name(i), " failed: ", result->status().message()));
}

absl::StatusOr<std::vector<RankResult>> CollectiveRun::Start(const StartPlan& plan) {
  std::vector<absl::StatusOr<RankResult>> results(n_, absl::UnknownError("not started"));
  FirstFailure first;
  ForEach(n_, [&](size_t i) { StartOne(plan, i, &results[i], &first); });
  if (const std::optional<size_t> failed = first.index()) {
    const size_t culprit = Culprit(results, *failed);
    std::string others;
    for (size_t i = 0; i < n_; ++i) {
      if (i == culprit || results[i].ok()) continue;
      absl::StrAppend(&others, others.empty() ? "; then " : ", ", "rank ", i, " ",
                      absl::StatusCodeToString(results[i].status().code()));
    }
    return absl::AbortedError(
        absl::StrCat("collective aborted on every participant: ", Name(culprit),
                     " failed: ", results[culprit].status().message(), others));
  }
  std::vector<RankResult> out;
  out.reserve(results.size());
  for (auto& res : results) out.push_back(*std::move(res));
  return out;
}

}  // namespace

absl::StatusOr<Result> RunCollective(const RunRequest& in, const CollectiveLimits& limits,
                                     ParticipantCalls& calls, const common::Clock& clock) {
  auto normalized = Normalize(in, limits);
  if (!normalized.ok()) return normalized.status();
  const RunRequest& r = *normalized;
  const auto start = clock.Now();
  CollectiveRun run(r, calls, clock, start + std::chrono::milliseconds(r.deadline_ms));
  auto joins = run.Join();
  if (!joins.ok()) return joins.status();
  const StartPlan plan = PlanStart(run.session(), *joins);
  auto results = run.Start(plan);
  if (!results.ok()) return results.status();
  Result out = Tabulate(r, *joins, *std::move(results), plan.base.nranks);
  out.elapsed_seconds = std::chrono::duration<double>(clock.Now() - start).count();
  return out;
}

}  // namespace efawatch::collective
