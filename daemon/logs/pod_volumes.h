// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/logs/source.h"

namespace efawatch::logs {

/// Where NCCL output that never reaches a container log lies in pod volumes, and how to find it.
struct PodVolumeOptions {
  /// kubelet's pods directory: `<root>/<pod-uid>/volumes/<plugin>/<volume>/`. Empty: off.
  std::filesystem::path volume_root;
  /// The pod log root, whose `<namespace>_<pod>_<uid>` directory names map a uid to its pod.
  std::filesystem::path pod_log_root;
  /// fnmatch(3) patterns of NCCL_DEBUG_FILE outputs, matched against file names in a volume
  /// (NCCL expands %h and %p to host and pid: NCCL_DEBUG_FILE=/logs/nccl.%h.%p.log).
  std::vector<std::string> debug_file_patterns = {"nccl*.log", "nccl.*.*", "*.nccl"};
  /// How deep below a volume's top NCCL_DEBUG_FILE outputs are looked for.
  size_t max_depth = 3;
  /// Files followed per pod: beyond it the least recently written are left (and counted). A
  /// long-running Ray cluster leaves one .out and one .err per worker process it ever started.
  size_t max_files_per_pod = 256;
  /// Entries read from one directory of a volume: a tenant can fill an emptyDir with millions
  /// of files named like Ray's, and each one considered costs a stat per walk and memory until
  /// the cap above picks the newest. Beyond it a directory is read no further (and reported).
  /// Ray writes about three files per worker process (.out, .err, python-core-worker-*.log).
  size_t max_dir_entries = 8192;
  /// Opt-in: also each container's own /tmp/ray (Ray's default, without a volume), read as
  /// <procfs>/<pid>/root/tmp/ray/session_latest/logs/ of the container's first process, the pod
  /// from the process's cgroup. Needs the host's PID namespace. Empty: off.
  std::filesystem::path container_rootfs_procfs;
  /// Ray sessions' worker and job-driver files (off for readers of other files).
  bool ray_sessions = true;
  /// When set, a file matching the patterns is followed only if this accepts it: a reader that
  /// recognises its files by content (the NCCL Inspector's) looks at their first bytes,
  /// opened beneath `volume`. Called on the tailer's thread during the walk.
  std::function<bool(const std::filesystem::path& volume, const std::filesystem::path& file)>
      accept;
};

/// What one walk of the pod volumes found.
struct VolumeScan {
  std::vector<LogSource> files;  // to follow, pod-attributed (LogSource::origin kPodVolume)
  /// Symlinks that leave their pod's volume (another pod's, /etc): never followed.
  std::vector<std::filesystem::path> refused;
  /// Files left because their pod has more than max_files_per_pod.
  std::vector<std::filesystem::path> over_cap;
  /// Directories with more than max_dir_entries entries, read only that far.
  std::vector<std::filesystem::path> truncated;
  /// Directories worth an inotify watch: the root, each volume, each Ray session's logs.
  std::vector<std::filesystem::path> dirs;
  /// The logs directories of the sessions followed now (a file in one of them that vanished
  /// was renamed by Ray's rotation; its successor follows).
  std::vector<std::filesystem::path> live_dirs;
};

/// `<namespace>_<pod>_<uid>` directory names under the pod log root, by uid. Namespaces and pod
/// names are DNS labels (no '_'), so the first two '_' split the name.
std::map<std::string, std::pair<std::string, std::string>> PodNamesByUid(
    const std::filesystem::path& pod_log_root);

/// True for the live name of a Ray worker's output (`worker-<id>-<job>-<pid>.out|.err`) or a job
/// driver's log (`job-driver-<id>.log`); false for their rotated copies (`.1`, `.2`, ...).
bool IsRayLogName(const std::string& name);

/// Walks every pod's volumes: in each volume, the Ray session `session_latest` points to (its
/// `logs/` worker and job-driver files; older sessions are not followed), and files matching the
/// NCCL_DEBUG_FILE patterns. A pod without a log directory (no name known yet) is skipped until
/// it has one. Symlinks are followed only where they stay inside the same volume; Ray's
/// `session_latest` holds an absolute path inside the container (/tmp/ray/session_<ts>), which
/// is read as the session directory of that name beside the link. Stateless; called from the
/// tailer's thread.
VolumeScan ScanPodVolumes(const PodVolumeOptions& options);

/// Leaves in `files` the `keep` most recently written of them (newest first; a file that cannot
/// be stat'ed counts as oldest) and returns the others. Unchanged when there are `keep` or
/// fewer. What every file cap that tenants can fill uses: the live job's files are the newest.
std::vector<LogSource> KeepNewest(std::vector<LogSource>& files, size_t keep);

/// The pod uid and container id a /proc/<pid>/cgroup names (cgroup v1 or v2, cgroupfs or
/// systemd driver: ".../kubepods/burstable/pod<uid>/<id>",
/// ".../kubepods-besteffort-pod<uid with _>.slice/cri-containerd-<id>.scope"), or empty uid.
struct CgroupPod {
  std::string uid;
  std::string container_id;
};
CgroupPod PodOfCgroup(std::string_view cgroup_file_text);

/// The Ray session files in the containers' own filesystems (container_rootfs_procfs): one
/// process per container (the lowest pid, the container's first, so the path stays the same
/// while the container runs). Symlinks there are never followed (refused). Appends to `out`.
void ScanContainerRootfs(const PodVolumeOptions& options, VolumeScan& out);

}  // namespace efawatch::logs
