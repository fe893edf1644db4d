// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/beneath.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace efawatch::logs {
namespace fs = std::filesystem;

namespace {

// The path below `root`, component by component; empty with errno EXDEV when it is not below.
std::vector<std::string> Below(const fs::path& root, const fs::path& path) {
  const fs::path rel = path.lexically_normal().lexically_relative(root.lexically_normal());
  std::vector<std::string> parts;
  for (const auto& p : rel) {
    if (p.empty() || p == ".") continue;
    if (p == "..") {
      parts.clear();
      break;
    }
    parts.push_back(p.string());
  }
  if (parts.empty()) errno = EXDEV;
  return parts;
}

// One openat(O_NOFOLLOW) per component: a link anywhere fails with ELOOP (or ENOTDIR).
int OpenByComponents(int root_fd, const std::vector<std::string>& parts, int flags) {
  int dir = ::dup(root_fd);
  for (size_t i = 0; dir >= 0 && i + 1 < parts.size(); ++i) {
    const int next = ::openat(dir, parts[i].c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int saved = errno;
    ::close(dir);
    errno = saved;
    dir = next;
  }
  if (dir < 0) return -1;
  const int fd = ::openat(dir, parts.back().c_str(), flags | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  const int saved = errno;
  ::close(dir);
  errno = saved;
  return fd;
}

}  // namespace

int OpenBeneath(const fs::path& root, const fs::path& path, int flags) {
  const std::vector<std::string> parts = Below(root, path);
  if (parts.empty()) return -1;
  const int root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return -1;
  std::string rel;
  for (const auto& p : parts) rel += (rel.empty() ? "" : "/") + p;
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof(how)));
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
    // An older kernel (or a seccomp filter that refuses openat2): the same, by hand. With
    // O_DIRECTORY | O_NOFOLLOW a link in place of a directory fails (ENOTDIR), and O_NOFOLLOW
    // on the last component fails on a link (ELOOP).
    fd = OpenByComponents(root_fd, parts, flags);
  }
  const int saved = errno;
  ::close(root_fd);
  errno = saved;
  return fd;
}

std::vector<DirEntry> ListBeneath(const fs::path& root, const fs::path& dir, size_t max_entries,
                                  bool* truncated) {
  std::vector<DirEntry> out;
  if (truncated != nullptr) *truncated = false;
  int fd = -1;
  if (dir.lexically_normal() == root.lexically_normal()) {
    fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } else {
    fd = OpenBeneath(root, dir, O_DIRECTORY);
  }
  if (fd < 0) return out;
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    ::close(fd);
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (out.size() >= max_entries) {
      if (truncated != nullptr) *truncated = true;
      break;
    }
    DirEntry entry{.name = std::string(name)};
    unsigned char type = e->d_type;
    if (type == DT_UNKNOWN) {
      // Some file systems leave the type to a stat, which must not follow a link either.
      struct stat st {};
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        type = S_ISDIR(st.st_mode)   ? DT_DIR
               : S_ISREG(st.st_mode) ? DT_REG
               : S_ISLNK(st.st_mode) ? DT_LNK
                                     : DT_UNKNOWN;
      }
    }
    entry.is_dir = type == DT_DIR;
    entry.is_file = type == DT_REG;
    entry.is_link = type == DT_LNK;
    out.push_back(std::move(entry));
  }
  ::closedir(d);
  return out;
}

}  // namespace efawatch::logs
