// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <ostream>
#include <string>
#include <vector>

// `efawatch analyze` on NCCL Inspector files: a table like nccl-tests' per collective and message
// size, with the bus bandwidth's median and 10th percentile, and its share of what the instance
// type's network should give.
namespace efawatch::cli {

/// True when `path` is an Inspector file: its first line a JSON record of the Inspector, or a
/// Prometheus-mode file (nccl_inspector_metrics_*.prom). "-" (stdin) never is.
bool IsInspectorFile(const std::string& path);

/// Reads `files` (all Inspector files) and prints the table (`format` text or json) to `out`.
/// `instance_type` (may be empty) adds the share of its expected bandwidth. Returns 0, or 2 with
/// a line on `err` when a file cannot be read.
int RunInspectorTable(const std::vector<std::string>& files, const std::string& format,
                      const std::string& instance_type, std::ostream& out, std::ostream& err);

}  // namespace efawatch::cli
