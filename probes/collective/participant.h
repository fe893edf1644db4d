// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "probes/collective/backend.h"

namespace efawatch::collective {

struct CollectiveLimits {
  size_t max_participants = 64;
  size_t max_sizes = 16;
  uint64_t max_host_size = 64ull << 20;  ///< Host memory per rank is about twice this.
  uint64_t max_nccl_size = 1ull << 30;
  uint32_t max_iters = 1000;
  uint32_t max_warmup = 100;
  std::chrono::milliseconds max_deadline{600000};
};

/// INVALID_ARGUMENT with a message when a join asks for what the limits refuse.
absl::Status ValidateJoin(const JoinRequest& j, const CollectiveLimits& limits);

/// This agent's side of a collective: at most one session at a time (a second Join is
/// RESOURCE_EXHAUSTED). Join builds the backend, Start runs it on its own jthread, Abort (or the
/// session's deadline) ends it. Thread-safe.
///
/// `clock` measures session deadlines; it must outlive the Participant. The backends poll the
/// real steady clock, so they get the time left by `clock` as a deadline on that one.
class Participant {
 public:
  using Done = std::function<void(absl::StatusOr<RankResult>)>;

  Participant(std::string node_name, CollectiveLimits limits, BackendFactory host,
              BackendFactory nccl, const common::Clock& clock);
  ~Participant();

  absl::StatusOr<JoinResponse> Join(const JoinRequest& request);
  /// `done` runs once, on the session's thread (or inline when the start itself fails).
  void Start(const StartRequest& request, Done done);
  void Abort(const std::string& session);
  /// Aborts any session and joins its thread.
  void Stop();

  /// The node's one slot is held: a collective joined (and not yet expired) or running.
  bool busy() const;
  /// A collective was started here and has not ended.
  bool running() const;

 private:
  struct Session {
    JoinRequest join;
    std::unique_ptr<RankBackend> backend;
    std::chrono::steady_clock::time_point deadline;  ///< On clock_.
    std::chrono::steady_clock::time_point start_by;  ///< Reclaimed if not started then.
    std::stop_source stop;
    bool started = false;
  };
  void Run(std::shared_ptr<Session> s, const StartRequest& start, const Done& done);
  // Drops a session nobody started before its deadline or the start grace, whichever is first
  // (its coordinator died, or a caller joined only to hold the node). Holds mu_.
  void ReclaimExpiredLocked();

  const std::string node_name_;
  const CollectiveLimits limits_;
  BackendFactory host_;
  BackendFactory nccl_;
  const common::Clock& clock_;
  mutable std::mutex mu_;
  std::shared_ptr<Session> session_;  // guarded by mu_
  std::jthread worker_;               // guarded by mu_
};

}  // namespace efawatch::collective
