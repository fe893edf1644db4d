// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace efawatch::logs {

enum class Format { kCri, kDockerJson, kPlain };

/// How the agent found a file: it decides how the file is attributed to a pod and what a new
/// file means (a container log's new restart file is a new run; a volume holds many files).
enum class Origin {
  kContainerLog,     // <pod-log-root>/<ns>_<pod>_<uid>/<container>/<N>.log
  kGlob,             // --log-glob: no pod
  kPodVolume,        // a file in a pod's volume (Ray session logs, NCCL_DEBUG_FILE outputs)
  kContainerRootfs,  // /proc/<pid>/root/tmp/ray/session_latest/logs/ of a container
};

/// The name Origin has in `efawatch status` and the checkpoint.
std::string_view OriginName(Origin origin);
Origin OriginFromName(std::string_view name);

/// Where a log file comes from. For Kubernetes CRI logs the pod identity comes from the path:
/// `<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`.
struct LogSource {
  std::filesystem::path path;  // the live file name (rotation keeps this name)
  Format format = Format::kPlain;
  std::string namespace_name;
  std::string pod;
  std::string uid;
  /// The container's name; for files of a pod volume "(volume:<name>)", for a container's own
  /// filesystem "(rootfs:<container id, 12 hex>)": their container is not known.
  std::string container;
  Origin origin = Origin::kContainerLog;
  /// What one run of the source is: a new run starts a fresh analysis. A container log's run
  /// is its file (a restart makes a new one); a Ray session's files share the session's name;
  /// other volume files share the volume's run ("").
  std::string run;
  /// For files in what a tenant controls (a pod volume, a container's filesystem): the
  /// directory they must be opened beneath, with no symlink below it (beneath.h). Empty for
  /// container logs, whose directories kubelet makes.
  std::filesystem::path beneath;

  /// True when the source belongs to a known pod: a CRI container log, a pod volume's file, a
  /// container filesystem's file.
  bool HasPod() const {
    return format == Format::kCri || origin == Origin::kPodVolume ||
           origin == Origin::kContainerRootfs;
  }
  /// "namespace/pod/container" for pod sources, else the path: the unit verdicts are kept for.
  std::string Key() const;
  /// "namespace/pod" for pod sources, else the path.
  std::string PodKey() const;
  /// The run the lines belong to (see `run`).
  std::string RunId() const;
};

/// Classifies `path` as a CRI container log under `root`, or nullopt when it does not have the
/// `<ns>_<pod>_<uid>/<container>/<N>.log` shape (rotated `N.log.<time>` files do not).
std::optional<LogSource> ClassifyCriPath(const std::filesystem::path& root,
                                         const std::filesystem::path& path);

}  // namespace efawatch::logs
