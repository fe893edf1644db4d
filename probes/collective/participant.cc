// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/participant.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace efawatch::collective {
namespace {

// The backends poll the real steady clock (as a condition variable waits on it), so a deadline
// of `clock`, which may be a test's, means nothing to them: they get the time left by `clock`,
// from now on the real one.
std::chrono::steady_clock::time_point BackendDeadline(
    const common::Clock& clock, std::chrono::steady_clock::time_point deadline) {
  return std::chrono::steady_clock::now() + (deadline - clock.Now());
}

}  // namespace

absl::Status ValidateJoin(const JoinRequest& j, const CollectiveLimits& limits) {
  const OpInfo* op = FindOp(j.op);
  if (op == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("op must be one of ", OpNames()));
  }
  if (j.backend != Backend::kHost && j.backend != Backend::kNccl) {
    return absl::InvalidArgumentError("backend must be host or nccl");
  }
  if (j.backend == Backend::kHost && !op->host) {
    return absl::InvalidArgumentError(
        absl::StrCat("the host backend runs all_reduce, all_gather and reduce_scatter, not ",
                     std::string(op->name)));
  }
  if (j.nranks == 0 || j.nranks > limits.max_participants || j.rank >= j.nranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", j.rank, " of ", j.nranks,
                     ": need 0 <= rank < nranks <= ", limits.max_participants));
  }
  if (j.sizes.empty() || static_cast<size_t>(j.sizes.size()) > limits.max_sizes) {
    return absl::InvalidArgumentError(absl::StrCat("give 1 to ", limits.max_sizes, " sizes"));
  }
  const uint64_t max = j.backend == Backend::kHost ? limits.max_host_size : limits.max_nccl_size;
  for (uint64_t s : j.sizes) {
    if (s == 0 || s > max) {
      return absl::InvalidArgumentError(
          absl::StrCat("size ", s, " out of range: 1 to ", max, " bytes for this backend"));
    }
  }
  if (j.iters == 0 || j.iters > limits.max_iters || j.warmup > limits.max_warmup) {
    return absl::InvalidArgumentError(
        absl::StrCat("iters must be 1 to ", limits.max_iters, ", warmup 0 to ", limits.max_warmup));
  }
  if (j.deadline_ms == 0 || j.deadline_ms > limits.max_deadline.count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadline must be 1 to ", limits.max_deadline.count(), " ms"));
  }
  return absl::OkStatus();
}

Participant::Participant(std::string node_name, CollectiveLimits limits, BackendFactory host,
                         BackendFactory nccl, const common::Clock& clock)
    : node_name_(std::move(node_name)),
      limits_(limits),
      host_(std::move(host)),
      nccl_(std::move(nccl)),
      clock_(clock) {}

Participant::~Participant() { Stop(); }

// A coordinator joins its participants one after the other, each in about a second (a backend
// opens one endpoint; NCCL also initializes CUDA), then starts them all: a minute covers dozens
// of participants, and bounds how long a join without a start holds the node's one slot.
constexpr std::chrono::seconds kStartGrace{60};

bool Participant::busy() const {
  std::lock_guard lock(mu_);
  return session_ != nullptr;
}

bool Participant::running() const {
  std::lock_guard lock(mu_);
  return session_ != nullptr && session_->started;
}

void Participant::ReclaimExpiredLocked() {
  if (session_ && !session_->started && clock_.Now() >= session_->start_by) {
    session_.reset();
  }
}

absl::StatusOr<std::shared_ptr<Participant::Session>> Participant::Claim(
    const JoinRequest& request, const BackendFactory** make) {
  if (auto st = ValidateJoin(request, limits_); !st.ok()) return st;
  if (request.session.empty()) return absl::InvalidArgumentError("session is empty");
  *make = request.backend == Backend::kNccl ? &nccl_ : &host_;
  if (!**make) {
    return absl::FailedPreconditionError(
        "this agent was built without CUDA/NCCL: the nccl backend is not available here");
  }
  std::lock_guard lock(mu_);
  if (stopped_) return absl::UnavailableError("the agent is stopping");
  ReclaimExpiredLocked();
  if (session_) {
    // The running session's id is not named: with it, any caller allowed to join could abort
    // someone else's collective.
    return absl::ResourceExhaustedError(absl::StrCat(
        "node ", node_name_, " is already in another collective: one at a time per node"));
  }
  // Claim the node before the (slow) backend setup, so two joins cannot both pass.
  session_ = std::make_shared<Session>();
  session_->join = request;
  session_->deadline = clock_.Now() + std::chrono::milliseconds(request.deadline_ms);
  session_->start_by = std::min(session_->deadline, clock_.Now() + kStartGrace);
  return session_;
}

absl::StatusOr<JoinResponse> Participant::Open(const std::shared_ptr<Session>& s,
                                               const BackendFactory& make) {
  auto backend = make(s->join);
  std::lock_guard lock(mu_);
  // An Abort (or the reclaim) may have ended the claim while the backend opened; the node may
  // even be claimed by another session now, which is not this one's to touch.
  if (session_ != s) {
    return absl::AbortedError(
        absl::StrCat("collective ", s->join.session, " ended while its backend opened"));
  }
  if (!backend.ok()) {
    session_.reset();
    return backend.status();
  }
  s->backend = *std::move(backend);
  JoinResponse out;
  s->backend->Describe(&out);
  out.node_name = node_name_;
  return out;
}

absl::StatusOr<JoinResponse> Participant::Join(const JoinRequest& request) {
  const BackendFactory* make = nullptr;
  auto s = Claim(request, &make);
  if (!s.ok()) return s.status();
  return Open(*s, *make);
}

void Participant::JoinAsync(const JoinRequest& request, JoinDone done) {
  const BackendFactory* make = nullptr;
  auto s = Claim(request, &make);
  if (!s.ok()) return done(s.status());
  std::jthread previous;
  {
    std::lock_guard lock(mu_);
    // The previous join thread has answered (its claim ended, or this one could not be made);
    // it is joined below, outside the lock it may still be leaving.
    previous = std::move(joiner_);
    joiner_ = std::jthread(
        [this, s = *std::move(s), make, done = std::move(done)] { done(Open(s, *make)); });
  }
  if (previous.joinable()) previous.join();
}

void Participant::Start(const StartRequest& request, Done done, std::stop_token cancel,
                        std::chrono::steady_clock::time_point deadline) {
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(mu_);
    if (!session_ || session_->join.session != request.session || !session_->backend) {
      done(absl::FailedPreconditionError(
          absl::StrCat("no joined collective ", request.session, " on ", node_name_)));
      return;
    }
    if (session_->started) {
      done(absl::FailedPreconditionError("collective already started"));
      return;
    }
    session_->started = true;
    session_->deadline = std::min(session_->deadline, deadline);
    s = session_;
    if (worker_.joinable()) worker_.join();  // the previous session's thread, finished
    // The session's own stop source aborts it; the thread's token is not needed.
    worker_ = std::jthread(
        [this, s, request, done = std::move(done), cancel = std::move(cancel)]() mutable {
          Run(std::move(s), request, done, cancel);
        });
  }
}

void Participant::Run(std::shared_ptr<Session> s, const StartRequest& start, const Done& done,
                      const std::stop_token& cancel) {
  // The Start caller giving up (its coordinator went away) aborts the session.
  const std::stop_callback on_cancel(cancel, [&s] { s->stop.request_stop(); });
  const std::stop_token stop = s->stop.get_token();
  const auto deadline = BackendDeadline(clock_, s->deadline);
  absl::StatusOr<RankResult> result = [&]() -> absl::StatusOr<RankResult> {
    if (auto st = s->backend->Connect(start, stop, deadline); !st.ok()) return st;
    const OpInfo* op = FindOp(s->join.op);
    RankResult r;
    r.rank = s->join.rank;
    r.node_name = node_name_;
    for (uint64_t size : s->join.sizes) {
      auto t = s->backend->Run(*op, size, s->join.warmup, s->join.iters, stop, deadline);
      if (!t.ok()) return t.status();
      r.timings.push_back(*t);
    }
    s->backend->Observe(&r);
    return r;
  }();
  // End the session before answering, so the coordinator may start the next one at once.
  {
    std::lock_guard lock(mu_);
    if (session_ == s) session_.reset();
  }
  // Answer first: tearing a failed backend down may wait for its leftover operations.
  done(std::move(result));
  s->backend.reset();
}

void Participant::Abort(const std::string& session) {
  std::lock_guard lock(mu_);
  if (!session_ || session_->join.session != session) return;
  session_->stop.request_stop();
  // Not started: nothing runs, the session just ends.
  if (!session_->started) session_.reset();
}

void Participant::Stop() {
  std::jthread w;
  std::jthread j;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    if (session_) session_->stop.request_stop();
    w = std::move(worker_);
    j = std::move(joiner_);
  }
  if (w.joinable()) w.join();
  if (j.joinable()) j.join();  // a backend that is opening: bounded (one fi_getinfo and setup)
}

}  // namespace efawatch::collective
