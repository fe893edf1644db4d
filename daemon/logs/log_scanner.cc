// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/log_scanner.h"

#include <glob.h>
#include <sys/stat.h>

#include <utility>

#include "daemon/logs/pod_volumes.h"
#include "spdlog/spdlog.h"

namespace efawatch::logs {
namespace fs = std::filesystem;

LogScanner::LogScanner(const TailerOptions& options, FileFollower& follower, ByteReader& reader,
                       DirWatcher& watcher, LineSink* sink, TailerCounters& counters)
    : options_(options),
      follower_(follower),
      reader_(reader),
      watcher_(watcher),
      sink_(sink),
      counters_(counters) {
  std::error_code ec;
  canonical_root_ = fs::weakly_canonical(options_.pod_log_root, ec);
}

void LogScanner::Scan() {
  Discovered d;
  watcher_.Watch(options_.pod_log_root);
  if (options_.container_logs) ScanPodLogRoot(d);
  for (const auto& pattern : options_.globs) ScanGlob(pattern, d);
  ScanVolumes(d);
  for (const auto& src : d.found) Track(src);
  DropGone(d);
  PruneSideTables();
  counters_.files_watched = follower_.size();
}

void LogScanner::ScanPodLogRoot(Discovered& d) {
  std::error_code ec;
  for (auto pod = fs::directory_iterator(options_.pod_log_root, ec);
       !ec && pod != fs::directory_iterator(); pod.increment(ec)) {
    std::error_code ec2;
    if (!pod->is_directory(ec2) || pod->is_symlink(ec2)) continue;
    watcher_.Watch(pod->path());
    for (auto ctr = fs::directory_iterator(pod->path(), ec2);
         !ec2 && ctr != fs::directory_iterator(); ctr.increment(ec2)) {
      std::error_code ec3;
      if (!ctr->is_directory(ec3)) continue;
      if (ctr->is_symlink(ec3)) {
        // O_NOFOLLOW guards only a file's last component: a container directory that is a
        // symlink could lead the agent (root) anywhere. kubelet never makes one.
        if (refused_.insert(ctr->path().string()).second) {
          ++counters_.files_refused;
          spdlog::warn("not following {}: a container directory that is a symlink",
                       ctr->path().string());
        }
        continue;
      }
      watcher_.Watch(ctr->path());
      ScanContainerDir(ctr->path(), d);
    }
  }
}

void LogScanner::ScanContainerDir(const fs::path& dir, Discovered& d) {
  std::error_code ec;
  for (auto f = fs::directory_iterator(dir, ec); !ec && f != fs::directory_iterator();
       f.increment(ec)) {
    auto src = ClassifyCriPath(options_.pod_log_root, f->path());
    if (!src) continue;
    std::error_code ec2;
    if (f->is_symlink(ec2) && !InsideRoot(f->path())) {
      if (!follower_.contains(f->path().string()) && !refused_.contains(f->path().string())) {
        refused_.insert(f->path().string());
        ++counters_.files_refused;
        spdlog::warn("not following {}: a symlink out of the pod log root", f->path().string());
      }
      continue;
    }
    d.live.insert(f->path().string());
    d.found.push_back(*src);
  }
}

void LogScanner::ScanGlob(const std::string& pattern, Discovered& d) {
  std::vector<LogSource> found;
  glob_t g{};
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      const fs::path p = g.gl_pathv[i];
      std::error_code ec;
      if (fs::is_symlink(p, ec) || !fs::is_regular_file(p, ec)) {
        if (fs::is_symlink(p, ec) && refused_.insert(p.string()).second) {
          ++counters_.files_refused;
          spdlog::warn("not following {}: a symlink", p.string());
        }
        continue;
      }
      LogSource src;
      src.path = p;
      src.origin = Origin::kGlob;
      const std::string name = p.filename().string();
      src.format = name.ends_with("-json.log") ? Format::kDockerJson : Format::kPlain;
      src.container = name;
      found.push_back(std::move(src));
    }
  }
  ::globfree(&g);
  // A hostPath that NCCL_DEBUG_FILE outputs of every job ever run pile up in (one file per
  // process, never deleted) would otherwise fill the agent's file cap with dead jobs' files,
  // and new pods' container logs would find no room: the most recently written files are
  // followed, the rest counted once (a file followed before stays followed).
  for (LogSource& src : KeepNewest(found, options_.max_glob_files)) {
    if (follower_.contains(src.path.string())) {
      found.push_back(std::move(src));
    } else if (over_cap_.insert(src.path.string()).second) {
      ++counters_.files_over_cap;
    }
  }
  for (LogSource& src : found) {
    d.live.insert(src.path.string());
    watcher_.Watch(src.path.parent_path());
    d.found.push_back(std::move(src));
  }
}

void LogScanner::ScanVolumes(Discovered& d) {
  if (options_.volumes.volume_root.empty() && options_.volumes.container_rootfs_procfs.empty()) {
    return;
  }
  PodVolumeOptions o = options_.volumes;
  o.pod_log_root = options_.pod_log_root;
  VolumeScan scan = ScanPodVolumes(o);
  ScanContainerRootfs(o, scan);
  for (const auto& p : scan.refused) {
    if (refused_.insert(p.string()).second) {
      ++counters_.files_refused;
      spdlog::warn("not following {}: a symlink out of its pod's volume", p.string());
    }
  }
  for (const auto& p : scan.over_cap) {
    if (over_cap_.insert(p.string()).second) ++counters_.files_over_cap;
  }
  // A directory with more entries than the walk reads: what lies beyond is not followed and
  // cannot be counted file by file without reading it, so the directory counts once.
  for (const auto& dir : scan.truncated) {
    if (truncated_dirs_.insert(dir.string()).second) {
      ++counters_.files_over_cap;
      spdlog::warn("{}: more than {} entries; only the first {} are considered", dir.string(),
                   o.max_dir_entries, o.max_dir_entries);
    }
  }
  for (const auto& dir : scan.dirs) watcher_.Watch(dir);
  for (const auto& dir : scan.live_dirs) d.live_dirs.insert(dir.string());
  for (auto& f : scan.files) {
    d.live.insert(f.path.string());
    d.found.push_back(std::move(f));
  }
}

bool LogScanner::VolumePodGone(const LogSource& src) const {
  std::error_code ec;
  const std::string log_dir = src.namespace_name + "_" + src.pod + "_" + src.uid;
  if (!fs::exists(options_.pod_log_root / log_dir, ec)) return true;
  return src.origin == Origin::kPodVolume &&
         !fs::exists(options_.volumes.volume_root / src.uid, ec);
}

void LogScanner::Track(const LogSource& src) {
  const absl::Status st = follower_.Track(src);
  if (st.ok()) return;
  const std::string key = src.path.string();
  if (absl::IsResourceExhausted(st)) {
    if (over_cap_.insert(key).second) ++counters_.files_over_cap;
  } else if (refused_.insert(key).second) {
    ++counters_.files_refused;
    spdlog::warn("cannot open {}: {}", key, std::string(st.message()));
  }
}

void LogScanner::DropGone(const Discovered& d) {
  std::vector<std::string> unseen;
  for (const auto& [path, t] : follower_.files()) {
    if (!d.live.contains(path)) unseen.push_back(path);
  }
  std::error_code ec;
  for (const std::string& path : unseen) {
    // Renamed away without a successor yet, or deleted: drain what is left. When the
    // container's directory is gone too, the source is gone.
    TrackedFile& t = follower_.at(path);
    reader_.Read(t, true);
    const LogSource& gone = t.source;
    const bool dir_live = d.live_dirs.contains(gone.path.parent_path().string());
    if (gone.origin == Origin::kPodVolume || gone.origin == Origin::kContainerRootfs) {
      // A file of the current session that vanished was renamed by Ray's rotation: keep it
      // until its successor comes (Track). Anything else (an older session, a file over the
      // pod's cap, a deleted pod) is closed here.
      if (!fs::exists(gone.path, ec) && dir_live && !VolumePodGone(gone)) continue;
      if (VolumePodGone(gone)) {
        sink_->OnSourceGone(gone);
        follower_.Close(path);
      } else if (dir_live) {
        // Left for newer files of its session (the pod's cap): if it is written again and
        // comes back, it goes on from here instead of being counted twice.
        follower_.Park(path);
      } else {
        follower_.Close(path);
      }
      continue;
    }
    if (!fs::exists(gone.format == Format::kCri ? gone.path.parent_path() : gone.path, ec)) {
      sink_->OnSourceGone(gone);
      follower_.Close(path);
    } else if (struct stat st{}; ::fstat(t.fd, &st) == 0 && st.st_nlink == 0) {
      // Unlinked (kubelet removes the log of an older restart of the container) and drained
      // above: holding it open would keep its disk space and an fd for as long as the
      // container's directory lives, one more per restart under CrashLoopBackOff. A file that
      // was only renamed (rotation) still has a link and waits for its successor.
      ++counters_.deleted_files_closed;
      follower_.Close(path);
    }
  }
}

void LogScanner::PruneSideTables() {
  // Each table is keyed by a file path; once the file's directory is gone (the pod was
  // deleted) no scan can report that path again, so the entry would only grow the table.
  auto prune = [](std::set<std::string>& table, auto key_of) {
    std::error_code ec;
    for (auto it = table.begin(); it != table.end();) {
      const fs::path p = key_of(*it);
      it = fs::exists(p.parent_path(), ec) ? std::next(it) : table.erase(it);
    }
  };
  prune(refused_, [](const std::string& k) { return fs::path(k); });
  prune(over_cap_, [](const std::string& k) { return fs::path(k); });
  prune(truncated_dirs_, [](const std::string& k) { return fs::path(k) / "."; });
  follower_.PruneResumePoints();
}

bool LogScanner::InsideRoot(const fs::path& p) const {
  std::error_code ec;
  const fs::path real = fs::canonical(p, ec);
  if (ec) return false;
  auto r = real.lexically_relative(canonical_root_);
  return !r.empty() && *r.begin() != "..";
}

}  // namespace efawatch::logs
