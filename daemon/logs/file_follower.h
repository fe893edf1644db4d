// SPDX-License-Identifier: Apache-2.0
// The tailer's per-file follower: which files are followed and how each goes on across a
// rotation or a restart. Kept apart from discovery (what files exist) and from reading (what
// bytes become) because rotation is where lines are lost or counted twice, and that logic
// deserves one place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "daemon/logs/byte_reader.h"
#include "daemon/logs/checkpoint_store.h"
#include "daemon/logs/source.h"
#include "daemon/logs/tailer_types.h"

namespace efawatch::logs {

/// Opens a log file for reading: a regular file only, no symlink as its last component (none
/// at all below `beneath` when that is set), without updating its access time. -1 with errno
/// on failure.
int OpenLog(const std::filesystem::path& path, const std::filesystem::path& beneath);

/// The files the tailer follows, by path, and the resume points of those a checkpoint names
/// that have not been seen again yet. On first sight of a file it resumes at its checkpointed
/// offset (from the top when it was rewritten meanwhile, counted in truncations), finishes the
/// file a rotation left while the agent was down, or reads the container run's rotated history
/// (history_bytes, gzip included) and the head and tail of a huge file. A file replaced under
/// its name (rename-and-create rotation) is read to its end before its successor is opened;
/// line numbers go on across both. Counts rotations and history_files_read.
/// Not thread-safe: the tailer's thread calls it. `options`, `reader` and `counters` outlive
/// it.
class FileFollower {
 public:
  using Files = std::map<std::string, std::unique_ptr<TrackedFile>>;

  FileFollower(const TailerOptions& options, ByteReader& reader, TailerCounters& counters)
      : options_(options), reader_(reader), counters_(counters) {}

  /// Starts following `src`, or restarts it when the file under its name changed (rotation).
  /// OK also when it is gone before it could be looked at (the next scan will not see it).
  /// ResourceExhausted: max_files are followed already. Other errors: it cannot be opened (the
  /// message says why); the caller reports either once.
  absl::Status Track(const LogSource& src);
  /// Reads every followed file, at most read_chunk_bytes each. True when one has more to read.
  bool ReadAll();

  const Files& files() const { return files_; }
  /// The followed file at `path`; it must be followed.
  TrackedFile& at(const std::string& path) { return *files_.at(path); }
  bool contains(const std::string& path) const { return files_.contains(path); }
  size_t size() const { return files_.size(); }

  /// Stops following `path`.
  void Close(const std::string& path);
  /// Stops following `path` but keeps where it stopped: seen again (its writer goes on), it
  /// resumes there instead of being read twice.
  void Park(const std::string& path);

  /// Takes the resume points of a checkpoint just loaded (the last one of a path wins).
  void Restore(const std::vector<std::pair<std::string, ResumePoint>>& files);
  /// What a checkpoint saves: every followed file's resume point, then those not seen again yet.
  std::vector<std::pair<std::string, ResumePoint>> ResumePoints() const;
  /// Forgets the resume points of files whose directory is gone (no scan can find them again).
  void PruneResumePoints();

  /// True when a file was read to its end and let go (rotation, history) since
  /// ClearCheckpointDue(): the checkpoint should be written at the end of the pass, so a crash
  /// cannot lose the counts of lines no file holds any more.
  bool checkpoint_due() const { return checkpoint_due_; }
  void ClearCheckpointDue() { checkpoint_due_ = false; }

 private:
  absl::Status Open(const LogSource& src, bool allow_resume);
  /// `t` was checkpointed at `r`: goes on from there, or finishes the file rotated away from
  /// under its name while the agent was down.
  void ResumeAt(TrackedFile& t, const ResumePoint& r, uint64_t size);
  /// First sight without a checkpoint: the run's history, and a huge file's head and tail.
  void FirstSight(TrackedFile& t, uint64_t size);
  /// Reads the rotated files of `t`'s container run, oldest first (TailerOptions::history_bytes),
  /// as the lines before the live file's; `t`'s line numbers continue after them.
  void ReadHistory(TrackedFile& t);
  /// After a restart that found the checkpointed file rotated to `last_read` and finished it:
  /// reads the run's files rotated after it (all of them), whose lines came before `t`'s.
  void ReadRotatedAfter(TrackedFile& t, const std::filesystem::path& last_read);
  /// Hands a gzip file's lines to the sink through `t`, at most `budget` uncompressed bytes.
  void ReadGzip(TrackedFile& t, uint64_t budget);

  const TailerOptions& options_;
  ByteReader& reader_;
  TailerCounters& counters_;
  Files files_;                                // by live path
  std::map<std::string, ResumePoint> resume_;  // from the checkpoint, by path
  bool checkpoint_due_ = false;
};

}  // namespace efawatch::logs
