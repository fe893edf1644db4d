// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/pod_volumes.h"

#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <fstream>
#include <iterator>
#include <set>

#include "daemon/logs/beneath.h"

namespace efawatch::logs {
namespace fs = std::filesystem;

namespace {

// Volume plugins whose contents kubelet writes itself (API objects): never logs.
constexpr std::array<std::string_view, 4> kSkippedPlugins = {
    "kubernetes.io~secret", "kubernetes.io~configmap", "kubernetes.io~projected",
    "kubernetes.io~downward-api"};

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(c) != 0; });
}

// True when `p`, with its symlinks resolved on the host, lies inside `dir`.
bool Inside(const fs::path& p, const fs::path& dir) {
  std::error_code ec;
  const fs::path real = fs::canonical(p, ec);
  if (ec) return false;
  const fs::path base = fs::canonical(dir, ec);
  if (ec) return false;
  const fs::path rel = real.lexically_relative(base);
  return !rel.empty() && *rel.begin() != "..";
}

// The entries of `dir` beneath `root`, at most max_dir_entries (a longer directory is reported
// in `out.truncated`).
std::vector<DirEntry> ListCapped(const fs::path& root, const fs::path& dir,
                                 const PodVolumeOptions& options, VolumeScan& out) {
  bool truncated = false;
  std::vector<DirEntry> entries = ListBeneath(root, dir, options.max_dir_entries, &truncated);
  if (truncated) out.truncated.push_back(dir);
  return entries;
}

// One pod's walk: the files it found, before the per-pod cap.
struct PodWalk {
  const PodVolumeOptions& options;
  LogSource pod;  // namespace, pod, uid filled
  VolumeScan& out;
  std::vector<LogSource> files;

  std::set<std::string> seen;  // paths added, so a file and a link to it are read once

  // A file to follow, unless it is a symlink out of `volume` (then refused). A symlink inside
  // is followed as the file it names: the tailer opens files without following links.
  void Add(const fs::path& file, const fs::path& volume, const std::string& run) {
    std::error_code ec;
    fs::path path = file;
    if (fs::is_symlink(file, ec)) {
      if (!Inside(file, volume)) {
        out.refused.push_back(file);
        return;
      }
      path = fs::canonical(file, ec);
      if (ec) return;
    }
    if (!fs::is_regular_file(path, ec) || !seen.insert(path.string()).second) return;
    LogSource s = pod;
    s.path = path;
    s.run = run;
    s.beneath = volume;
    files.push_back(std::move(s));
  }

  // Ray's session_latest: "/tmp/ray/session_<ts>" (absolute, the container's view) or a
  // relative name. Returns the session directory inside `volume`, or empty.
  fs::path RaySession(const fs::path& volume) {
    const fs::path link = volume / "session_latest";
    std::error_code ec;
    if (!fs::is_symlink(link, ec)) {
      return fs::is_directory(link, ec) ? link : fs::path();
    }
    const fs::path target = fs::read_symlink(link, ec);
    if (ec) return {};
    const std::string name = target.filename().string();
    if (target.is_absolute()) {
      // Only the name is meaningful on the host: the session directory beside the link.
      fs::path beside = volume / name;
      if (name.starts_with("session_") && name != "session_latest" &&
          fs::is_directory(beside, ec) && !fs::is_symlink(beside, ec)) {
        return beside;
      }
      out.refused.push_back(link);
      return {};
    }
    if (!Inside(link, volume)) {
      out.refused.push_back(link);
      return {};
    }
    return fs::canonical(link, ec);
  }

  void RayFiles(const fs::path& volume) {
    const fs::path session = RaySession(volume);
    if (session.empty()) return;
    const fs::path logs = session / "logs";
    std::error_code ec;
    if (fs::is_symlink(logs, ec) && !Inside(logs, volume)) {
      out.refused.push_back(logs);
      return;
    }
    if (!fs::is_directory(logs, ec)) return;
    out.dirs.push_back(logs);
    out.live_dirs.push_back(logs);
    const std::string run = session.filename().string();
    // Listed beneath the volume: a `logs` swapped for a link since the check above is not
    // listed (the tenant controls this tree; a link could lead into a Secret volume).
    for (const DirEntry& e : ListCapped(volume, logs, options, out)) {
      if ((e.is_file || e.is_link) && IsRayLogName(e.name)) Add(logs / e.name, volume, run);
    }
  }

  bool MatchesDebugFile(const std::string& name) const {
    return std::any_of(
        options.debug_file_patterns.begin(), options.debug_file_patterns.end(),
        [&](const std::string& p) { return ::fnmatch(p.c_str(), name.c_str(), 0) == 0; });
  }

  // NCCL_DEBUG_FILE outputs anywhere in the volume, a few levels deep; Ray's session
  // directories are Ray's (RayFiles) and symlinked directories are not entered.
  void DebugFiles(const fs::path& dir, const fs::path& volume, size_t depth) {
    bool watched = false;
    for (const DirEntry& e : ListCapped(volume, dir, options, out)) {
      const std::string& name = e.name;
      if (e.is_dir) {
        if (depth > 1 && !(dir == volume && name.starts_with("session_"))) {
          DebugFiles(dir / name, volume, depth - 1);
        }
        continue;
      }
      if (!(e.is_file || e.is_link) || !MatchesDebugFile(name)) continue;
      if (options.accept && !options.accept(volume, dir / name)) continue;
      Add(dir / name, volume, "");
      if (!watched) out.dirs.push_back(dir);
      watched = true;
    }
  }

  void Volumes() {
    const fs::path volumes = options.volume_root / pod.uid / "volumes";
    std::error_code ec;
    for (auto plugin = fs::directory_iterator(volumes, ec);
         !ec && plugin != fs::directory_iterator(); plugin.increment(ec)) {
      const std::string plugin_name = plugin->path().filename().string();
      std::error_code ec2;
      if (std::find(kSkippedPlugins.begin(), kSkippedPlugins.end(), plugin_name) !=
              kSkippedPlugins.end() ||
          !plugin->is_directory(ec2) || plugin->is_symlink(ec2)) {
        continue;
      }
      for (auto vol = fs::directory_iterator(plugin->path(), ec2);
           !ec2 && vol != fs::directory_iterator(); vol.increment(ec2)) {
        std::error_code ec3;
        if (!vol->is_directory(ec3) || vol->is_symlink(ec3)) continue;
        // CSI volumes keep their contents one level down.
        const fs::path top =
            plugin_name == "kubernetes.io~csi" ? vol->path() / "mount" : vol->path();
        pod.container = "(volume:" + vol->path().filename().string() + ")";
        out.dirs.push_back(top);
        if (options.ray_sessions) RayFiles(top);
        DebugFiles(top, top, options.max_depth);
      }
    }
  }

  // Keeps the most recently written max_files_per_pod files; the rest are reported.
  void Cap() {
    for (const LogSource& s : KeepNewest(files, options.max_files_per_pod)) {
      out.over_cap.push_back(s.path);
    }
    for (auto& f : files) out.files.push_back(std::move(f));
  }
};

}  // namespace

std::map<std::string, std::pair<std::string, std::string>> PodNamesByUid(
    const fs::path& pod_log_root) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  std::error_code ec;
  for (auto d = fs::directory_iterator(pod_log_root, ec); !ec && d != fs::directory_iterator();
       d.increment(ec)) {
    const std::string name = d->path().filename().string();
    const auto a = name.find('_');
    const auto b = a == std::string::npos ? a : name.find('_', a + 1);
    if (b == std::string::npos || b + 1 >= name.size()) continue;
    out[name.substr(b + 1)] = {name.substr(0, a), name.substr(a + 1, b - a - 1)};
  }
  return out;
}

bool IsRayLogName(const std::string& name) {
  std::string_view n = name;
  if (n.starts_with("job-driver-")) return n.size() > 15 && n.ends_with(".log");
  if (!n.starts_with("worker-")) return false;
  if (n.ends_with(".out") || n.ends_with(".err")) {
    n.remove_suffix(4);
  } else {
    return false;
  }
  // worker-<worker id>-<job id>-<pid>: a rotated "worker-...-<pid>.1.out" has no all-digit pid.
  const size_t dash = n.rfind('-');
  return dash != std::string_view::npos && dash > 7 && AllDigits(n.substr(dash + 1));
}

CgroupPod PodOfCgroup(std::string_view text) {
  CgroupPod out;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    if (line.find("kubepods") == std::string_view::npos) continue;
    // "pod<uid>" after '/' or '-' ("kubepods" itself is followed by '/', '-' or '.').
    size_t pod = line.find("pod");
    while (pod != std::string_view::npos &&
           (pod == 0 || (line[pod - 1] != '/' && line[pod - 1] != '-') || pod + 3 >= line.size() ||
            std::isxdigit(static_cast<unsigned char>(line[pod + 3])) == 0)) {
      pod = line.find("pod", pod + 3);
    }
    if (pod == std::string_view::npos) continue;
    std::string_view rest = line.substr(pod + 3);
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) continue;
    std::string uid(rest.substr(0, slash));
    if (uid.ends_with(".slice")) uid.resize(uid.size() - 6);
    std::replace(uid.begin(), uid.end(), '_', '-');  // systemd escapes '-' as '_'
    std::string_view id = rest.substr(rest.rfind('/') + 1);
    if (id.ends_with(".scope")) id.remove_suffix(6);
    if (const size_t dash = id.rfind('-'); dash != std::string_view::npos)
      id.remove_prefix(dash + 1);
    if (uid.empty() || id.size() < 12) continue;
    out.uid = uid;
    out.container_id = std::string(id);
    return out;
  }
  return out;
}

void ScanContainerRootfs(const PodVolumeOptions& options, VolumeScan& out) {
  if (options.container_rootfs_procfs.empty()) return;
  const auto names = PodNamesByUid(options.pod_log_root);
  std::map<std::string, std::pair<uint64_t, CgroupPod>> first;  // container id -> lowest pid
  std::error_code ec;
  for (auto d = fs::directory_iterator(options.container_rootfs_procfs, ec);
       !ec && d != fs::directory_iterator(); d.increment(ec)) {
    const std::string pid = d->path().filename().string();
    if (!AllDigits(pid)) continue;
    std::ifstream in(d->path() / "cgroup");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CgroupPod cp = PodOfCgroup(text);
    if (cp.uid.empty() || !names.contains(cp.uid)) continue;
    // A name of digits out of range (a fixture tree, a hostile /proc view) is no pid: stoull
    // would throw.
    uint64_t n = 0;
    if (std::from_chars(pid.data(), pid.data() + pid.size(), n).ec != std::errc()) continue;
    auto [it, added] = first.try_emplace(cp.container_id, n, cp);
    if (!added && n < it->second.first) it->second = {n, cp};
  }
  for (const auto& [id, entry] : first) {
    const auto& [ns, pod] = names.at(entry.second.uid);
    const fs::path ray =
        options.container_rootfs_procfs / std::to_string(entry.first) / "root/tmp/ray";
    std::error_code ec2;
    const fs::path target = fs::read_symlink(ray / "session_latest", ec2);
    if (ec2) continue;
    const std::string session = target.filename().string();
    const fs::path logs = ray / session / "logs";
    if (!session.starts_with("session_") || fs::is_symlink(ray / session, ec2) ||
        !fs::is_directory(logs, ec2) || fs::is_symlink(logs, ec2)) {
      continue;
    }
    out.dirs.push_back(logs);
    out.live_dirs.push_back(logs);
    // The container's own filesystem is the tenant's: listed and opened beneath its root with
    // no link below it (a swapped `logs` or /tmp/ray would otherwise lead anywhere in the
    // container, /var/run/secrets included).
    const fs::path root = options.container_rootfs_procfs / std::to_string(entry.first) / "root";
    std::vector<LogSource> found;
    for (const DirEntry& e : ListCapped(root, logs, options, out)) {
      if (!IsRayLogName(e.name)) continue;
      if (!e.is_file) {
        if (e.is_link) out.refused.push_back(logs / e.name);
        continue;
      }
      LogSource s;
      s.path = logs / e.name;
      s.beneath = root;
      s.format = Format::kPlain;
      s.origin = Origin::kContainerRootfs;
      s.namespace_name = ns;
      s.pod = pod;
      s.uid = entry.second.uid;
      s.container = "(rootfs:" + id.substr(0, 12) + ")";
      s.run = session;
      found.push_back(std::move(s));
    }
    for (const LogSource& s : KeepNewest(found, options.max_files_per_pod)) {
      out.over_cap.push_back(s.path);
    }
    for (auto& f : found) out.files.push_back(std::move(f));
  }
}

std::vector<LogSource> KeepNewest(std::vector<LogSource>& files, size_t keep) {
  if (files.size() <= keep) return {};
  std::vector<std::pair<int64_t, size_t>> by_age;
  by_age.reserve(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    struct stat st {};
    const int64_t mtime =
        ::stat(files[i].path.c_str(), &st) == 0
            ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec
            : 0;
    by_age.emplace_back(-mtime, i);
  }
  std::sort(by_age.begin(), by_age.end());
  std::vector<LogSource> kept, left;
  for (size_t k = 0; k < by_age.size(); ++k) {
    (k < keep ? kept : left).push_back(std::move(files[by_age[k].second]));
  }
  files = std::move(kept);
  return left;
}

VolumeScan ScanPodVolumes(const PodVolumeOptions& given) {
  VolumeScan out;
  if (given.volume_root.empty()) return out;
  // With the root resolved, the paths of files found by walking are their real paths, the
  // same a symlink to them resolves to: each file is read under one name.
  PodVolumeOptions options = given;
  std::error_code ec;
  options.volume_root = fs::weakly_canonical(given.volume_root, ec);
  if (ec) options.volume_root = given.volume_root;
  out.dirs.push_back(options.volume_root);
  const auto names = PodNamesByUid(options.pod_log_root);
  for (auto d = fs::directory_iterator(options.volume_root, ec);
       !ec && d != fs::directory_iterator(); d.increment(ec)) {
    std::error_code ec2;
    if (!d->is_directory(ec2) || d->is_symlink(ec2)) continue;
    const std::string uid = d->path().filename().string();
    const auto name = names.find(uid);
    if (name == names.end()) continue;  // no pod name yet: its log directory comes first
    PodWalk walk{options, {}, out, {}, {}};
    walk.pod.format = Format::kPlain;
    walk.pod.origin = Origin::kPodVolume;
    walk.pod.namespace_name = name->second.first;
    walk.pod.pod = name->second.second;
    walk.pod.uid = uid;
    walk.Volumes();
    walk.Cap();
  }
  return out;
}

}  // namespace efawatch::logs
