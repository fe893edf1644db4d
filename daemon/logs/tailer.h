// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <thread>

#include "absl/status/status.h"
#include "daemon/logs/byte_reader.h"
#include "daemon/logs/checkpoint_store.h"
#include "daemon/logs/dir_watcher.h"
#include "daemon/logs/file_follower.h"
#include "daemon/logs/log_scanner.h"
#include "daemon/logs/scan_schedule.h"
#include "daemon/logs/tailer_types.h"
#include "lib/common/clock.h"

namespace efawatch::logs {

/// Follows every container log under the pod log root: discovers files (CRI layout), reads only
/// new bytes, follows rename-and-create rotation (draining the old file first), copytruncate
/// and deletion, refuses symlinks that leave the root, and checkpoints offsets atomically.
/// inotify wakes it within milliseconds of a write; a periodic rescan covers what inotify
/// misses. Runs on its own std::jthread; Stop() (or the destructor) writes a last checkpoint.
/// The coordinator of its modules: LogScanner (discovery) and DirWatcher (inotify),
/// FileFollower (a file across rotations and restarts), ByteReader (bytes to lines) and
/// CheckpointStore (the state file); it owns the thread, the pass and the wait between passes.
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
  using TimePoint = std::chrono::steady_clock::time_point;
  /// What the wait after a pass needs to know of it.
  struct PassEnd {
    TimePoint start;       // when the pass began
    bool backlog = false;  // a file had more than read_chunk_bytes to read
    TimePoint not_before;  // with a backlog: when the read budget allows the next pass
  };
  void Run(const std::stop_token& stop);
  /// The fallback pass's interval: the poll interval without inotify, else the rescan interval.
  std::chrono::milliseconds FallbackInterval() const;
  /// One pass under the run mutex, walking when `schedule` says so; an exception is counted and
  /// the pass dropped. Returns true when a file had more to read.
  bool GuardedPass(ScanSchedule& schedule);
  /// When the read budget allows the pass after one that began at `start` and read `bytes`.
  TimePoint BudgetEnd(TimePoint start, uint64_t bytes) const;
  /// Sleeps until the next pass is due: inotify reports, a walk or the sink is due, the budget's
  /// wait is over, or Stop().
  void WaitForWork(const std::stop_token& stop, ScanSchedule& schedule,
                   std::chrono::milliseconds interval, const PassEnd& pass);
  /// Returns true when a file had more to read than read_chunk_bytes.
  bool Pass(bool scan);
  /// The scan, timed in the thread's CPU time (counters scans, scan_nanoseconds).
  void TimedScan();
  void WriteCheckpoint();
  void LoadCheckpoint();

  const TailerOptions options_;
  LineSink* sink_;
  const common::Clock& clock_;
  TailerCounters counters_;
  ByteReader reader_;
  FileFollower follower_;
  DirWatcher watcher_;
  LogScanner scanner_;
  CheckpointStore checkpoint_;
  TimePoint next_checkpoint_{};
  int wake_fd_ = -1;   // eventfd: Stop() wakes the thread's wait
  std::mutex run_mu_;  // PollOnce vs the thread; the watcher between the wait and the walk
  std::jthread thread_;
};

}  // namespace efawatch::logs
