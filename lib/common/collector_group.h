// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/common/collector.h"

namespace efawatch::common {

/// Several collectors reported as one (one efawatch_collector_success{collector=name}): modules
/// split by job that operators know as one subsystem (the pod logs: their verdicts and the
/// tailer). Every member runs; the first failure is the group's. The members outlive the group;
/// calls are serialized by the caller, as for any collector.
class CollectorGroup final : public Collector {
 public:
  CollectorGroup(std::string name, std::vector<Collector*> members)
      : name_(std::move(name)), members_(std::move(members)) {}
  std::string_view Name() const override { return name_; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline, MetricSink& sink) override {
    absl::Status first = absl::OkStatus();
    for (Collector* c : members_) {
      absl::Status st = c->Collect(deadline, sink);
      if (first.ok()) first = std::move(st);
    }
    return first;
  }

 private:
  const std::string name_;
  const std::vector<Collector*> members_;
};

}  // namespace efawatch::common
