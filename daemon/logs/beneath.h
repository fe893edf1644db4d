// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace efawatch::logs {

/// Opens `path` (read-only, with extra `flags`) only if every component of it below `root` is
/// a real directory or file, never a symlink, and it lies below `root`: what a tenant controls
/// (a pod's emptyDir, a container's filesystem) can otherwise swap a directory for a link into
/// a Secret volume between the walk's check and the open, and the root agent would read the
/// Secret as logs. openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel has it (5.6
/// on), else one openat(O_NOFOLLOW) per component. Returns the descriptor, or -1 with errno
/// (ELOOP for a link, EXDEV for a path outside `root`). `root` itself is trusted.
int OpenBeneath(const std::filesystem::path& root, const std::filesystem::path& path, int flags);

/// One entry of a directory, as readdir gives it: no stat, so a link is seen as a link.
struct DirEntry {
  std::string name;
  bool is_dir = false;
  bool is_file = false;
  bool is_link = false;
};

/// The entries of directory `dir`, opened as OpenBeneath() opens files; empty when it cannot be
/// opened that way. At most `max_entries` (a tenant's directory may hold millions): when there
/// were more, `*truncated` (if given) is set and the rest are not read.
std::vector<DirEntry> ListBeneath(const std::filesystem::path& root,
                                  const std::filesystem::path& dir, size_t max_entries = SIZE_MAX,
                                  bool* truncated = nullptr);

}  // namespace efawatch::logs
