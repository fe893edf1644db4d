// SPDX-License-Identifier: Apache-2.0
#include "lib/common/findings_board.h"

#include <algorithm>
#include <tuple>

namespace efawatch::common {

void FindingsBoard::Publish(const std::string& owner, std::vector<Finding> findings) {
  const auto now = clock_.WallNow();
  // listeners_mu_ first and for the whole call: publishes are serialized, so listeners see
  // snapshots in order. Listeners may call Snapshot(), which takes only mu_.
  std::lock_guard listeners_lock(listeners_mu_);
  std::shared_ptr<const std::vector<Finding>> snapshot;
  {
    std::lock_guard lock(mu_);
    PublishLocked(owner, std::move(findings), now);
    snapshot = snapshot_;
  }
  for (auto& [id, listener] : listeners_) listener(snapshot);
}

int FindingsBoard::Subscribe(Listener listener) {
  std::lock_guard lock(listeners_mu_);
  listeners_[next_id_] = std::move(listener);
  return next_id_++;
}

void FindingsBoard::Unsubscribe(int id) {
  std::lock_guard lock(listeners_mu_);
  listeners_.erase(id);
}

void FindingsBoard::PublishLocked(const std::string& owner, std::vector<Finding> findings,
                                  std::chrono::system_clock::time_point now) {
  auto& previous = by_owner_[owner];
  for (auto& f : findings) {
    f.last_seen = now;
    auto it = std::find_if(previous.begin(), previous.end(), [&](const Finding& p) {
      return p.kind == f.kind && p.subject == f.subject;
    });
    f.first_seen = it != previous.end() ? it->first_seen : now;
  }
  previous = std::move(findings);
  RebuildLocked();
}

std::shared_ptr<const std::vector<Finding>> FindingsBoard::Snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

void FindingsBoard::RebuildLocked() {
  auto all = std::make_shared<std::vector<Finding>>();
  for (const auto& [owner, list] : by_owner_) all->insert(all->end(), list.begin(), list.end());
  std::stable_sort(all->begin(), all->end(), [](const Finding& a, const Finding& b) {
    return std::tie(b.severity, a.kind, a.subject) < std::tie(a.severity, b.kind, b.subject);
  });
  snapshot_ = std::move(all);
}

}  // namespace efawatch::common
