// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

// `efawatch doctor`: checks a node, an image or a running process against what EFA and NCCL need
// (docs/doctor.md lists every check). Plain records and plain functions over a Target, so the
// CLI, the agent and the tests run the same checks on the real machine or on a fixture tree.
namespace efawatch::doctor {

enum class Status { kPass, kWarn, kFail, kSkip };
std::string_view StatusName(Status s);  // PASS, WARN, FAIL, SKIP

struct Check {
  std::string id;  ///< Stable, documented in docs/doctor.md, e.g. "libfabric.efa_provider".
  Status status = Status::kSkip;
  std::string summary;   ///< One line: what was found.
  std::string evidence;  ///< The path, version or value it rests on.
  std::string fix;       ///< One line; empty on PASS and SKIP.
};

/// What the checks look at.
struct Target {
  std::filesystem::path root = "/";  ///< Files are read below this root.
  /// Where the host's /sys is when not below `root` (the agent's --sysfs-root); "" for root/sys.
  std::filesystem::path sys;
  /// /proc of the host, for the driver and the host's view of the process; "" for an image.
  std::filesystem::path host_proc = "/proc";
  /// The process's /proc entry (--pid), "" otherwise.
  std::filesystem::path proc_dir;
  std::map<std::string, std::string> env;  ///< Its NCCL_/FI_/LD_ settings.
  std::vector<std::string> mapped;         ///< Files the process has mapped (--pid).
  /// The process's NCCL log (--pid; ReadProcessLog): where it is and its first MiBs.
  std::string log_path;
  std::string log_head;
  /// The root is this machine's running filesystem: a library found may be loaded and asked
  /// for its version (dlopen), a device opened, limits read from this process.
  bool live = true;
};

/// This process's own environment, on this machine.
Target SelfTarget(const std::map<std::string, std::string>& env);
/// A mounted image or node filesystem: nothing is loaded or opened, settings come from `env`.
Target RootTarget(const std::filesystem::path& root, const std::map<std::string, std::string>& env);
/// A running process, seen from the host through `proc` (normally /proc): the libraries it has
/// mapped, its environment, limits and /dev/shm, its files through /proc/PID/root.
absl::StatusOr<Target> ProcessTarget(const std::filesystem::path& proc, pid_t pid);

/// Every check, in the order docs/doctor.md lists them.
std::vector<Check> RunChecks(const Target& target);

/// The checks about the node itself (driver, peermem, EFA devices against the instance type), for
/// the agent: its own libraries and settings say nothing about the training jobs' (those are
/// checked per process).
std::vector<Check> RunNodeChecks(const Target& target);

/// The worst status of `checks` (SKIP counts as PASS).
Status Worst(const std::vector<Check>& checks);

}  // namespace efawatch::doctor
