// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/byte_reader.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "spdlog/spdlog.h"

namespace efawatch::logs {

TrackedFile::~TrackedFile() {
  if (fd >= 0) ::close(fd);
}

bool ByteReader::Read(TrackedFile& t, bool to_eof) {
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

void ByteReader::SkipTo(TrackedFile& t, uint64_t to, std::atomic<uint64_t>& why) {
  if (to <= t.offset) return;
  why += to - t.offset;
  t.offset = to;
  // A line begun before the jump never ends; the bytes up to the next newline after it read as
  // one (cut) line.
  t.partial.clear();
}

bool ByteReader::SkipHole(TrackedFile& t, uint64_t at) {
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

bool ByteReader::LooksLikeText(TrackedFile& t, std::string_view first) {
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

void ByteReader::Deliver(TrackedFile& t, std::string_view data) {
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

}  // namespace efawatch::logs
