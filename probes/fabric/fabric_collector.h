// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "lib/common/collector.h"
#include "probes/fabric/fabric_service.h"

namespace efawatch::fabric {

/// Exports the fabric service's state at scrape time: the provider the responder opened, its
/// message counters, and the latest probe results per peer (bounded by the service's peer table).
/// Reads only in-memory snapshots, so it never blocks a scrape.
class FabricCollector final : public common::Collector {
 public:
  explicit FabricCollector(const FabricService& service) : service_(service) {}
  std::string_view Name() const override { return "fabric"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  const FabricService& service_;
};

}  // namespace efawatch::fabric
