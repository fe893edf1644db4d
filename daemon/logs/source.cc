// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/source.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace efawatch::logs {

std::string_view OriginName(Origin origin) {
  switch (origin) {
    case Origin::kContainerLog:
      return "container_log";
    case Origin::kGlob:
      return "glob";
    case Origin::kPodVolume:
      return "pod_volume";
    case Origin::kContainerRootfs:
      return "container_rootfs";
  }
  return "container_log";
}

Origin OriginFromName(std::string_view name) {
  for (Origin o :
       {Origin::kContainerLog, Origin::kGlob, Origin::kPodVolume, Origin::kContainerRootfs}) {
    if (OriginName(o) == name) return o;
  }
  return Origin::kContainerLog;
}

std::string LogSource::Key() const {
  if (!HasPod()) return path.string();
  return namespace_name + "/" + pod + "/" + container;
}

std::string LogSource::PodKey() const {
  if (!HasPod()) return path.string();
  return namespace_name + "/" + pod;
}

std::string LogSource::RunId() const {
  if (origin == Origin::kPodVolume || origin == Origin::kContainerRootfs) return run;
  return path.string();
}

std::optional<LogSource> ClassifyCriPath(const std::filesystem::path& root,
                                         const std::filesystem::path& path) {
  const auto rel = path.lexically_relative(root);
  std::vector<std::string> parts;
  for (const auto& p : rel) parts.push_back(p.string());
  if (parts.size() != 3 || parts[0] == "..") return std::nullopt;
  const std::string& file = parts[2];
  // <restart>.log: digits then ".log" (kubelet's rotated copies are <restart>.log.<time>).
  if (file.size() < 5 || !file.ends_with(".log")) return std::nullopt;
  if (!std::all_of(file.begin(), file.end() - 4, [](char c) { return std::isdigit(c) != 0; })) {
    return std::nullopt;
  }
  // Namespaces and pod names cannot contain '_' (DNS labels), so the first two '_' split.
  const std::string& dir = parts[0];
  const auto a = dir.find('_');
  const auto b = a == std::string::npos ? a : dir.find('_', a + 1);
  if (b == std::string::npos) return std::nullopt;
  LogSource s;
  s.path = path;
  s.format = Format::kCri;
  s.namespace_name = dir.substr(0, a);
  s.pod = dir.substr(a + 1, b - a - 1);
  s.uid = dir.substr(b + 1);
  s.container = parts[1];
  return s;
}

}  // namespace efawatch::logs
