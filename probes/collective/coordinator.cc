#include "probes/collective/coordinator.h"

#include <atomic>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace efawatch::collective {
namespace {

using Clock = std::chrono::steady_clock;
// Time given to Abort calls and to a Start call beyond the deadline (the participant's own
// deadline ends its run; this only covers the answer's trip back).
constexpr auto kGrace = std::chrono::milliseconds(2000);

std::string NewSession() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return absl::StrCat(absl::Hex(v, absl::kZeroPad16));
}

std::chrono::milliseconds Left(Clock::time_point deadline) {
  return std::max(std::chrono::milliseconds(1),
                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
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

absl::StatusOr<Result> RunCollective(const RunRequest& in, const CollectiveLimits& limits,
                                     ParticipantCalls& calls) {
  auto normalized = Normalize(in, limits);
  if (!normalized.ok()) return normalized.status();
  const RunRequest& r = *normalized;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(r.deadline_ms);
  const size_t n = r.participants.size();
  const std::string session = NewSession();
  auto name = [&](size_t i) { return absl::StrCat(r.participants[i], " (rank ", i, ")"); };

  // Join.
  std::vector<absl::StatusOr<JoinResponse>> joins(n, absl::UnknownError("not joined"));
  ForEach(n, [&](size_t i) {
    JoinRequest j;
    j.session = session;
    j.rank = static_cast<uint32_t>(i);
    j.nranks = static_cast<uint32_t>(n);
    j.op = r.op;
    j.sizes = r.sizes;
    j.backend = r.backend;
    j.warmup = r.warmup;
    j.iters = r.iters;
    j.deadline_ms = static_cast<uint32_t>(Left(deadline).count());
    joins[i] = calls.Join(r.participants[i], j, Left(deadline));
  });
  AbortRequest abort;
  abort.session = session;
  auto abort_all = [&](const std::string& reason) {
    abort.reason = reason;
    ForEach(n, [&](size_t i) { calls.Abort(r.participants[i], abort, kGrace); });
  };
  for (size_t i = 0; i < n; ++i) {
    if (!joins[i].ok()) {
      const std::string why =
          absl::StrCat("participant ", name(i), " could not join: ", joins[i].status().message());
      abort_all(why);
      return absl::Status(joins[i].status().code(), why);
    }
  }

  // Start: ranks by position; NCCL agents run one rank per GPU from their offset.
  StartRequest base;
  base.session = session;
  uint32_t nranks = 0;
  std::vector<uint32_t> offset(n);
  for (size_t i = 0; i < n; ++i) {
    offset[i] = nranks;
    nranks += std::max(1u, joins[i]->local_ranks);
    base.fabric_addresses.push_back(joins[i]->fabric_address);
  }
  base.nranks = nranks;
  base.nccl_unique_id = joins[0]->nccl_unique_id;
  std::vector<absl::StatusOr<RankResult>> results(n, absl::UnknownError("not started"));
  std::mutex mu;
  std::optional<size_t> first_failure;
  ForEach(n, [&](size_t i) {
    StartRequest s = base;
    s.rank = offset[i];
    results[i] = calls.Start(r.participants[i], s, Left(deadline) + kGrace);
    if (results[i].ok()) return;
    bool first = false;
    {
      std::lock_guard lock(mu);
      if (!first_failure) {
        first_failure = i;
        first = true;
      }
    }
    // The first failure aborts everyone else at once rather than at the deadline.
    if (first) {
      abort_all(absl::StrCat("participant ", name(i), " failed: ", results[i].status().message()));
    }
  });
  if (first_failure) {
    // Blame the participant that could not be reached at all (its agent died or its network
    // went) before those that only lost it as a ring neighbour or hit the deadline waiting.
    // Then a rank that ran out of time: its neighbours only saw it close its endpoint.
    size_t culprit = *first_failure;
    bool found = false;
    for (absl::StatusCode code :
         {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded}) {
      for (size_t i = 0; i < n && !found; ++i) {
        if (!results[i].ok() && results[i].status().code() == code) {
          culprit = i;
          found = true;
        }
      }
    }
    std::string others;
    for (size_t i = 0; i < n; ++i) {
      if (i == culprit || results[i].ok()) continue;
      absl::StrAppend(&others, others.empty() ? "; then " : ", ", "rank ", i, " ",
                      absl::StatusCodeToString(results[i].status().code()));
    }
    return absl::AbortedError(
        absl::StrCat("collective aborted on every participant: ", name(culprit),
                     " failed: ", results[culprit].status().message(), others));
  }

  // Rows: the mean time over ranks (nccl-tests' default), wrong elements summed.
  const OpInfo* op = FindOp(r.op);
  Result out;
  out.op = r.op;
  out.backend = r.backend;
  out.nranks = nranks;
  out.provider = joins[0]->provider;
  for (size_t i = 0; i < n; ++i) {
    out.nodes.push_back(joins[i]->node_name);
    out.ranks.push_back(*results[i]);
  }
  double busbw_sum = 0;
  for (size_t k = 0; k < r.sizes.size(); ++k) {
    double time_sum = 0;
    uint64_t wrong = 0, size = 0;
    int ranks_with = 0;
    for (const auto& res : results) {
      if (k >= res->timings.size()) continue;
      time_sum += res->timings[k].time_us;
      wrong += res->timings[k].wrong;
      size = res->timings[k].size;
      ++ranks_with;
    }
    if (ranks_with == 0) continue;
    Row* row = &out.rows.emplace_back();
    row->size = size;
    row->count = op->Count(size, nranks);
    row->time_us = time_sum / ranks_with;
    row->algbw_gbps = row->time_us > 0 ? static_cast<double>(size) / (row->time_us * 1e3) : 0;
    row->busbw_gbps = row->algbw_gbps * op->BusFactor(nranks);
    row->wrong = wrong;
    busbw_sum += row->busbw_gbps;
  }
  if (out.rows.size() > 0) out.avg_busbw_gbps = busbw_sum / static_cast<double>(out.rows.size());
  out.elapsed_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace efawatch::collective
