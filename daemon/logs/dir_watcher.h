// SPDX-License-Identifier: Apache-2.0
// The tailer's inotify watches. Apart from the scanner, which decides what to watch, so that the
// thread's wait (which reads the events) and the walk (which adds watches) share only this.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>

namespace efawatch::logs {

/// One inotify instance and a watch per directory the scanner walks: writes, files created,
/// removed and renamed, the directory's own removal. Without inotify (no instance left, a file
/// system without it) it watches nothing and the tailer falls back to polling.
/// Not thread-safe: the tailer serialises its calls (its run mutex). Closes its descriptor.
class DirWatcher {
 public:
  DirWatcher() = default;
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;
  ~DirWatcher() { Close(); }

  /// Starts the inotify instance; false when there is none to be had.
  bool Open();
  void Close();
  /// The descriptor to wait on for events (-1 without inotify).
  int fd() const { return fd_; }
  /// Watches `dir` once; symlinks are not followed. A watch that cannot be added is left to the
  /// fallback walk.
  void Watch(const std::filesystem::path& dir);
  /// Reads the pending events without blocking. True when a file or directory came or went (or
  /// events were lost): a walk is wanted. Forgets the watches of directories gone, so that a new
  /// directory of the same name is watched again.
  bool ReadEvents();

 private:
  int fd_ = -1;
  std::map<int, std::filesystem::path> watches_;  // by watch descriptor
  std::set<std::string> watched_;                 // directories with a watch
};

}  // namespace efawatch::logs
