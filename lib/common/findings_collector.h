// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "lib/common/collector.h"
#include "lib/common/findings_board.h"

namespace efawatch::common {

/// Exports the current findings as efawatch_findings{kind,severity} counts, so an alert can
/// fire on any finding without knowing which module raised it.
class FindingsCollector final : public Collector {
 public:
  explicit FindingsCollector(const FindingsBoard& board) : board_(board) {}
  std::string_view Name() const override { return "findings"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline, MetricSink& sink) override;

 private:
  const FindingsBoard& board_;
};

}  // namespace efawatch::common
