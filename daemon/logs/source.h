#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace efawatch::logs {

enum class Format { kCri, kDockerJson, kPlain };

/// Where a log file comes from. For Kubernetes CRI logs the pod identity comes from the path:
/// `<root>/<namespace>_<pod>_<uid>/<container>/<restart>.log`.
struct LogSource {
  std::filesystem::path path;  // the live file name (rotation keeps this name)
  Format format = Format::kPlain;
  std::string namespace_name;
  std::string pod;
  std::string uid;
  std::string container;

  /// "namespace/pod/container" for CRI logs, else the path: the unit verdicts are kept for.
  std::string Key() const;
  /// "namespace/pod" for CRI logs, else the path.
  std::string PodKey() const;
};

/// Classifies `path` as a CRI container log under `root`, or nullopt when it does not have the
/// `<ns>_<pod>_<uid>/<container>/<N>.log` shape (rotated `N.log.<time>` files do not).
std::optional<LogSource> ClassifyCriPath(const std::filesystem::path& root,
                                         const std::filesystem::path& path);

}  // namespace efawatch::logs
