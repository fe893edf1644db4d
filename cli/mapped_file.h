// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"

// A regular file mapped read-only, so `efawatch analyze` reads its bytes where the page cache
// holds them instead of copying them out with read(): on a 1.1 GB log the copy was a tenth of
// the analysis (bench/analyze.sh).
//
// A mapping has one hazard a read() does not: when the file shrinks while it is mapped (a
// rotation with copytruncate, an editor saving over it), touching a page past the new end raises
// SIGBUS, which would kill the process. While a MappedFile lives, a SIGBUS handler maps zero
// pages over the rest of that mapping and records it: reads go on and see NUL bytes, and
// shrank() tells the caller to report the file as cut short. SIGBUS from anywhere else keeps
// its default action.
namespace efawatch::cli {

class MappedFile {
 public:
  // Maps the first `size` bytes of `fd` (a regular file; `size` > 0). The descriptor may be
  // closed afterwards.
  static absl::StatusOr<std::unique_ptr<MappedFile>> Map(int fd, uint64_t size);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view data() const;
  // True once a read hit a page past the file's end: data() holds zeros from that page on.
  bool shrank() const;

 private:
  MappedFile(size_t slot, const char* base, size_t size) : slot_(slot), base_(base), size_(size) {}
  size_t slot_;  // where the SIGBUS handler finds this mapping
  const char* base_;
  size_t size_;
};

}  // namespace efawatch::cli
