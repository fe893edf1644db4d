// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <mutex>
#include <thread>

#include "daemon/agent/agent_handler.h"
#include "daemon/agent/call_context.h"
#include "daemon/agent/target_policy.h"
#include "lib/common/clock.h"
#include "probes/collective/coordinator.h"

namespace efawatch::agent {

/// RunCollective on demand: at most one coordination at a time per agent (a second one is
/// RESOURCE_EXHAUSTED), normalized and checked against the limits and its participants against
/// the target policy before any network work, run
/// on its own thread because it waits on its participants for up to the deadline.
/// Thread-safe. Stop() cancels the calls in flight and joins the thread.
class Coordination {
 public:
  Coordination(collective::ParticipantCalls& calls, collective::CollectiveLimits limits,
               const TargetPolicy& policy, const common::Clock& clock)
      : calls_(calls), limits_(limits), policy_(policy), clock_(clock) {}
  ~Coordination() { Stop(); }

  /// The collective's deadline is shortened to the caller's; a call already cancelled or past
  /// its deadline does not start. (A coordination under way is not cancelled with its call: its
  /// participants are released by their own deadline or by Stop().)
  void Run(const CallContext& call, collective::RunRequest request,
           agent::AgentHandler::CollectiveDone done);
  void Stop();

 private:
  collective::ParticipantCalls& calls_;
  const collective::CollectiveLimits limits_;
  const TargetPolicy& policy_;
  const common::Clock& clock_;
  std::mutex mu_;
  bool coordinating_ = false;  // guarded by mu_
  bool stopped_ = false;       // guarded by mu_
  std::jthread thread_;        // guarded by mu_
};

}  // namespace efawatch::agent
