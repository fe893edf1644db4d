#pragma once

#include <chrono>
#include <stop_token>
#include <string>

#include "absl/status/statusor.h"
#include "efawatch/v1/agent.pb.h"
#include "probes/collective/participant.h"

namespace efawatch::collective {

/// How the coordinator reaches participants (gRPC in the agent: daemon/rpc/peer_client). Calls
/// block until answered or `timeout`.
class ParticipantCalls {
 public:
  virtual ~ParticipantCalls() = default;
  virtual absl::StatusOr<v1::JoinCollectiveResponse> Join(const std::string& agent,
                                                          const v1::JoinCollectiveRequest& r,
                                                          std::chrono::milliseconds timeout) = 0;
  virtual absl::StatusOr<v1::RankResult> Start(const std::string& agent,
                                               const v1::StartCollectiveRequest& r,
                                               std::chrono::milliseconds timeout) = 0;
  virtual void Abort(const std::string& agent, const v1::AbortCollectiveRequest& r,
                     std::chrono::milliseconds timeout) = 0;
};

/// Fills defaults (host backend, 1M/4M/16M, 2 warm-up, 10 iterations, 60 s) and rounds sizes to
/// whole elements per rank; INVALID_ARGUMENT with a message for anything the limits refuse.
absl::StatusOr<v1::RunCollectiveRequest> Normalize(v1::RunCollectiveRequest r,
                                                   const CollectiveLimits& limits);

/// Runs one collective: joins every participant in parallel (rank = position), starts them all,
/// gathers per-rank timings into nccl-tests' rows (time = mean over ranks, algbw = S / time,
/// busbw = algbw x the op's factor). The first participant to fail aborts all the others; the
/// answer is then ABORTED (or the join's error) naming it, within the deadline.
absl::StatusOr<v1::CollectiveResult> RunCollective(const v1::RunCollectiveRequest& request,
                                                   const CollectiveLimits& limits,
                                                   ParticipantCalls& calls);

}  // namespace efawatch::collective
