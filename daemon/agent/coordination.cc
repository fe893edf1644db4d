// SPDX-License-Identifier: Apache-2.0
#include "daemon/agent/coordination.h"

namespace efawatch::agent {

void Coordination::Run(const CallContext& call, collective::RunRequest request,
                       agent::AgentHandler::CollectiveDone done) {
  auto normalized = collective::Normalize(std::move(request), limits_);
  if (!normalized.ok()) return done(normalized.status());
  if (call.cancelled()) return done(absl::CancelledError("the call was cancelled"));
  const auto left = call.Bound(std::chrono::milliseconds(normalized->deadline_ms), clock_.Now());
  if (left.count() <= 0) {
    return done(absl::DeadlineExceededError("the caller's deadline passed before the start"));
  }
  normalized->deadline_ms = static_cast<uint32_t>(left.count());
  for (const auto& p : normalized->participants) {
    if (absl::Status s = policy_.CheckAgent(p); !s.ok()) return done(s);
  }
  std::lock_guard lock(mu_);
  if (stopped_) return done(absl::UnavailableError("agent shutting down"));
  if (coordinating_) {
    return done(absl::ResourceExhaustedError("this agent is already coordinating a collective"));
  }
  coordinating_ = true;
  if (thread_.joinable()) thread_.join();  // the previous one, finished
  thread_ = std::jthread([this, r = *std::move(normalized), done = std::move(done)] {
    auto result = collective::RunCollective(r, limits_, calls_, clock_);
    {
      std::lock_guard done_lock(mu_);
      coordinating_ = false;
    }
    done(std::move(result));
  });
}

void Coordination::Stop() {
  calls_.CancelAll();
  std::jthread t;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    t = std::move(thread_);
  }
  if (t.joinable()) t.join();
}

}  // namespace efawatch::agent
