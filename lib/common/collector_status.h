// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace efawatch::common {

/// The outcome of a collector's latest run, as GetNodeHealth shows it.
struct CollectorState {
  std::string name;
  bool ok = false;
  std::string last_error = "never run";
  std::chrono::system_clock::time_point last_run{};
  double last_duration_seconds = 0;
};

/// Latest state per collector. Thread-safe; cheap to read.
class CollectorStatusBoard {
 public:
  void Register(const std::string& name);
  void Record(const std::string& name, const absl::Status& status,
              std::chrono::system_clock::time_point when, double duration_seconds);
  std::vector<CollectorState> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, CollectorState> states_;
};

}  // namespace efawatch::common
