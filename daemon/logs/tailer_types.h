// SPDX-License-Identifier: Apache-2.0
// The vocabulary the tailer and its modules share: where lines go (LineSink), what the tailer is
// told (TailerOptions) and what it counts (TailerCounters). A header of its own so the modules
// (scanner, follower, byte reader, checkpoint store) need not include the coordinator, which
// includes them. Callers include tailer.h, which includes this.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/logs/pod_volumes.h"
#include "daemon/logs/source.h"

namespace efawatch::logs {

/// Receives the lines the tailer reads. Called only from the tailer's thread, in order per
/// source. Checkpoint() and Restore() let the sink persist its own cumulative state (counts,
/// verdicts) in the same atomic state file as the offsets, so a restarted agent counts every
/// line exactly once.
class LineSink {
 public:
  virtual ~LineSink() = default;
  /// One complete line, without its newline. `line_no` counts lines of the source's stream,
  /// across rotations.
  virtual void OnLine(const LogSource& source, uint64_t line_no, std::string_view line) = 0;
  /// `count` >= 1 consecutive complete lines, numbered from `first_line_no`, each ended by '\n'
  /// (the block's last byte is one). The tailer hands over whole runs of lines read at once
  /// this way, so a sink can look at a block instead of at every line; the default calls
  /// OnLine() for each line.
  virtual void OnLines(const LogSource& source, uint64_t first_line_no, uint64_t count,
                       std::string_view block);
  /// The source's file and directory are gone (pod deleted).
  virtual void OnSourceGone(const LogSource& source) = 0;
  /// After each pass over all files: a good moment to publish what the lines changed.
  virtual void OnPassComplete() {}
  /// When the sink next needs a pass though no line comes (a gone pod's grace period ends),
  /// if ever: the tailer's wait ends then instead of at its next fallback walk.
  virtual std::optional<std::chrono::steady_clock::time_point> NextDue() const {
    return std::nullopt;
  }
  virtual std::string Checkpoint() const { return {}; }
  /// False when `state` (what Checkpoint() returned before) has not the shape this sink writes:
  /// the tailer then sets the whole checkpoint aside instead of restoring any of it.
  virtual bool CheckpointValid(std::string_view /*state*/) const { return true; }
  virtual void Restore(std::string_view /*state*/) {}
};

struct TailerOptions {
  std::filesystem::path pod_log_root;  // Kubernetes CRI logs
  /// Follow the container logs under pod_log_root (off for a tailer of other files, which
  /// still names pods from its directories).
  bool container_logs = true;
  std::filesystem::path state_file;  // checkpoint; empty: none
  /// Further files by glob(3) pattern: NCCL_DEBUG_FILE outputs on a hostPath (nccl.%h.%p) are
  /// plain; docker json-file logs (<id>-json.log) are recognised by name. Symlinks are refused.
  std::vector<std::string> globs;
  /// Files in pod volumes (Ray session logs, NCCL_DEBUG_FILE outputs); volume_root empty: off.
  /// Its pod_log_root is this one's.
  PodVolumeOptions volumes;
  size_t max_files = 4096;  // beyond this, files are counted and not watched
  /// Files followed per glob pattern, the most recently written (a hostPath of NCCL_DEBUG_FILE
  /// outputs keeps every job's files): the rest are counted, and leave max_files to pod logs.
  size_t max_glob_files = 1024;
  size_t max_line_bytes = 64 * 1024;  // longer lines are cut here (and counted)
  size_t read_chunk_bytes = 1 << 20;  // per file per pass, for fairness between files
  /// Without inotify (none left, or a file system without it): rescan and read every
  /// poll_interval. With inotify, which reports writes, new and removed files within
  /// milliseconds, the same fallback pass (for what inotify cannot see: a root that does not
  /// exist yet, an overflowed queue) runs every rescan_interval: an idle agent then wakes once
  /// in ten seconds per tailer instead of every second.
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds rescan_interval{10000};
  std::chrono::milliseconds checkpoint_interval{5000};
  /// On first sight of a container log (no checkpoint entry: a fresh agent, or its state lost),
  /// the current run's rotated files (`N.log.<time>`, `N.log.<time>.gz`) are read first, oldest
  /// first, up to this many bytes (uncompressed) per container: a job that has run for hours
  /// printed its NCCL init lines long before, and kubelet has rotated them away. 0: off.
  uint64_t history_bytes = 64ull << 20;
  /// Bytes a second all files together are read at, at most, while any has a backlog (0: no
  /// bound). Tenants control the files in their pod volumes: a flooding writer or a huge file
  /// must not take the agent's CPU (the DaemonSet's limit is one core). 32 MiB/s is a few
  /// percent of a core for the tailer and the analysis (bench/tenant_cost.sh).
  uint64_t read_budget_bytes_per_second = 32ull << 20;
  /// A file first seen larger than this is read at its head and its tail only (NCCL's init
  /// lines come first; what happens now comes last); the middle is skipped, counted.
  uint64_t first_read_max_bytes = 256ull << 20;
  uint64_t head_bytes = 16ull << 20;  // of such a file, and of a backlog skipped forward
  uint64_t tail_bytes = 16ull << 20;
  /// A file whose unread bytes grow past this (written faster than the budget reads) skips
  /// forward to its last tail_bytes, counted.
  uint64_t max_backlog_bytes = 256ull << 20;
};

/// The tailer's own health, for metrics. Cumulative since start (or since restore).
struct TailerCounters {
  std::atomic<uint64_t> files_watched{0};
  std::atomic<uint64_t> bytes_read{0};
  std::atomic<uint64_t> lines_read{0};
  std::atomic<uint64_t> rotations{0};
  std::atomic<uint64_t> truncations{0};
  std::atomic<uint64_t> checkpoint_writes{0};
  /// Checkpoints due but not written: nothing changed since the last one written (an idle
  /// agent does not rewrite and fsync the same state every few seconds).
  std::atomic<uint64_t> checkpoints_unchanged{0};
  std::atomic<uint64_t> checkpoint_write_failures{0};  // state dir full, read-only, gone
  std::atomic<uint64_t> files_refused{0};  // symlinks out of the root or a pod's volume, unreadable
  std::atomic<uint64_t> files_over_cap{0};         // not watched because of max_files
  std::atomic<uint64_t> lines_truncated{0};        // longer than max_line_bytes
  std::atomic<uint64_t> checkpoints_set_aside{0};  // unreadable or of the wrong shape (.bad)
  std::atomic<uint64_t> deleted_files_closed{0};   // unlinked files released once drained
  std::atomic<uint64_t> history_files_read{0};     // rotated files read on first sight
  /// Walks of the pod log root, globs and pod volumes, and the CPU time they took
  /// (ScanSchedule).
  std::atomic<uint64_t> scans{0};
  std::atomic<uint64_t> scan_nanoseconds{0};
  /// Bytes not read, by why: a backlog beyond the budget, a hole of a sparse file, the middle
  /// of a file first seen huge, a file that is not text.
  std::atomic<uint64_t> skipped_budget{0};
  std::atomic<uint64_t> skipped_hole{0};
  std::atomic<uint64_t> skipped_oversized{0};
  std::atomic<uint64_t> skipped_binary{0};
  /// Exceptions caught by the thread's last-resort handler (a bug: the pass is skipped, the
  /// agent goes on serving).
  std::atomic<uint64_t> internal_errors{0};
};

}  // namespace efawatch::logs
