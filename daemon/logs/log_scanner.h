// SPDX-License-Identifier: Apache-2.0
// The tailer's discovery: which files exist to be followed, and which followed files are gone.
// Apart from following and reading because it is the part that walks trees tenants control
// (symlinks, caps, huge directories), and its rules for what is refused are easier to read alone.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "daemon/logs/byte_reader.h"
#include "daemon/logs/dir_watcher.h"
#include "daemon/logs/file_follower.h"
#include "daemon/logs/source.h"
#include "daemon/logs/tailer_types.h"

namespace efawatch::logs {

/// Walks the pod log root (CRI layout), the glob patterns and the pod volumes, hands what it
/// finds to the follower, and drains and lets go of followed files no walk finds any more
/// (telling the sink when a pod's source is gone). Adds an inotify watch per directory walked.
/// Refuses symlinks out of the root or a pod's volume and files beyond the caps, each counted
/// once (files_refused, files_over_cap); counts files_watched and deleted_files_closed.
/// Not thread-safe: the tailer's thread calls it. Everything it is given outlives it.
class LogScanner {
 public:
  LogScanner(const TailerOptions& options, FileFollower& follower, ByteReader& reader,
             DirWatcher& watcher, LineSink* sink, TailerCounters& counters);

  /// One walk: follows new and rotated files, drops gone ones.
  void Scan();

 private:
  /// What one walk found: the paths seen, and the sources to follow, in discovery order.
  struct Discovered {
    std::set<std::string> live;
    std::vector<LogSource> found;
    std::set<std::string> live_dirs;  // directories of followed volume files (see VolumeScan)
  };
  /// <root>/<ns>_<pod>_<uid>/<container>/<N>.log
  void ScanPodLogRoot(Discovered& d);
  /// The CRI log files of one container directory.
  void ScanContainerDir(const std::filesystem::path& dir, Discovered& d);
  /// The regular files one glob(3) pattern matches; symlinks are refused.
  void ScanGlob(const std::string& pattern, Discovered& d);
  /// The files of pod volumes (ScanPodVolumes); counts refused symlinks and capped files once.
  void ScanVolumes(Discovered& d);
  /// True when the pod a volume file belongs to is gone (its volume or log directory).
  bool VolumePodGone(const LogSource& src) const;
  /// Hands `src` to the follower; counts a file it cannot follow once.
  void Track(const LogSource& src);
  /// Drains the followed files not seen by this walk; forgets those whose source is gone.
  void DropGone(const Discovered& d);
  /// Forgets refused_, over_cap_, truncated_dirs_ and resume point entries of files whose
  /// directory is gone.
  void PruneSideTables();
  bool InsideRoot(const std::filesystem::path& p) const;

  const TailerOptions& options_;
  FileFollower& follower_;
  ByteReader& reader_;
  DirWatcher& watcher_;
  LineSink* sink_;
  TailerCounters& counters_;
  std::filesystem::path canonical_root_;
  std::set<std::string> refused_;         // reported once each
  std::set<std::string> over_cap_;        // counted once each
  std::set<std::string> truncated_dirs_;  // directories listed only in part, counted once each
};

}  // namespace efawatch::logs
