// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
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
/// RESOURCE_EXHAUSTED). Join builds the backend (JoinAsync on the participant's own thread, since
/// opening a backend calls into libfabric), Start runs it on its own jthread, Abort (or the
/// session's deadline, or the Start caller's) ends it. Thread-safe.
///
/// `clock` measures session deadlines; it must outlive the Participant. The backends poll the
/// real steady clock, so they get the time left by `clock` as a deadline on that one.
class Participant {
 public:
  using Done = std::function<void(absl::StatusOr<RankResult>)>;

  Participant(std::string node_name, CollectiveLimits limits, BackendFactory host,
              BackendFactory nccl, const common::Clock& clock);
  ~Participant();

  using JoinDone = std::function<void(absl::StatusOr<JoinResponse>)>;

  /// Blocks while the backend opens (a fi_getinfo and more: not on a thread others share).
  absl::StatusOr<JoinResponse> Join(const JoinRequest& request);
  /// Join without blocking: the node is claimed (or refused, `done` inline) at once and the
  /// backend opened on the participant's join thread, which runs `done`. Bounded: the node's one
  /// claim means at most one backend opens at a time.
  void JoinAsync(const JoinRequest& request, JoinDone done);
  /// `done` runs once, on the session's thread (or inline when the start itself fails).
  /// `cancel` aborts the session as Abort() does; `deadline` (on `clock`) shortens the session's.
  void Start(const StartRequest& request, Done done, std::stop_token cancel = {},
             std::chrono::steady_clock::time_point deadline =
                 std::chrono::steady_clock::time_point::max());
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
  void Run(std::shared_ptr<Session> s, const StartRequest& start, const Done& done,
           const std::stop_token& cancel);
  // Claims the node for `request` (the session's fields but its backend), or says why not.
  absl::StatusOr<std::shared_ptr<Session>> Claim(const JoinRequest& request,
                                                 const BackendFactory** make);
  // Opens the claimed session's backend; the claim is dropped when that fails.
  absl::StatusOr<JoinResponse> Open(const std::shared_ptr<Session>& s, const BackendFactory& make);
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
  std::jthread joiner_;               // guarded by mu_; the latest JoinAsync's
  bool stopped_ = false;              // guarded by mu_
};

}  // namespace efawatch::collective
