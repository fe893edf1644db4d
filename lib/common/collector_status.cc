// SPDX-License-Identifier: Apache-2.0
#include "lib/common/collector_status.h"

namespace efawatch::common {

void CollectorStatusBoard::Register(const std::string& name) {
  std::lock_guard lock(mu_);
  states_[name].name = name;
}

void CollectorStatusBoard::Record(const std::string& name, const absl::Status& status,
                                  std::chrono::system_clock::time_point when,
                                  double duration_seconds) {
  std::lock_guard lock(mu_);
  auto& s = states_[name];
  s.name = name;
  s.ok = status.ok();
  s.last_error = status.ok() ? "" : std::string(status.message());
  s.last_run = when;
  s.last_duration_seconds = duration_seconds;
}

std::vector<CollectorState> CollectorStatusBoard::Snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<CollectorState> out;
  out.reserve(states_.size());
  for (const auto& [name, s] : states_) out.push_back(s);
  return out;
}

}  // namespace efawatch::common
