#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/common/clock.h"
#include "daemon/common/finding.h"

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

 private:
  void RebuildLocked();

  const Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<Finding>> by_owner_;
  std::shared_ptr<const std::vector<Finding>> snapshot_ = std::make_shared<std::vector<Finding>>();
};

}  // namespace efawatch::common
