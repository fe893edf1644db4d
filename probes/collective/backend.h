// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "absl/status/statusor.h"
#include "probes/collective/ops.h"

namespace efawatch::collective {

/// One session's local ranks on one agent: the host ring (one rank) or NCCL (one rank per GPU).
/// Created at Join, connected and run at Start, destroyed when the session ends. Used from one
/// thread at a time.
class RankBackend {
 public:
  virtual ~RankBackend() = default;
  /// What Join answers: the fabric address (host), the provider, ranks run here, NCCL's id.
  virtual void Describe(JoinResponse* out) const = 0;
  /// Wires the ranks together (host: neighbours' addresses; NCCL: communicator init).
  virtual absl::Status Connect(const StartRequest& start, const std::stop_token& stop,
                               std::chrono::steady_clock::time_point deadline) = 0;
  /// One size: warm-up, timed iterations, data check. Per-rank mean time.
  virtual absl::StatusOr<SizeTiming> Run(const OpInfo& op, uint64_t size, uint32_t warmup,
                                         uint32_t iters, const std::stop_token& stop,
                                         std::chrono::steady_clock::time_point deadline) = 0;
  /// Adds what the backend observed (NCCL: its own log, analyzed) to the rank's result.
  virtual void Observe(RankResult* /*out*/) {}
};

/// Makes a backend for a join request (the NCCL factory exists only in CUDA builds).
using BackendFactory =
    std::function<absl::StatusOr<std::unique_ptr<RankBackend>>(const JoinRequest&)>;

}  // namespace efawatch::collective
