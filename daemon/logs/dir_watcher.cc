// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/dir_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

namespace efawatch::logs {

bool DirWatcher::Open() {
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  return fd_ >= 0;
}

void DirWatcher::Close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  // The watches died with the instance.
  watches_.clear();
  watched_.clear();
}

void DirWatcher::Watch(const std::filesystem::path& dir) {
  if (fd_ < 0 || watched_.contains(dir.string())) return;
  // IN_DONT_FOLLOW: a watched directory a tenant swapped for a link is not watched through it.
  const int wd = inotify_add_watch(fd_, dir.c_str(),
                                   IN_MODIFY | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                       IN_CLOSE_WRITE | IN_DELETE_SELF | IN_DONT_FOLLOW);
  if (wd >= 0) {
    watches_[wd] = dir;
    watched_.insert(dir.string());
  }
}

bool DirWatcher::ReadEvents() {
  if (fd_ < 0) return false;
  bool walk = false;
  alignas(inotify_event) char buf[64 * 1024];
  ssize_t n;
  while ((n = ::read(fd_, buf, sizeof(buf))) > 0) {
    for (char* e = buf; e < buf + n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(e);
      // A write needs no walk (the pass reads every followed file); a name that came or went,
      // or a lost event, does.
      if ((ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                       IN_Q_OVERFLOW)) != 0) {
        walk = true;
      }
      if ((ev->mask & IN_IGNORED) != 0) {
        // The directory is gone and so is its watch: a new one of that name needs a new one.
        if (auto w = watches_.find(ev->wd); w != watches_.end()) {
          watched_.erase(w->second.string());
          watches_.erase(w);
        }
      }
      e += sizeof(inotify_event) + ev->len;
    }
  }
  return walk;
}

}  // namespace efawatch::logs
