// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "lib/common/collector.h"
#include "probes/collective/participant.h"

namespace efawatch::collective {

/// Exports whether this node's one collective slot is held (joined or running): an on-call who
/// sees a probe refused as busy, or a node slower than usual, can tell a collective is running
/// on it. Reads one flag under the participant's lock; never blocks a scrape for long.
class CollectiveCollector final : public common::Collector {
 public:
  explicit CollectiveCollector(const Participant& participant) : participant_(participant) {}
  std::string_view Name() const override { return "collective"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  const Participant& participant_;
};

}  // namespace efawatch::collective
