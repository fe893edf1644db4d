// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/file_follower.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "daemon/logs/beneath.h"
#include "spdlog/spdlog.h"

namespace efawatch::logs {
namespace fs = std::filesystem;

namespace {
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
}  // namespace

// Opened without updating its access time: the runtime keeps writing the file, so with relatime
// every read would otherwise dirty the inode (a journal write per read on ext4). O_NOATIME needs
// the file's owner or CAP_FOWNER; without them it is opened plainly.
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

absl::Status FileFollower::Track(const LogSource& src) {
  const std::string key = src.path.string();
  auto it = files_.find(key);
  struct stat st {};
  if (::stat(key.c_str(), &st) != 0) return absl::OkStatus();
  if (it == files_.end()) {
    if (files_.size() >= options_.max_files) {
      return absl::ResourceExhaustedError("max_files are followed");
    }
    return Open(src, true);
  }
  if (static_cast<uint64_t>(st.st_ino) == it->second->ino &&
      static_cast<uint64_t>(st.st_dev) == it->second->dev) {
    return absl::OkStatus();
  }
  // Rename-and-create rotation: finish the old file through our open descriptor, then start the
  // new one from its first byte. Line numbers continue.
  reader_.Read(*it->second, true);
  const uint64_t line_no = it->second->line_no;
  files_.erase(it);
  ++counters_.rotations;
  checkpoint_due_ = true;
  absl::Status opened = Open(src, false);
  if (auto n = files_.find(key); n != files_.end()) n->second->line_no = line_no;
  return opened;
}

bool FileFollower::ReadAll() {
  bool backlog = false;
  for (auto& [path, t] : files_) backlog = reader_.Read(*t, false) || backlog;
  return backlog;
}

// Both erase through an iterator: `path` may be the map's own key.
void FileFollower::Close(const std::string& path) {
  if (auto it = files_.find(path); it != files_.end()) files_.erase(it);
}

void FileFollower::Park(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return;
  const TrackedFile& t = *it->second;
  const uint64_t offset = t.LineStart();
  resume_[it->first] = ResumePoint{t.dev, t.ino, offset, t.line_no, TailAt(t.fd, offset)};
  files_.erase(it);
}

void FileFollower::Restore(const std::vector<std::pair<std::string, ResumePoint>>& files) {
  for (const auto& [path, r] : files) resume_[path] = r;
}

std::vector<std::pair<std::string, ResumePoint>> FileFollower::ResumePoints() const {
  std::vector<std::pair<std::string, ResumePoint>> out;
  out.reserve(files_.size() + resume_.size());
  // The offset saved is that of the last complete line delivered, so a partial line is read
  // again, whole, after a restart.
  for (const auto& [path, t] : files_) {
    const uint64_t offset = t->LineStart();
    out.emplace_back(path, ResumePoint{t->dev, t->ino, offset, t->line_no, TailAt(t->fd, offset)});
  }
  for (const auto& [path, r] : resume_) out.emplace_back(path, r);  // not yet seen again
  return out;
}

void FileFollower::PruneResumePoints() {
  std::error_code ec;
  for (auto it = resume_.begin(); it != resume_.end();) {
    it = fs::exists(fs::path(it->first).parent_path(), ec) ? std::next(it) : resume_.erase(it);
  }
}

absl::Status FileFollower::Open(const LogSource& src, bool allow_resume) {
  const int fd = OpenLog(src.path, src.beneath);
  if (fd < 0) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error), std::strerror(error));
  }
  struct stat st {};
  ::fstat(fd, &st);
  auto t = std::make_unique<TrackedFile>();
  t->source = src;
  t->fd = fd;
  t->dev = st.st_dev;
  t->ino = st.st_ino;
  if (allow_resume) {
    const auto size = static_cast<uint64_t>(st.st_size);
    if (auto r = resume_.find(src.path.string()); r != resume_.end()) {
      ResumeAt(*t, r->second, size);
      resume_.erase(r);
    } else {
      FirstSight(*t, size);
    }
  }
  files_[src.path.string()] = std::move(t);
  return absl::OkStatus();
}

void FileFollower::ResumeAt(TrackedFile& t, const ResumePoint& r, uint64_t size) {
  if (r.dev == t.dev && r.ino == t.ino) {
    // Same file. If it was truncated and rewritten while we were down (copytruncate), the
    // bytes before our offset changed: start again from the top.
    t.line_no = r.line_no;
    if (r.offset <= size && TailAt(t.fd, r.offset) == r.tail) {
      t.offset = r.offset;
    } else {
      ++counters_.truncations;
    }
    return;
  }
  // Rotated while we were down: the old file may still be beside the new one under its rotated
  // name; finish it from the checkpointed offset first.
  for (const fs::path& f : FilesBeside(t.source, options_.volumes.max_dir_entries)) {
    struct stat os {};
    if (::lstat(f.c_str(), &os) == 0 && static_cast<uint64_t>(os.st_ino) == r.ino &&
        static_cast<uint64_t>(os.st_dev) == r.dev) {
      TrackedFile old;
      old.source = t.source;
      old.fd = OpenLog(f, t.source.beneath);
      old.offset = r.offset;
      old.line_no = r.line_no;
      if (old.fd >= 0) reader_.Read(old, true);
      t.line_no = old.line_no;
      ++counters_.rotations;
      // Rotated more than once while we were down: the files rotated after it hold the lines
      // between it and the live file.
      if (t.source.origin == Origin::kContainerLog) ReadRotatedAfter(t, f);
      break;
    }
  }
}

void FileFollower::FirstSight(TrackedFile& t, uint64_t size) {
  if (t.source.origin == Origin::kContainerLog && options_.history_bytes > 0) ReadHistory(t);
  // First sight of a huge file (a tenant's, or a log of days): its head and its tail.
  if (options_.first_read_max_bytes > 0 && size > options_.first_read_max_bytes &&
      size > options_.head_bytes + options_.tail_bytes) {
    t.skip_at = options_.head_bytes;
    t.skip_to = size - options_.tail_bytes;
  }
}

void FileFollower::ReadHistory(TrackedFile& t) {
  const std::vector<fs::path> rotated = RotatedFiles(t.source);
  // Oldest first: NCCL's init lines are at the start of the run. Over the budget, the newer
  // rotated files are left out rather than the older ones.
  uint64_t budget = options_.history_bytes;
  uint64_t files = 0;
  for (const fs::path& p : rotated) {
    if (budget == 0) break;
    TrackedFile old;
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
      reader_.Read(old, true);
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

void FileFollower::ReadRotatedAfter(TrackedFile& t, const fs::path& last_read) {
  const std::string after = last_read.filename().string();
  for (const fs::path& p : RotatedFiles(t.source)) {
    if (p.filename().string() <= after) continue;
    TrackedFile old;
    old.source = t.source;
    old.line_no = t.line_no;
    old.fd = OpenLog(p, old.source.beneath);
    if (old.fd < 0) continue;
    if (p.extension() == ".gz") {
      ReadGzip(old, UINT64_MAX);
    } else {
      reader_.Read(old, true);
    }
    t.line_no = old.line_no;
    ++counters_.rotations;
    checkpoint_due_ = true;
  }
}

void FileFollower::ReadGzip(TrackedFile& t, uint64_t budget) {
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
    reader_.Deliver(t, std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  gzclose(gz);
}

}  // namespace efawatch::logs
