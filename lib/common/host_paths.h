// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>

namespace efawatch::common {

/// Where the host's pseudo-filesystems and logs are. In a pod the host's /sys and /proc are
/// mounted read-only elsewhere; tests point these at fixture trees. Plain value, copyable.
struct HostPaths {
  std::filesystem::path sysfs = "/sys";
  std::filesystem::path procfs = "/proc";
  std::filesystem::path pod_log_root = "/var/log/pods";
  /// kubelet's pods directory, where pod volumes live (`<uid>/volumes/<plugin>/<volume>/`);
  /// empty: pod volumes are not read.
  std::filesystem::path pod_volume_root = "/var/lib/kubelet/pods";
};

}  // namespace efawatch::common
