// SPDX-License-Identifier: Apache-2.0
#include "daemon/agent/probe_runner.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace efawatch::agent {
namespace {

// The options as the caller's deadline leaves them at `now`: the probe's deadline shortened to
// it (and a ping's per-message timeout with it, which must stay within the deadline). Sets
// `bounded` when the caller's deadline is the shorter; an error when the caller already left.
template <typename Options>
absl::Status BoundBy(const CallContext& call, std::chrono::steady_clock::time_point now, Options& o,
                     bool& bounded) {
  if (call.cancelled()) return absl::CancelledError("the call was cancelled");
  const std::chrono::milliseconds left = call.Bound(o.deadline, now);
  if (left.count() <= 0) {
    return absl::DeadlineExceededError("the caller's deadline passed before the probe started");
  }
  bounded = left < o.deadline;
  o.deadline = left;
  if constexpr (std::is_same_v<Options, fabric::PingOptions>) {
    o.message_timeout = std::min(o.message_timeout, left);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ProbeRunner::EndedByCaller(const CallContext& call, common::ProbeEnd end,
                                        bool bounded_by_caller) const {
  // The gRPC edge triggers the token when the client's deadline passes as well as when it
  // cancels: the clock tells which.
  const bool past_deadline = call.has_deadline() && clock_.Now() >= call.deadline;
  if (end == common::ProbeEnd::kCancelled && call.cancelled()) {
    return past_deadline ? absl::DeadlineExceededError("the caller's deadline passed")
                         : absl::CancelledError("the call was cancelled");
  }
  if (end == common::ProbeEnd::kDeadlineExceeded && bounded_by_caller) {
    return absl::DeadlineExceededError(
        "the caller's deadline, shorter than the probe's, passed before the probe finished");
  }
  return absl::OkStatus();
}

template <typename Options, typename Run, typename Fail>
void ProbeRunner::Resolve(const CallContext& call, const ProbeTarget& target, Options o, Run run,
                          Fail fail) {
  if (fabric_ == nullptr) {
    return fail(
        absl::FailedPreconditionError("this agent has no fabric (no provider found at start)"));
  }
  if (target.peer_agent.empty() && target.peer_address.empty()) {
    return fail(absl::InvalidArgumentError("give peer_agent (host:port) or peer_address"));
  }
  if (absl::Status s = target.peer_address.empty()
                           ? policy_.CheckAgent(target.peer_agent)
                           : policy_.CheckFabricAddress(target.peer_address);
      !s.ok()) {
    return fail(s);
  }
  // Validate before any network work; the peer address is checked by the provider later.
  // The caller's deadline is applied after: it is not the request's fault.
  o.peer = target.peer_address.empty() ? std::string("?") : target.peer_address;
  if (absl::Status s = fabric_->Validate(o); !s.ok()) return fail(s);
  bool bounded = false;
  if (absl::Status s = BoundBy(call, clock_.Now(), o, bounded); !s.ok()) return fail(s);
  if (!target.peer_address.empty()) return run(std::move(o), bounded);
  if (lookups_.fetch_add(1) >= kMaxLookups) {
    lookups_.fetch_sub(1);
    return fail(absl::ResourceExhaustedError(
        absl::StrCat("too many peer lookups in flight (limit ", kMaxLookups, ")")));
  }
  const auto lookup_timeout = std::min(o.deadline, std::chrono::milliseconds(5000));
  lookup_.LookupAsync(
      target.peer_agent, lookup_timeout,
      [this, call, o = std::move(o), run, fail](absl::StatusOr<std::string> addr) mutable {
        lookups_.fetch_sub(1);
        if (!addr.ok()) return fail(addr.status());
        o.peer = *std::move(addr);
        // The lookup took some of the time left.
        bool still_bounded = false;
        if (absl::Status s = BoundBy(call, clock_.Now(), o, still_bounded); !s.ok()) {
          return fail(s);
        }
        run(std::move(o), still_bounded);
      });
}

template <typename Options, typename Done, typename Start>
void ProbeRunner::Probe(const CallContext& call, const ProbeTarget& target, Options o, Done done,
                        Start start) {
  auto shared = std::make_shared<Done>(std::move(done));
  Resolve(
      call, target, std::move(o),
      [this, call, shared, start](Options opts, bool bounded) {
        start(std::move(opts), [this, call, shared, bounded](auto r) {
          if (r.ok()) {
            if (absl::Status s = EndedByCaller(call, r->end, bounded); !s.ok()) r = s;
          }
          (*shared)(std::move(r));
        });
      },
      [shared](absl::Status s) { (*shared)(std::move(s)); });
}

void ProbeRunner::Ping(const CallContext& call, const ProbeTarget& target, fabric::PingOptions o,
                       AgentHandler::PingDone done) {
  Probe(call, target, std::move(o), std::move(done), [this, call](auto opts, auto finished) {
    fabric_->StartPing(std::move(opts), std::move(finished), call.cancel);
  });
}

void ProbeRunner::Bandwidth(const CallContext& call, const ProbeTarget& target,
                            fabric::BandwidthOptions o, AgentHandler::BandwidthDone done) {
  Probe(call, target, std::move(o), std::move(done), [this, call](auto opts, auto finished) {
    fabric_->StartBandwidth(std::move(opts), std::move(finished), call.cancel);
  });
}

}  // namespace efawatch::agent
