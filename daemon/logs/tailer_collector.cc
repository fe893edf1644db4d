// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/tailer_collector.h"

namespace efawatch::logs {

absl::Status TailerCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                      common::MetricSink& sink) {
  const TailerCounters& c = counters_;
  sink.Add(metrics::M::kLogsFilesWatched, {}, static_cast<double>(c.files_watched));
  sink.Add(metrics::M::kLogsReadBytesTotal, {}, static_cast<double>(c.bytes_read));
  sink.Add(metrics::M::kLogsReadLinesTotal, {}, static_cast<double>(c.lines_read));
  sink.Add(metrics::M::kLogsRotationsTotal, {}, static_cast<double>(c.rotations));
  sink.Add(metrics::M::kLogsTruncationsTotal, {}, static_cast<double>(c.truncations));
  sink.Add(metrics::M::kLogsCheckpointWritesTotal, {}, static_cast<double>(c.checkpoint_writes));
  sink.Add(metrics::M::kLogsCheckpointsUnchangedTotal, {},
           static_cast<double>(c.checkpoints_unchanged));
  sink.Add(metrics::M::kLogsCheckpointWriteFailuresTotal, {},
           static_cast<double>(c.checkpoint_write_failures));
  sink.Add(metrics::M::kLogsFilesRefusedTotal, {}, static_cast<double>(c.files_refused));
  sink.Add(metrics::M::kLogsFilesOverCapTotal, {}, static_cast<double>(c.files_over_cap));
  sink.Add(metrics::M::kLogsTruncatedLinesTotal, {}, static_cast<double>(c.lines_truncated));
  sink.Add(metrics::M::kLogsScansTotal, {}, static_cast<double>(c.scans));
  sink.Add(metrics::M::kLogsScanSecondsTotal, {}, static_cast<double>(c.scan_nanoseconds) / 1e9);
  sink.Add(metrics::M::kLogsCheckpointsSetAsideTotal, {},
           static_cast<double>(c.checkpoints_set_aside));
  sink.Add(metrics::M::kLogsDeletedFilesClosedTotal, {},
           static_cast<double>(c.deleted_files_closed));
  common::AddCounters(sink, metrics::M::kLogsSkippedBytesTotal, "reason",
                      {{"budget", &c.skipped_budget},
                       {"hole", &c.skipped_hole},
                       {"oversized", &c.skipped_oversized},
                       {"binary", &c.skipped_binary}});
  sink.Add(metrics::M::kInternalErrorsTotal, {{"component", "logs"}},
           static_cast<double>(c.internal_errors));
  return absl::OkStatus();
}

}  // namespace efawatch::logs
