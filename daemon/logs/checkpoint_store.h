// SPDX-License-Identifier: Apache-2.0
// The tailer's checkpoint store: its state file, written atomically and read back whole or not at
// all. Kept apart from the tailer so the file's format (which an agent after an upgrade must
// still read) and its failure handling (a damaged file is set aside, never trusted in part) have
// one owner and tests of their own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/logs/tailer_types.h"

namespace efawatch::logs {

/// Where reading of one file stopped: its identity (dev, ino), the offset of the last complete
/// line delivered, that line's number, and the bytes just before the offset (TailAt) to
/// recognise a file truncated and rewritten meanwhile.
struct ResumePoint {
  uint64_t dev = 0, ino = 0, offset = 0, line_no = 0;
  std::string tail;
};

/// Up to 64 bytes of `fd` ending at `offset`, hex-encoded (ResumePoint::tail); empty when the
/// read fails.
std::string TailAt(int fd, uint64_t offset);

/// What one checkpoint holds: a resume point per file, the cumulative counters that must survive
/// a restart, and the sink's own state (LineSink::Checkpoint).
struct TailerCheckpoint {
  struct Counters {
    uint64_t bytes_read = 0, lines_read = 0, rotations = 0, truncations = 0, lines_truncated = 0;
  };
  std::vector<std::pair<std::string, ResumePoint>> files;  // by path, written in this order
  Counters counters;
  std::string sink;
};

/// Reads and writes the tailer's state file (JSON, version 1). Write() goes through
/// <state_file>.tmp, fsync and rename, so after a crash the file is the old state or the new
/// one, whole; a state equal to the last one written is not written again. Load() checks the
/// whole file before returning any of it and sets a damaged one aside as <state_file>.bad.
/// Counts in `counters`: checkpoint_writes, checkpoints_unchanged, checkpoint_write_failures,
/// checkpoints_set_aside. Not thread-safe: the tailer's thread calls it (Stop() after joining
/// it). `counters` outlives it.
class CheckpointStore {
 public:
  /// `state_file` empty: no checkpoint (Write() does nothing, Load() finds none).
  CheckpointStore(std::filesystem::path state_file, TailerCounters& counters)
      : state_file_(std::move(state_file)), counters_(counters) {}

  bool enabled() const { return !state_file_.empty(); }
  /// Writes `state` atomically. An unchanged state is OK without a write. A failure (state
  /// directory full, read-only, gone) is counted and logged here, and returned.
  absl::Status Write(const TailerCheckpoint& state);
  /// The last state written. NotFound: no state file (a fresh start). DataLoss: the file is not
  /// JSON, has fields of the wrong type, or a sink state `sink` calls invalid
  /// (LineSink::CheckpointValid); it has been set aside (counted, logged).
  absl::StatusOr<TailerCheckpoint> Load(const LineSink& sink);

 private:
  /// Renames the state file to <state_file>.bad (replacing an older one), counts and logs why.
  absl::Status SetAside(std::string_view why);

  const std::filesystem::path state_file_;
  TailerCounters& counters_;
  // Hash of the last checkpoint written (0: none yet): an unchanged state is not written again.
  size_t last_hash_ = 0;
};

}  // namespace efawatch::logs
