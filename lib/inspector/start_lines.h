// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace efawatch::inspector {

/// What the NCCL Inspector said about itself when it loaded. Every release since 2.28 prints, at
/// NCCL's VERSION level (so with no host:pid prefix, under any NCCL_DEBUG of VERSION or more):
///   NCCL Inspector Plugin - Version: <git describe>
///   NCCL Inspector Environment Variables:
///     NCCL_INSPECTOR_ENABLE = 1
///     NCCL_INSPECTOR_DUMP_DIR = (not set), default=(auto-generated)
/// The defaults are the plugin's own (the interval's was 0 in 2.28-2.29 and is -1 from 2.30), so
/// what it printed is what it does. A plain value type; not thread-safe.
struct InspectorStart {
  bool loaded = false;  ///< The version line was seen.
  std::string version;  ///< As printed, cut to 64 bytes.
  /// Every NCCL_INSPECTOR_* setting printed: the value, or the default where it was not set.
  std::map<std::string, std::string> settings;
  /// The names of the settings that were not set (their value above is the default).
  std::map<std::string, bool> defaulted;

  bool Seen() const { return loaded || !settings.empty(); }
  bool Enabled() const;     ///< NCCL_INSPECTOR_ENABLE is 1.
  bool Prometheus() const;  ///< NCCL_INSPECTOR_PROM_DUMP is 1: textfiles, not JSON Lines.
  /// The dump interval in microseconds as set or defaulted; -1 (written only at teardown) when
  /// it is -1 or cannot be read.
  int64_t IntervalUs() const;
  /// The interval the plugin really uses: Prometheus mode raises 0..30 s to 30 s (2.30+).
  int64_t EffectiveIntervalUs() const;
  /// NCCL_INSPECTOR_DUMP_DIR as set; "" when it was not (the plugin then writes to
  /// nccl-inspector-<job id> below the working directory).
  std::string DumpDir() const;
  /// "JSON Lines" or "Prometheus textfiles".
  std::string_view ModeName() const;
};

/// Prometheus mode's minimum interval (the plugin's MIN_PROM_INTERVAL, 30 s, from 2.30.3).
inline constexpr int64_t kPromMinIntervalUs = 30'000'000;

/// Reads `line` (one log line, in any envelope: CRI, docker json, a kubectl prefix) into `s` when
/// it is one of the Inspector's start lines; false otherwise. Cheap on other lines: one search.
bool FeedStartLine(std::string_view line, InspectorStart* s);

}  // namespace efawatch::inspector
