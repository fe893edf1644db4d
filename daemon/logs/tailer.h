// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "daemon/logs/pod_volumes.h"
#include "daemon/logs/source.h"
#include "lib/common/clock.h"

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

/// Follows every container log under the pod log root: discovers files (CRI layout), reads only
/// new bytes, follows rename-and-create rotation (draining the old file first), copytruncate
/// and deletion, refuses symlinks that leave the root, and checkpoints offsets atomically.
/// inotify wakes it within milliseconds of a write; a periodic rescan covers what inotify
/// misses. Runs on its own std::jthread; Stop() (or the destructor) writes a last checkpoint.
class Tailer {
 public:
  Tailer(TailerOptions options, LineSink* sink, const common::Clock& clock);
  ~Tailer();

  /// Loads the checkpoint (a missing file is a fresh start) and starts the thread.
  absl::Status Start();
  /// Loads the checkpoint, as Start() does first: for tests and fuzzers that drive the tailer
  /// with PollOnce(). Never fails: a checkpoint of the wrong shape is set aside (counted).
  void LoadState() { LoadCheckpoint(); }
  void Stop();

  /// One pass: rescan, read new bytes (at most read_chunk_bytes per file), checkpoint if due.
  /// Returns true when a file has more to read: the thread then runs the next pass at once
  /// instead of waiting for inotify. For tests driving it without the thread; not to be mixed
  /// with Start().
  bool PollOnce();

  const TailerCounters& counters() const { return counters_; }

 private:
  struct Tracked;
  void Run(const std::stop_token& stop);
  /// Returns true when a file had more to read than read_chunk_bytes.
  bool Pass(bool scan);
  /// What one scan found: the paths seen, and the sources to follow, in discovery order.
  struct Discovered {
    std::set<std::string> live;
    std::vector<LogSource> found;
    std::set<std::string> live_dirs;  // directories of followed volume files (see VolumeScan)
  };
  /// Walks the pod log root and the globs, follows new and rotated files, drops gone ones.
  void Scan();
  /// The CRI log files of one container directory.
  void ScanContainerDir(const std::filesystem::path& dir, Discovered& d);
  /// The regular files one glob(3) pattern matches; symlinks are refused.
  void ScanGlob(const std::string& pattern, Discovered& d);
  /// The files of pod volumes (ScanPodVolumes); counts refused symlinks and capped files once.
  void ScanVolumes(Discovered& d);
  /// True when the pod a volume file belongs to is gone (its volume or log directory).
  bool VolumePodGone(const LogSource& src) const;
  /// Starts following `src`, or restarts it after a rename-and-create rotation.
  void Track(const LogSource& src);
  /// Drains the followed files not seen by this scan; forgets those whose source is gone.
  void DropGone(const Discovered& d);
  /// Returns true when it stopped at the read budget, with more to read.
  bool ReadFile(Tracked& t, bool to_eof);
  /// Moves `t` to `to` without reading what lies between (counted in `why`); a line begun
  /// before is dropped.
  void SkipTo(Tracked& t, uint64_t to, std::atomic<uint64_t>& why);
  /// After a read of `n` bytes at `at` that began with a NUL: when `at` is in a hole of a
  /// sparse file, skips to the next data (or the end) and returns true (the read is dropped).
  bool SkipHole(Tracked& t, uint64_t at);
  /// On a file's first bytes: false for one that is not text (left, counted).
  bool LooksLikeText(Tracked& t, std::string_view first);
  void Deliver(Tracked& t, std::string_view data);
  void OpenTracked(const LogSource& src, bool allow_resume);
  /// Reads the rotated files of `t`'s container run, oldest first (TailerOptions::history_bytes),
  /// as the lines before the live file's; `t`'s line numbers continue after them.
  void ReadHistory(Tracked& t);
  /// After a restart that found the checkpointed file rotated to `last_read` and finished it:
  /// reads the run's files rotated after it (all of them), whose lines came before `t`'s.
  void ReadRotatedAfter(Tracked& t, const std::filesystem::path& last_read);
  /// Hands a gzip file's lines to the sink through `t`, at most `budget` uncompressed bytes.
  void ReadGzip(Tracked& t, uint64_t budget);
  void WriteCheckpoint();
  void LoadCheckpoint();
  /// Renames the state file to <state_file>.bad (replacing an older one), counts and logs why.
  void SetCheckpointAside(std::string_view why);
  /// Forgets refused_, over_cap_, truncated_dirs_ and resume_ entries of files whose directory
  /// is gone.
  void PruneSideTables();
  bool InsideRoot(const std::filesystem::path& p) const;
  void WatchDir(const std::filesystem::path& dir);

  const TailerOptions options_;
  LineSink* sink_;
  const common::Clock& clock_;
  TailerCounters counters_;
  std::map<std::string, std::unique_ptr<Tracked>> tracked_;  // by live path
  struct Resume {
    uint64_t dev = 0, ino = 0, offset = 0, line_no = 0;
    std::string tail;  // the bytes just before `offset`, to recognise a rewritten file
  };
  /// Up to kTailBytes bytes of `fd` ending at `offset`.
  static std::string TailAt(int fd, uint64_t offset);
  std::map<std::string, Resume> resume_;  // from the checkpoint, by path
  std::filesystem::path canonical_root_;
  std::chrono::steady_clock::time_point next_checkpoint_{};
  // Hash of the last checkpoint written (0: none yet): an unchanged state is not written again.
  size_t last_checkpoint_hash_ = 0;
  // Set when a file was read to its end and let go (rotation, history): the checkpoint is written
  // at the end of the pass, so a crash cannot lose the counts of lines no file holds any more.
  bool checkpoint_due_ = false;
  int inotify_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: Stop() wakes the thread's wait
  std::map<int, std::filesystem::path> watches_;
  std::set<std::string> watched_;         // directories with an inotify watch
  std::set<std::string> refused_;         // reported once each
  std::set<std::string> over_cap_;        // counted once each
  std::set<std::string> truncated_dirs_;  // directories listed only in part, counted once each
  std::mutex run_mu_;                     // PollOnce vs the thread
  std::jthread thread_;
};

}  // namespace efawatch::logs
