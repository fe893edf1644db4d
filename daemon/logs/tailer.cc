// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/tailer.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "daemon/logs/beneath.h"
#include "daemon/logs/json_shape.h"
#include "daemon/logs/scan_schedule.h"
#include "spdlog/spdlog.h"

namespace efawatch::logs {
namespace fs = std::filesystem;

struct Tailer::Tracked {
  LogSource source;
  int fd = -1;
  uint64_t dev = 0, ino = 0;
  uint64_t offset = 0;
  uint64_t line_no = 0;
  std::string partial;  // bytes after the last newline, capped at max_line_bytes
  bool partial_truncated = false;
  // A file first seen huge: at skip_at, reading goes on from skip_to.
  uint64_t skip_at = UINT64_MAX, skip_to = 0;
  bool sniffed = false;  // its first bytes were looked at (LooksLikeText)
  bool binary = false;   // not text: never read again
  ~Tracked() {
    if (fd >= 0) ::close(fd);
  }
};

namespace {
// Enough bytes to tell a copytruncate-and-rewrite apart from the file we left: log lines carry
// timestamps, so 64 bytes before the offset differ once the file was rewritten.
constexpr uint64_t kTailBytes = 64;

// How long the tailer waits after an inotify wake-up before it reads, so that the writes of
// many containers are read in one pass (the lag from a line to its metric stays well under 1 s).
constexpr int kCoalesceMs = 200;

// What WaitReadable() saw readable.
constexpr int kInotify = 1;
constexpr int kWoken = 2;

// Waits up to `left` for `inotify_fd` or `wake_fd` (either may be -1) to be readable; returns a
// mask of kInotify and kWoken, 0 on timeout, -1 on error (EINTR included: the caller loops).
int WaitReadable(int inotify_fd, int wake_fd, std::chrono::steady_clock::duration left) {
  pollfd p[2];
  nfds_t n = 0;
  int inotify_at = -1, wake_at = -1;
  if (inotify_fd >= 0) {
    inotify_at = static_cast<int>(n);
    p[n++] = {inotify_fd, POLLIN, 0};
  }
  if (wake_fd >= 0) {
    wake_at = static_cast<int>(n);
    p[n++] = {wake_fd, POLLIN, 0};
  }
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  const int r =
      ::poll(n == 0 ? nullptr : p, n, static_cast<int>(std::clamp<int64_t>(ms, 0, 60000)));
  if (r <= 0) return r;
  int mask = 0;
  if (inotify_at >= 0 && (p[inotify_at].revents & POLLIN) != 0) mask |= kInotify;
  if (wake_at >= 0 && (p[wake_at].revents & POLLIN) != 0) mask |= kWoken;
  return mask;
}

void WakeEventfd(int fd) {
  if (fd < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof(one));
}

void DrainEventfd(int fd) {
  uint64_t v;
  [[maybe_unused]] const ssize_t n = ::read(fd, &v, sizeof(v));
}

// Opens a log file for reading without updating its access time: the runtime keeps writing the
// file, so with relatime every read would otherwise dirty the inode (a journal write per read on
// ext4). O_NOATIME needs the file's owner or CAP_FOWNER; without them it is opened plainly.
// O_NONBLOCK and the check after: the scan saw a regular file, but a tenant can put a FIFO or
// a device in its place before the open, which would then block the tailer (a FIFO without a
// writer) or read forever (/dev/zero). Only regular files are kept. Files of what a tenant
// controls are opened beneath their volume with no symlink on the way (beneath.h): a directory
// swapped for a link into a Secret volume after the scan is not followed.
int OpenLog(const fs::path& path, const fs::path& beneath) {
  constexpr int kFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  auto open = [&](int flags) {
    return beneath.empty() ? ::open(path.c_str(), flags) : OpenBeneath(beneath, path, flags);
  };
  int fd = open(kFlags | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = open(kFlags);
  if (fd < 0) return fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}

uint64_t ThreadCpuNanoseconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// The regular files in `src`'s directory: listed beneath its volume where it has one (the
// tenant's tree, so a directory swapped for a link is not listed, and at most `max_entries`).
std::vector<fs::path> FilesBeside(const LogSource& src, size_t max_entries) {
  std::vector<fs::path> out;
  const fs::path dir = src.path.parent_path();
  if (!src.beneath.empty()) {
    for (const DirEntry& e : ListBeneath(src.beneath, dir, max_entries)) {
      if (e.is_file) out.push_back(dir / e.name);
    }
    return out;
  }
  std::error_code ec;
  for (auto f = fs::directory_iterator(dir, ec); !ec && f != fs::directory_iterator();
       f.increment(ec)) {
    out.push_back(f->path());
  }
  return out;
}

// The rotated files of a container log's run, oldest first. kubelet renames <N>.log to
// <N>.log.<YYYYMMDD-hhmmss> and compresses older ones to .gz: the names sort by time. Files of
// earlier restarts (<M>.log.*) belong to earlier runs. It compresses by writing <f>.tmp,
// renaming it to <f>.gz and then deleting <f>: in that window a file is there twice (or
// half-written); the uncompressed one is listed, never both.
std::vector<fs::path> RotatedFiles(const LogSource& src) {
  const std::string prefix = src.path.filename().string() + ".";
  std::vector<fs::path> rotated;
  std::error_code ec;
  for (auto f = fs::directory_iterator(src.path.parent_path(), ec);
       !ec && f != fs::directory_iterator(); f.increment(ec)) {
    const std::string name = f->path().filename().string();
    std::error_code ec2;
    if (name.starts_with(prefix) && f->is_regular_file(ec2) && !f->is_symlink(ec2)) {
      rotated.push_back(f->path());
    }
  }
  const std::set<fs::path> names(rotated.begin(), rotated.end());
  std::erase_if(rotated, [&](const fs::path& p) {
    return p.extension() == ".tmp" ||
           (p.extension() == ".gz" && names.contains(fs::path(p).replace_extension()));
  });
  std::sort(rotated.begin(), rotated.end());
  return rotated;
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}
}  // namespace

void LineSink::OnLines(const LogSource& source, uint64_t first_line_no, uint64_t count,
                       std::string_view block) {
  for (uint64_t i = 0; i < count && !block.empty(); ++i) {
    const size_t nl = block.find('\n');
    OnLine(source, first_line_no + i, block.substr(0, nl));
    block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
  }
}

std::string Tailer::TailAt(int fd, uint64_t offset) {
  const uint64_t start = offset > kTailBytes ? offset - kTailBytes : 0;
  std::string buf(offset - start, '\0');
  const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(start));
  if (n < 0) return {};
  buf.resize(static_cast<size_t>(n));
  return Hex(buf);
}

Tailer::Tailer(TailerOptions options, LineSink* sink, const common::Clock& clock)
    : options_(std::move(options)), sink_(sink), clock_(clock) {
  std::error_code ec;
  canonical_root_ = fs::weakly_canonical(options_.pod_log_root, ec);
}

Tailer::~Tailer() { Stop(); }

absl::Status Tailer::Start() {
  LoadCheckpoint();
  inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0)
    spdlog::warn("inotify unavailable; polling pod logs every {} ms",
                 options_.poll_interval.count());
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
  return absl::OkStatus();
}

void Tailer::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
    std::lock_guard lock(run_mu_);
    try {
      WriteCheckpoint();
    } catch (const std::exception& e) {
      ++counters_.internal_errors;
      spdlog::error("last checkpoint not written (internal error): {}", e.what());
    }
  }
  if (inotify_fd_ >= 0) {
    ::close(inotify_fd_);
    inotify_fd_ = -1;
  }
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
}

void Tailer::Run(const std::stop_token& stop) {
  // The fallback pass's interval: inotify reports everything it can see at once, so with it the
  // fallback only covers what it cannot (docs/limits.md, idle cost).
  const std::chrono::milliseconds interval =
      inotify_fd_ >= 0 ? std::max(options_.poll_interval, options_.rescan_interval)
                       : options_.poll_interval;
  ScanSchedule schedule(interval);
  // Stop() wakes the wait below through the eventfd instead of the wait polling for it.
  const std::stop_callback on_stop(stop, [this] { WakeEventfd(wake_fd_); });
  // At least one pass, even when stopped at once: a restart must catch up before it checkpoints.
  do {
    bool backlog = false;  // a file had more than read_chunk_bytes to read: no waiting
    const uint64_t read_before = counters_.bytes_read;
    const auto pass_start = clock_.Now();
    {
      std::lock_guard lock(run_mu_);
      // A directory walk costs far more than reading the files we follow: walk only when
      // inotify saw a file or directory come or go, and on the poll interval as a fallback,
      // and never more often than the walks' own cost allows (ScanSchedule).
      // Last resort: an exception here is a bug on some input; letting it end the thread would
      // end the agent, and a restart would read the same bytes again (a crash loop). The pass
      // is dropped, counted and logged, and the next one goes on.
      try {
        const bool walk = schedule.Due(clock_.Now());
        const uint64_t walked_ns = counters_.scan_nanoseconds;
        backlog = Pass(walk);
        if (walk) {
          schedule.Walked(clock_.Now(),
                          std::chrono::nanoseconds(counters_.scan_nanoseconds - walked_ns));
        }
      } catch (const std::exception& e) {
        if (counters_.internal_errors++ % 100 == 0) {
          spdlog::error("pod log pass failed (internal error {}): {}",
                        counters_.internal_errors.load(), e.what());
        }
      }
    }
    // The read budget: with a backlog, the next pass waits until this one's bytes are paid for
    // (every file gets its share of each pass, so a flood delays the others' lines by a pass,
    // not by its backlog).
    auto not_before = pass_start;
    if (backlog && options_.read_budget_bytes_per_second > 0) {
      const double secs = static_cast<double>(counters_.bytes_read - read_before) /
                          static_cast<double>(options_.read_budget_bytes_per_second);
      not_before += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(secs));
    }
    // Sleep until inotify reports, the next walk is due, the budget's wait is over, or Stop()
    // writes the eventfd: no timer of our own, so an idle agent wakes once per fallback interval
    // and not ten times a second (it did, and an idle agent cost three times what it does now).
    // The wait is cut at that interval so a test clock moved forward is seen within one.
    while (!stop.stop_requested()) {
      auto deadline = schedule.NextWake();
      if (backlog) deadline = std::min(deadline, not_before);
      // What the sink waits for (a grace period's end); one already due at the pass that just
      // ran is not waited for again (no busy loop on a sink that keeps answering the past).
      if (const auto due = sink_->NextDue(); due && *due > pass_start) {
        deadline = std::min(deadline, *due);
      }
      const auto now = clock_.Now();
      if (now >= deadline) break;
      const auto left = std::min<std::chrono::steady_clock::duration>(deadline - now, interval);
      const int r = WaitReadable(inotify_fd_, wake_fd_, left);
      if (r <= 0) continue;
      if ((r & kWoken) != 0) DrainEventfd(wake_fd_);
      if ((r & kInotify) == 0) continue;
      alignas(inotify_event) char buf[64 * 1024];
      ssize_t n;
      while ((n = ::read(inotify_fd_, buf, sizeof(buf))) > 0) {
        for (char* e = buf; e < buf + n;) {
          const auto* ev = reinterpret_cast<const inotify_event*>(e);
          if ((ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                           IN_Q_OVERFLOW)) != 0) {
            schedule.Ask();
          }
          if ((ev->mask & IN_IGNORED) != 0) {
            // The directory is gone and so is its watch: a new one of that name needs a new one.
            std::lock_guard lock(run_mu_);
            if (auto w = watches_.find(ev->wd); w != watches_.end()) {
              watched_.erase(w->second.string());
              watches_.erase(w);
            }
          }
          e += sizeof(inotify_event) + ev->len;
        }
      }
      // Coalesce a burst of writes into one pass: at most ~5 passes a second however many
      // containers write, and still well under a second of lag. Each pass costs a read per
      // written file and a verdict per changed container, so with many busy containers the pass
      // rate, not the line rate, sets most of the agent's CPU (bench/pod_logs.sh). Stop() cuts
      // the wait short.
      if (!backlog && WaitReadable(-1, wake_fd_, std::chrono::milliseconds(kCoalesceMs)) > 0) {
        DrainEventfd(wake_fd_);
      }
      if (backlog && clock_.Now() < not_before) continue;  // the budget's wait goes on
      break;
    }
  } while (!stop.stop_requested());
}

bool Tailer::PollOnce() { return Pass(true); }

bool Tailer::Pass(bool scan) {
  if (scan) {
    // The walk's cost is this thread's CPU time, not wall time: a walk preempted on a busy node
    // cost the node nothing more, and must not hold the next one off (ScanSchedule).
    const uint64_t start = ThreadCpuNanoseconds();
    Scan();
    ++counters_.scans;
    counters_.scan_nanoseconds += ThreadCpuNanoseconds() - start;
  }
  bool backlog = false;
  for (auto& [path, t] : tracked_) backlog = ReadFile(*t, false) || backlog;
  sink_->OnPassComplete();
  if (!options_.state_file.empty() && (checkpoint_due_ || clock_.Now() >= next_checkpoint_)) {
    checkpoint_due_ = false;
    WriteCheckpoint();
    next_checkpoint_ = clock_.Now() + options_.checkpoint_interval;
  }
  return backlog;
}

bool Tailer::InsideRoot(const fs::path& p) const {
  std::error_code ec;
  const fs::path real = fs::canonical(p, ec);
  if (ec) return false;
  auto r = real.lexically_relative(canonical_root_);
  return !r.empty() && *r.begin() != "..";
}

void Tailer::WatchDir(const fs::path& dir) {
  if (inotify_fd_ < 0 || watched_.contains(dir.string())) return;
  // IN_DONT_FOLLOW: a watched directory a tenant swapped for a link is not watched through it.
  const int wd = inotify_add_watch(inotify_fd_, dir.c_str(),
                                   IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                       IN_CLOSE_WRITE | IN_DELETE_SELF | IN_DONT_FOLLOW);
  if (wd >= 0) {
    watches_[wd] = dir;
    watched_.insert(dir.string());
  }
}

void Tailer::Scan() {
  Discovered d;
  WatchDir(options_.pod_log_root);
  // <root>/<ns>_<pod>_<uid>/<container>/<N>.log
  std::error_code ec;
  for (auto pod = fs::directory_iterator(options_.pod_log_root, ec);
       options_.container_logs && !ec && pod != fs::directory_iterator(); pod.increment(ec)) {
    std::error_code ec2;
    if (!pod->is_directory(ec2) || pod->is_symlink(ec2)) continue;
    WatchDir(pod->path());
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
      WatchDir(ctr->path());
      ScanContainerDir(ctr->path(), d);
    }
  }
  for (const auto& pattern : options_.globs) ScanGlob(pattern, d);
  ScanVolumes(d);
  for (const auto& src : d.found) Track(src);
  DropGone(d);
  PruneSideTables();
  counters_.files_watched = tracked_.size();
}

void Tailer::ScanContainerDir(const fs::path& dir, Discovered& d) {
  std::error_code ec;
  for (auto f = fs::directory_iterator(dir, ec); !ec && f != fs::directory_iterator();
       f.increment(ec)) {
    auto src = ClassifyCriPath(options_.pod_log_root, f->path());
    if (!src) continue;
    std::error_code ec2;
    if (f->is_symlink(ec2) && !InsideRoot(f->path())) {
      if (!tracked_.contains(f->path().string()) && !refused_.contains(f->path().string())) {
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

void Tailer::ScanGlob(const std::string& pattern, Discovered& d) {
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
    if (tracked_.contains(src.path.string())) {
      found.push_back(std::move(src));
    } else if (over_cap_.insert(src.path.string()).second) {
      ++counters_.files_over_cap;
    }
  }
  for (LogSource& src : found) {
    d.live.insert(src.path.string());
    WatchDir(src.path.parent_path());
    d.found.push_back(std::move(src));
  }
}

void Tailer::ScanVolumes(Discovered& d) {
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
  for (const auto& dir : scan.dirs) WatchDir(dir);
  for (const auto& dir : scan.live_dirs) d.live_dirs.insert(dir.string());
  for (auto& f : scan.files) {
    d.live.insert(f.path.string());
    d.found.push_back(std::move(f));
  }
}

bool Tailer::VolumePodGone(const LogSource& src) const {
  std::error_code ec;
  const std::string log_dir = src.namespace_name + "_" + src.pod + "_" + src.uid;
  if (!fs::exists(options_.pod_log_root / log_dir, ec)) return true;
  return src.origin == Origin::kPodVolume &&
         !fs::exists(options_.volumes.volume_root / src.uid, ec);
}

void Tailer::Track(const LogSource& src) {
  const std::string key = src.path.string();
  auto it = tracked_.find(key);
  struct stat st {};
  if (::stat(key.c_str(), &st) != 0) return;
  if (it == tracked_.end()) {
    if (tracked_.size() >= options_.max_files) {
      if (over_cap_.insert(key).second) ++counters_.files_over_cap;
      return;
    }
    OpenTracked(src, true);
  } else if (static_cast<uint64_t>(st.st_ino) != it->second->ino ||
             static_cast<uint64_t>(st.st_dev) != it->second->dev) {
    // Rename-and-create rotation: finish the old file through our open descriptor, then
    // start the new one from its first byte. Line numbers continue.
    ReadFile(*it->second, true);
    const uint64_t line_no = it->second->line_no;
    tracked_.erase(it);
    ++counters_.rotations;
    checkpoint_due_ = true;
    OpenTracked(src, false);
    if (auto n = tracked_.find(key); n != tracked_.end()) n->second->line_no = line_no;
  }
}

void Tailer::DropGone(const Discovered& d) {
  std::error_code ec;
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    if (d.live.contains(it->first)) {
      ++it;
      continue;
    }
    // Renamed away without a successor yet, or deleted: drain what is left. When the
    // container's directory is gone too, the source is gone.
    ReadFile(*it->second, true);
    const LogSource& gone = it->second->source;
    if (gone.origin == Origin::kPodVolume || gone.origin == Origin::kContainerRootfs) {
      // A file of the current session that vanished was renamed by Ray's rotation: keep it
      // until its successor comes (Track). Anything else (an older session, a file over the
      // pod's cap, a deleted pod) is closed here.
      if (!fs::exists(gone.path, ec) && d.live_dirs.contains(gone.path.parent_path().string()) &&
          !VolumePodGone(gone)) {
        ++it;
        continue;
      }
      if (VolumePodGone(gone)) {
        sink_->OnSourceGone(gone);
      } else if (d.live_dirs.contains(gone.path.parent_path().string())) {
        // Left for newer files of its session (the pod's cap): if it is written again and
        // comes back, it goes on from here instead of being counted twice.
        const Tracked& t = *it->second;
        const uint64_t offset = t.offset - t.partial.size();
        resume_[it->first] = Resume{t.dev, t.ino, offset, t.line_no, TailAt(t.fd, offset)};
      }
      it = tracked_.erase(it);
      continue;
    }
    if (!fs::exists(gone.format == Format::kCri ? gone.path.parent_path() : gone.path, ec)) {
      sink_->OnSourceGone(it->second->source);
      it = tracked_.erase(it);
    } else if (struct stat st{}; ::fstat(it->second->fd, &st) == 0 && st.st_nlink == 0) {
      // Unlinked (kubelet removes the log of an older restart of the container) and drained
      // above: holding it open would keep its disk space and an fd for as long as the
      // container's directory lives, one more per restart under CrashLoopBackOff. A file that
      // was only renamed (rotation) still has a link and waits for its successor.
      ++counters_.deleted_files_closed;
      it = tracked_.erase(it);
    } else {
      ++it;
    }
  }
}

void Tailer::OpenTracked(const LogSource& src, bool allow_resume) {
  const std::string key = src.path.string();
  const int fd = OpenLog(src.path, src.beneath);
  if (fd < 0) {
    if (refused_.insert(key).second) {
      ++counters_.files_refused;
      spdlog::warn("cannot open {}: {}", key, std::strerror(errno));
    }
    return;
  }
  struct stat st {};
  ::fstat(fd, &st);
  auto t = std::make_unique<Tracked>();
  t->source = src;
  t->fd = fd;
  t->dev = st.st_dev;
  t->ino = st.st_ino;
  if (allow_resume) {
    if (auto r = resume_.find(key); r != resume_.end()) {
      if (r->second.dev == t->dev && r->second.ino == t->ino) {
        // Same file. If it was truncated and rewritten while we were down (copytruncate), the
        // bytes before our offset changed: start again from the top.
        t->line_no = r->second.line_no;
        if (r->second.offset <= static_cast<uint64_t>(st.st_size) &&
            TailAt(fd, r->second.offset) == r->second.tail) {
          t->offset = r->second.offset;
        } else {
          ++counters_.truncations;
        }
      } else {
        // Rotated while we were down: the old file may still be beside the new one under its
        // rotated name; finish it from the checkpointed offset first.
        for (const fs::path& f : FilesBeside(src, options_.volumes.max_dir_entries)) {
          struct stat os {};
          if (::lstat(f.c_str(), &os) == 0 && static_cast<uint64_t>(os.st_ino) == r->second.ino &&
              static_cast<uint64_t>(os.st_dev) == r->second.dev) {
            Tracked old;
            old.source = src;
            old.fd = OpenLog(f, src.beneath);
            old.offset = r->second.offset;
            old.line_no = r->second.line_no;
            if (old.fd >= 0) ReadFile(old, true);
            t->line_no = old.line_no;
            ++counters_.rotations;
            // Rotated more than once while we were down: the files rotated after it hold the
            // lines between it and the live file.
            if (src.origin == Origin::kContainerLog) ReadRotatedAfter(*t, f);
            break;
          }
        }
      }
      resume_.erase(r);
    } else {
      if (src.origin == Origin::kContainerLog && options_.history_bytes > 0) ReadHistory(*t);
      // First sight of a huge file (a tenant's, or a log of days): its head and its tail.
      const auto size = static_cast<uint64_t>(st.st_size);
      if (options_.first_read_max_bytes > 0 && size > options_.first_read_max_bytes &&
          size > options_.head_bytes + options_.tail_bytes) {
        t->skip_at = options_.head_bytes;
        t->skip_to = size - options_.tail_bytes;
      }
    }
  }
  tracked_[key] = std::move(t);
}

void Tailer::ReadHistory(Tracked& t) {
  const std::vector<fs::path> rotated = RotatedFiles(t.source);
  // Oldest first: NCCL's init lines are at the start of the run. Over the budget, the newer
  // rotated files are left out rather than the older ones.
  uint64_t budget = options_.history_bytes;
  uint64_t files = 0;
  for (const fs::path& p : rotated) {
    if (budget == 0) break;
    Tracked old;
    old.source = t.source;
    old.line_no = t.line_no;
    old.fd = OpenLog(p, old.source.beneath);
    if (old.fd < 0) continue;
    const uint64_t before = counters_.bytes_read;
    if (p.extension() == ".gz") {
      ReadGzip(old, budget);
    } else {
      struct stat st {};
      if (::fstat(old.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) > budget) break;
      ReadFile(old, true);
    }
    budget -= std::min(budget, counters_.bytes_read - before);
    t.line_no = old.line_no;
    ++files;
  }
  if (files > 0) {
    counters_.history_files_read += files;
    checkpoint_due_ = true;
    spdlog::info("read {} rotated file(s) of {} first: {} bytes of its history", files,
                 t.source.path.string(), options_.history_bytes - budget);
  }
}

void Tailer::ReadRotatedAfter(Tracked& t, const fs::path& last_read) {
  const std::string after = last_read.filename().string();
  for (const fs::path& p : RotatedFiles(t.source)) {
    if (p.filename().string() <= after) continue;
    Tracked old;
    old.source = t.source;
    old.line_no = t.line_no;
    old.fd = OpenLog(p, old.source.beneath);
    if (old.fd < 0) continue;
    if (p.extension() == ".gz") {
      ReadGzip(old, UINT64_MAX);
    } else {
      ReadFile(old, true);
    }
    t.line_no = old.line_no;
    ++counters_.rotations;
    checkpoint_due_ = true;
  }
}

void Tailer::ReadGzip(Tracked& t, uint64_t budget) {
  // gzdopen takes the descriptor over: gzclose closes it.
  gzFile gz = gzdopen(t.fd, "rb");
  t.fd = -1;
  if (gz == nullptr) return;
  std::vector<char> buf(256 * 1024);
  while (budget > 0) {
    const unsigned want = static_cast<unsigned>(std::min<uint64_t>(buf.size(), budget));
    const int n = gzread(gz, buf.data(), want);
    if (n <= 0) break;  // the end, or a corrupt or cut file: what was read stands
    budget -= static_cast<uint64_t>(n);
    counters_.bytes_read += static_cast<uint64_t>(n);
    Deliver(t, std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  gzclose(gz);
}

bool Tailer::ReadFile(Tracked& t, bool to_eof) {
  static thread_local std::vector<char> buf(256 * 1024);
  if (t.binary) return false;
  size_t budget = to_eof ? SIZE_MAX : options_.read_chunk_bytes;
  // Read first, fstat only when nothing came: a file with new bytes is at least as long as our
  // offset, so only an empty read can mean copytruncate. A busy file then costs one pread per
  // pass instead of fstat, pread and the pread that finds the end.
  bool checked_size = false;
  while (budget > 0) {
    if (t.offset >= t.skip_at) {
      SkipTo(t, t.skip_to, counters_.skipped_oversized);
      t.skip_at = UINT64_MAX;
    }
    const size_t want = std::min(buf.size(), budget);
    const uint64_t at = t.offset;
    const ssize_t n = ::pread(t.fd, buf.data(), want, static_cast<off_t>(at));
    if (n < 0) return false;
    if (n == 0) {
      if (checked_size) break;
      checked_size = true;
      struct stat st {};
      if (::fstat(t.fd, &st) != 0) break;
      if (static_cast<uint64_t>(st.st_size) >= t.offset) break;
      // copytruncate: the file was cut under us; what follows starts at 0.
      ++counters_.truncations;
      t.offset = 0;
      t.partial.clear();
      t.partial_truncated = false;
      continue;
    }
    // A hole reads as NUL bytes, and no text line starts with one: only then is it worth
    // asking the file system where the data is.
    if (buf[0] == '\0' && SkipHole(t, at)) continue;
    size_t got = static_cast<size_t>(n);
    if (buf[got - 1] == '\0') {
      // Ends in NUL bytes: maybe a hole begins inside this read. Text stops where it starts;
      // the next read, at the hole, skips it.
      const off_t hole = ::lseek(t.fd, static_cast<off_t>(at), SEEK_HOLE);
      if (hole > static_cast<off_t>(at) && static_cast<uint64_t>(hole) < at + got) {
        got = static_cast<size_t>(static_cast<uint64_t>(hole) - at);
      }
    }
    const std::string_view data(buf.data(), got);
    if (!t.sniffed && !LooksLikeText(t, data)) return false;
    t.offset += got;
    budget -= std::min(budget, got);
    counters_.bytes_read += got;
    Deliver(t, data);
    // A short read of a regular file is its end for now; what is written next is read on the
    // next pass.
    if (static_cast<size_t>(n) < want) break;
  }
  if (budget != 0) return false;
  // More to read than one pass gives a file. Written faster than the budget lets the agent
  // read it, the backlog would grow for as long as the writer goes on: beyond a bound, what
  // is behind the last tail_bytes is skipped.
  if (struct stat st{}; options_.max_backlog_bytes > 0 && ::fstat(t.fd, &st) == 0 &&
                        static_cast<uint64_t>(st.st_size) > t.offset + options_.max_backlog_bytes) {
    SkipTo(t, static_cast<uint64_t>(st.st_size) - options_.tail_bytes, counters_.skipped_budget);
  }
  return true;
}

void Tailer::SkipTo(Tracked& t, uint64_t to, std::atomic<uint64_t>& why) {
  if (to <= t.offset) return;
  why += to - t.offset;
  t.offset = to;
  // A line begun before the jump never ends; the bytes up to the next newline after it read as
  // one (cut) line.
  t.partial.clear();
}

bool Tailer::SkipHole(Tracked& t, uint64_t at) {
  const off_t data = ::lseek(t.fd, static_cast<off_t>(at), SEEK_DATA);
  if (data >= 0 && static_cast<uint64_t>(data) == at) return false;  // real NUL bytes
  uint64_t to = static_cast<uint64_t>(data);
  if (data < 0) {
    // ENXIO: no data after `at`, the file ends in a hole. Other errors (a file system without
    // SEEK_DATA answers EINVAL): read on.
    struct stat st {};
    if (errno != ENXIO || ::fstat(t.fd, &st) != 0) return false;
    to = static_cast<uint64_t>(st.st_size);
  }
  SkipTo(t, to, counters_.skipped_hole);
  return true;
}

bool Tailer::LooksLikeText(Tracked& t, std::string_view first) {
  t.sniffed = true;
  // Logs are text (UTF-8, tabs, ANSI colour codes): bytes below 0x20 other than \t \n \r and
  // ESC are rare. A file whose first 4 KiB are a tenth such bytes is something else (a core
  // dump, a checkpoint, a database) that merely has a log's name.
  // NUL bytes that end the window are the zero fill before a hole (a page is allocated
  // whole), not content.
  std::string_view head = first.substr(0, 4096);
  while (!head.empty() && head.back() == '\0') head.remove_suffix(1);
  size_t control = 0;
  for (const unsigned char c : head) {
    control += c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != 0x1b;
  }
  if (control * 10 <= head.size()) return true;
  t.binary = true;
  struct stat st {};
  const uint64_t size = ::fstat(t.fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : t.offset;
  SkipTo(t, std::max(size, t.offset), counters_.skipped_binary);
  spdlog::info("not reading {}: not text ({} of its first {} bytes are control bytes)",
               t.source.path.string(), control, head.size());
  return false;
}

void Tailer::Deliver(Tracked& t, std::string_view data) {
  // Whole lines inside the buffer are handed over in runs, without a copy; a line started in an
  // earlier read or longer than max_line_bytes goes through `partial`.
  const char* run = nullptr;  // start of the current run of whole lines
  uint64_t run_lines = 0;
  auto flush = [&](const char* end) {
    if (run_lines == 0) return;
    sink_->OnLines(t.source, t.line_no - run_lines + 1, run_lines,
                   std::string_view(run, static_cast<size_t>(end - run)));
    run_lines = 0;
  };
  while (!data.empty()) {
    const size_t nl = data.find('\n');
    const std::string_view piece = data.substr(0, nl);
    if (nl != std::string_view::npos && t.partial.empty() &&
        piece.size() <= options_.max_line_bytes) {
      if (run_lines == 0) run = data.data();
      ++run_lines;
      ++t.line_no;
      ++counters_.lines_read;
      data.remove_prefix(nl + 1);
      continue;
    }
    flush(data.data());
    if (t.partial.size() + piece.size() > options_.max_line_bytes) {
      t.partial.append(piece.substr(0, options_.max_line_bytes - t.partial.size()));
      t.partial_truncated = true;
    } else {
      t.partial.append(piece);
    }
    if (nl == std::string_view::npos) return;
    ++t.line_no;
    ++counters_.lines_read;
    if (t.partial_truncated) ++counters_.lines_truncated;
    sink_->OnLine(t.source, t.line_no, t.partial);
    t.partial.clear();
    t.partial_truncated = false;
    data.remove_prefix(nl + 1);
  }
  flush(data.data());
}

void Tailer::WriteCheckpoint() {
  if (options_.state_file.empty()) return;
  nlohmann::json j;
  j["version"] = 1;
  // The offset saved is that of the last complete line delivered, so a partial line is read
  // again, whole, after a restart.
  for (const auto& [path, t] : tracked_) {
    const uint64_t offset = t->offset - t->partial.size();
    j["files"].push_back({{"path", path},
                          {"dev", t->dev},
                          {"ino", t->ino},
                          {"offset", offset},
                          {"line_no", t->line_no},
                          {"tail", TailAt(t->fd, offset)}});
  }
  for (const auto& [path, r] : resume_) {  // not yet seen again: keep for later
    j["files"].push_back({{"path", path},
                          {"dev", r.dev},
                          {"ino", r.ino},
                          {"offset", r.offset},
                          {"line_no", r.line_no},
                          {"tail", r.tail}});
  }
  j["counters"] = {{"bytes_read", counters_.bytes_read.load()},
                   {"lines_read", counters_.lines_read.load()},
                   {"rotations", counters_.rotations.load()},
                   {"truncations", counters_.truncations.load()},
                   {"lines_truncated", counters_.lines_truncated.load()}};
  j["sink"] = sink_->Checkpoint();
  // Paths are bytes: a name that is not UTF-8 is written with U+FFFD rather than throwing.
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // The same state as the last one written (an idle agent's, every checkpoint interval): not
  // written and fsynced again. Its hash, not a copy: the text holds a tail per file followed.
  const size_t hash = std::hash<std::string>{}(text) | 1;  // never 0, which means "none yet"
  if (hash == last_checkpoint_hash_) {
    ++counters_.checkpoints_unchanged;
    return;
  }
  const std::string tmp = options_.state_file.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      // Counted (and alerted on: EfawatchCheckpointWritesFailing): a warning every
      // --checkpoint interval in a log nobody reads hid that a restart would lose our place.
      ++counters_.checkpoint_write_failures;
      spdlog::warn("cannot write checkpoint {}", tmp);
      return;
    }
  }
  // fsync before rename: after a crash the state file is the old one or the new one, whole.
  if (int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  std::error_code ec;
  fs::rename(tmp, options_.state_file, ec);
  if (ec) {
    ++counters_.checkpoint_write_failures;
    spdlog::warn("cannot rename checkpoint {} to {}: {}", tmp, options_.state_file.string(),
                 ec.message());
    return;
  }
  last_checkpoint_hash_ = hash;
  ++counters_.checkpoint_writes;
}

void Tailer::SetCheckpointAside(std::string_view why) {
  ++counters_.checkpoints_set_aside;
  const fs::path bad = options_.state_file.string() + ".bad";
  std::error_code ec;
  fs::rename(options_.state_file, bad, ec);
  spdlog::warn("checkpoint {} {}; set aside as {}; starting from the beginning of every log",
               options_.state_file.string(), why, bad.string());
}

void Tailer::LoadCheckpoint() {
  if (options_.state_file.empty()) return;
  std::ifstream in(options_.state_file);
  if (!in) return;
  const auto j = nlohmann::json::parse(in, nullptr, false);
  in.close();
  // The shape is checked whole before anything is restored: a damaged checkpoint costs the
  // counts it held, never the agent, and half of one is never taken.
  using K = JsonKind;
  if (j.is_discarded()) return SetCheckpointAside("is not JSON (cut short?)");
  if (!HasShape(j, {{"files", K::kArray}, {"counters", K::kObject}, {"sink", K::kString}}) ||
      (j.contains("files") && !AllHaveShape(j["files"], {{"path", K::kString},
                                                         {"dev", K::kUnsigned},
                                                         {"ino", K::kUnsigned},
                                                         {"offset", K::kUnsigned},
                                                         {"line_no", K::kUnsigned},
                                                         {"tail", K::kString}})) ||
      (j.contains("counters") && !HasShape(j["counters"], {{"bytes_read", K::kUnsigned},
                                                           {"lines_read", K::kUnsigned},
                                                           {"rotations", K::kUnsigned},
                                                           {"truncations", K::kUnsigned},
                                                           {"lines_truncated", K::kUnsigned}}))) {
    return SetCheckpointAside("has fields of the wrong type");
  }
  const std::string sink_state = JsonString(j, "sink");
  if (!sink_->CheckpointValid(sink_state)) return SetCheckpointAside("has a damaged sink state");
  if (const auto files = j.find("files"); files != j.end()) {
    for (const auto& f : *files) {
      resume_[JsonString(f, "path")] =
          Resume{JsonUint(f, "dev"), JsonUint(f, "ino"), JsonUint(f, "offset"),
                 JsonUint(f, "line_no"), JsonString(f, "tail")};
    }
  }
  const nlohmann::json c = j.value("counters", nlohmann::json::object());
  counters_.bytes_read = JsonUint(c, "bytes_read");
  counters_.lines_read = JsonUint(c, "lines_read");
  counters_.rotations = JsonUint(c, "rotations");
  counters_.truncations = JsonUint(c, "truncations");
  counters_.lines_truncated = JsonUint(c, "lines_truncated");
  sink_->Restore(sink_state);
}

void Tailer::PruneSideTables() {
  // Each table is keyed by a file path; once the file's directory is gone (the pod was
  // deleted) no scan can report that path again, so the entry would only grow the table.
  auto prune = [](auto& table, auto key_of) {
    std::error_code ec;
    for (auto it = table.begin(); it != table.end();) {
      const fs::path p = key_of(*it);
      it = fs::exists(p.parent_path(), ec) ? std::next(it) : table.erase(it);
    }
  };
  prune(refused_, [](const std::string& k) { return fs::path(k); });
  prune(over_cap_, [](const std::string& k) { return fs::path(k); });
  prune(truncated_dirs_, [](const std::string& k) { return fs::path(k) / "."; });
  prune(resume_, [](const auto& kv) { return fs::path(kv.first); });
}

}  // namespace efawatch::logs
