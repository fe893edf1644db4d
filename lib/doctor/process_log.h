// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <string>

namespace efawatch::doctor {

/// The head of a process's NCCL log, as `doctor --pid` finds it from the host: the file its
/// NCCL_DEBUG_FILE names (NCCL's %h and %p expanded as the process sees them, below its root),
/// else its stdout or stderr where either is a regular file. A pipe (a container runtime's
/// log) is not read: `doctor --agent` reads pod logs. Empty `path` when none could be read.
struct ProcessLog {
  std::string path;  ///< As the process names it.
  std::string head;  ///< At most `max_bytes` from the start: NCCL prints its setup lines first.
};

/// `proc_dir` is the process's /proc entry. Never throws; unreadable files give an empty log.
ProcessLog ReadProcessLog(const std::filesystem::path& proc_dir, const std::string& debug_file,
                          size_t max_bytes = 4u << 20);

}  // namespace efawatch::doctor
