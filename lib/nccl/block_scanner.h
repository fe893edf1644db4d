// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

// Picks, out of a block of log lines, the lines the analyzer's per-line path could do anything
// with besides counting them, at close to memory-search speed: on a pod log where one line in
// fifty is NCCL's, the other 49 cost what grep pays for them, not a parse each. The daemon's
// tailer and `efawatch analyze` both go through here, so they see the same lines.
namespace efawatch::nccl {

// True when `line` (one physical line, without its newline) holds anything the per-line path
// reacts to: a record or banner ("NCCL", legacy "] INFO "/" WARN "; Python logging's
// " - INFO - " is none), an echoed setting ("FI_"; "NCCL_" is covered by "NCCL"), a libfabric
// warning ("libfabric:"), an nccl-tests header or comment ('#'), Ray's dedup suffix
// ("[repeated ") and task markers (":task_", ":actor_name:", ":job_id:"), a CRI partial piece
// (" P "), a docker json-file record the per-line path would decode to other bytes than its
// raw ones (starts with '{' and is not `{"log":"<text without escapes>\n","stream":...`),
// bytes that make it junk (NUL) or may hide text (an escape sequence that neither starts the
// line nor is a colour code that ends it), or more than `long_line_bytes` (counted as truncated).
// Any other line the analyzer only counts. The reference for the block scan below. `json`: the
// file's lines may be docker json-file records; where they cannot (a CRI or plain log, decided per
// file), a '{' at a line's start is ordinary text.
bool IsCandidateLine(std::string_view line, size_t long_line_bytes, bool json = true);

namespace internal {

// Where the next candidate line is found: `pos` lies inside it (n when there is none), and
// `newlines` is the number of '\n' in [from, pos). `from` starts a line.
struct Hit {
  size_t pos;
  uint64_t newlines;
};
Hit NextCandidate(const char* s, size_t n, size_t from, size_t long_line_bytes, bool json);

// Which scan NextCandidate() runs: the best the CPU has (AVX2, else line by line) or, for tests
// that check each on a machine with AVX2, the AVX2 scan with its colour-code filter on every
// block (kColour; the best scan turns it on where a block starts with an escape) or the
// line-by-line one. Process-wide. (An AVX-512 scan was measured slower than the AVX2 one on the
// 2-vCPU EPYC machines of #45: 7.6 against 10.5 GB/s.)
enum class ScanLevel { kBest, kColour, kLines };
void ForceScanLevel(ScanLevel level);
// The scan NextCandidate() runs now: "avx2", "avx2-colour" or "lines".
std::string_view ScanName();

}  // namespace internal

// Calls `visit(index, line)` in order for every line of `block` ('\n'-separated, 0-based
// `index`, without its newline; the last line may lack its newline) that IsCandidateLine()
// accepts, for the first line when `visit_first`, and for the line after any line whose visit
// returned true (the caller's partial-record joiner awaits the rest of a split record, which
// need not hold a needle). Returns the number of lines in `block`. Other lines are only counted:
// one pass over the block compares 32 bytes at a time against the needles' rarest bytes (AVX2;
// elsewhere a line-by-line search) and checks the few places that match. A template, not a
// function taking a callback: on an all-NCCL log it runs once per line.
//
// With `dense_runs`, the caller's visit does nothing with a line IsCandidateLine() rejects
// besides counting it (the analyzer), and the scan is skipped where it would not skip anything:
// after kDenseAfter lines in a row that the scan found to be candidates, the next kDenseLines
// lines are visited without it, candidates or not, then the scan resumes. When the scan then
// again finds kDenseAfter candidates in a row, the next window is twice as long (up to
// kDenseMaxLines); a line it passes over starts the windows again at kDenseLines. A window is
// thus never longer than twice the lines of the run seen so far, which bounds what a run that
// ends inside a window costs; on an all-NCCL log the scan runs on one line in 200 (on 1 in 5
// with fixed windows, measured 3-5 % of `efawatch analyze`), and on a pod log where one line
// in fifty is NCCL's no window opens.
inline constexpr uint32_t kDenseAfter = 16;
inline constexpr uint32_t kDenseLines = 64;
inline constexpr uint32_t kDenseMaxLines = 4096;
template <typename Visit>
uint64_t ForEachCandidateLine(std::string_view block, size_t long_line_bytes, bool visit_first,
                              Visit&& visit, bool dense_runs = false, bool json = true) {
  const char* s = block.data();
  const size_t n = block.size();
  uint64_t index = 0;  // the number of the line starting at `start`
  size_t start = 0;
  bool next_too = visit_first;
  uint32_t run = 0;         // lines in a row the scan found to be candidates
  uint32_t dense_left = 0;  // lines still to visit without the scan
  uint32_t window = 0;      // the last window's length; 0: the run was broken since
  while (start < n) {
    size_t line_start = start;
    size_t pos = start;
    if (dense_left != 0) {
      --dense_left;
    } else if (!next_too) {
      const internal::Hit hit = internal::NextCandidate(s, n, start, long_line_bytes, json);
      if (hit.pos >= n) {
        // Only counted: the newlines, plus a last line without one.
        return index + hit.newlines + (s[n - 1] != '\n' ? 1 : 0);
      }
      index += hit.newlines;
      pos = hit.pos;
      // No newline before the hit: it is on the line at `start` (always, on an all-NCCL log).
      if (hit.newlines != 0) {
        run = 0;
        window = 0;
        line_start = static_cast<size_t>(
                         static_cast<const char*>(memrchr(s + start, '\n', pos - start)) - s) +
                     1;
      } else if (dense_runs && ++run == kDenseAfter) {
        run = 0;
        window = window == 0 ? kDenseLines : std::min(2 * window, kDenseMaxLines);
        dense_left = window;
      }
    }
    const void* nl = memchr(s + pos, '\n', n - pos);
    const size_t end = nl == nullptr ? n : static_cast<size_t>(static_cast<const char*>(nl) - s);
    next_too = visit(index, block.substr(line_start, end - line_start));
    ++index;
    start = end + 1;
  }
  return index;
}

}  // namespace efawatch::nccl
