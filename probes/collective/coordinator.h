// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <stop_token>
#include <string>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "probes/collective/participant.h"

namespace efawatch::collective {

/// How the coordinator reaches participants (gRPC in the agent: daemon/rpc/peer_client). Calls
/// block until answered or `timeout`.
class ParticipantCalls {
 public:
  virtual ~ParticipantCalls() = default;
  virtual absl::StatusOr<JoinResponse> Join(const std::string& agent, const JoinRequest& r,
                                            std::chrono::milliseconds timeout) = 0;
  virtual absl::StatusOr<RankResult> Start(const std::string& agent, const StartRequest& r,
                                           std::chrono::milliseconds timeout) = 0;
  virtual void Abort(const std::string& agent, const AbortRequest& r,
                     std::chrono::milliseconds timeout) = 0;
  /// Cancels every call in flight and fails every later one (agent shutdown).
  virtual void CancelAll() {}
};

/// Fills defaults (host backend, 1M/4M/16M, 2 warm-up, 10 iterations, 60 s) and rounds sizes to
/// whole elements per rank; INVALID_ARGUMENT with a message for anything the limits refuse.
absl::StatusOr<RunRequest> Normalize(RunRequest r, const CollectiveLimits& limits);

/// Runs one collective: joins every participant in parallel (rank = position), starts them all,
/// gathers per-rank timings into nccl-tests' rows (time = mean over ranks, algbw = S / time,
/// busbw = algbw x the op's factor). The first participant to fail aborts all the others; the
/// answer is then ABORTED (or the join's error) naming it, within the deadline. `clock` measures
/// the deadline and the elapsed time; the participants get what is left of it as a duration.
absl::StatusOr<Result> RunCollective(const RunRequest& request, const CollectiveLimits& limits,
                                     ParticipantCalls& calls, const common::Clock& clock);

}  // namespace efawatch::collective
