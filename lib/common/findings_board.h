// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/common/clock.h"
#include "lib/common/finding.h"

namespace efawatch::common {

/// The node's current findings, published by each module (the "owner") as a whole set.
/// Publishing a set replaces the owner's previous one, so a condition that is gone clears itself
/// (node-problem-detector users ask for exactly that). first_seen survives republishing for the
/// same (owner, kind, subject).
///
/// Thread-safe. Readers get an immutable snapshot and never wait on a publisher's I/O.
class FindingsBoard {
 public:
  explicit FindingsBoard(const Clock& clock) : clock_(clock) {}

  /// Replaces every finding previously published by `owner` with `findings`.
  void Publish(const std::string& owner, std::vector<Finding> findings);

  /// All current findings, most severe first.
  std::shared_ptr<const std::vector<Finding>> Snapshot() const;

  using Listener = std::function<void(std::shared_ptr<const std::vector<Finding>>)>;
  /// Calls `listener` with the new snapshot after every Publish, on the publisher's thread. A
  /// listener must not block (queue and return) and must not call Subscribe or Unsubscribe.
  int Subscribe(Listener listener);
  /// After this returns the listener is not running and will not be called again.
  void Unsubscribe(int id);

 private:
  void PublishLocked(const std::string& owner, std::vector<Finding> findings,
                     std::chrono::system_clock::time_point now);
  void RebuildLocked();

  const Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<Finding>> by_owner_;
  std::shared_ptr<const std::vector<Finding>> snapshot_ = std::make_shared<std::vector<Finding>>();

  // Separate from mu_ so listeners can read Snapshot(); held while listeners run so Unsubscribe
  // can promise that none is running.
  std::mutex listeners_mu_;
  std::map<int, Listener> listeners_;
  int next_id_ = 1;
};

}  // namespace efawatch::common
