// SPDX-License-Identifier: Apache-2.0
// The tailer's byte reader: new bytes of one open file in, lines to the sink out. Kept apart from
// discovery and rotation so the rules that decide what a byte becomes (a line, a cut line, a
// skipped hole, a file left as not text) can be tested on one file without a pod log tree.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/logs/source.h"
#include "daemon/logs/tailer_types.h"

namespace efawatch::logs {

/// One followed file and how far it has been read: its descriptor (closed with it), its identity,
/// the offset reached and the line begun there and not yet ended. The follower (FileFollower)
/// owns it; the ByteReader moves it forward. Not copyable: it owns the descriptor.
struct TrackedFile {
  TrackedFile() = default;
  TrackedFile(const TrackedFile&) = delete;
  TrackedFile& operator=(const TrackedFile&) = delete;
  ~TrackedFile();

  /// Where a restart goes on: the offset of the last complete line delivered, so a partial line
  /// is read again, whole.
  uint64_t LineStart() const { return offset - partial.size(); }

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
};

/// Reads the new bytes of a TrackedFile and cuts them into lines for the sink: whole lines in
/// runs (LineSink::OnLines), a line longer than max_line_bytes cut there and counted
/// (lines_truncated). Skips, counted by why: the holes of a sparse file (skipped_hole), a file
/// whose first bytes are not text (skipped_binary, never read again), the middle of a file first
/// seen huge (skipped_oversized) and a backlog beyond max_backlog_bytes (skipped_budget). A file
/// cut under it (copytruncate) is read again from its start (truncations).
/// Not thread-safe: the tailer's thread calls it. `options`, `sink` and `counters` outlive it.
class ByteReader {
 public:
  ByteReader(const TailerOptions& options, LineSink* sink, TailerCounters& counters)
      : options_(options), sink_(sink), counters_(counters) {}

  /// Reads `t` from its offset, at most read_chunk_bytes (to its end when `to_eof`). Returns true
  /// when it stopped at read_chunk_bytes with more to read. A read error ends the read quietly:
  /// the next pass tries again.
  bool Read(TrackedFile& t, bool to_eof);
  /// Cuts `data`, the bytes that follow those `t` was handed so far, into lines for the sink;
  /// counts them. A line without its newline yet waits in `t.partial`.
  void Deliver(TrackedFile& t, std::string_view data);

 private:
  /// Moves `t` to `to` without reading what lies between (counted in `why`); a line begun
  /// before is dropped.
  void SkipTo(TrackedFile& t, uint64_t to, std::atomic<uint64_t>& why);
  /// After a read at `at` that began with a NUL: when `at` is in a hole of a sparse file, skips
  /// to the next data (or the end) and returns true (the read is dropped).
  bool SkipHole(TrackedFile& t, uint64_t at);
  /// On a file's first bytes: false for one that is not text (left, counted).
  bool LooksLikeText(TrackedFile& t, std::string_view first);

  const TailerOptions& options_;
  LineSink* sink_;
  TailerCounters& counters_;
};

}  // namespace efawatch::logs
