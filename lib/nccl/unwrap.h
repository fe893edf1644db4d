// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// Removes what container runtimes, launchers, consoles and terminals put around a log line, so
// the record scanner sees NCCL's own text. Stateless functions plus a small joiner for records
// a runtime split into partial pieces.
namespace efawatch::nccl {

// How the bytes of a line are packaged.
enum class Envelope {
  kAuto,        // detect CRI or docker json-file per line, else plain
  kPlain,       // the line is the log text
  kCri,         // "<RFC3339Nano> <stdout|stderr> <P|F> <text>" (containerd, CRI-O)
  kDockerJson,  // {"log":"...\n","stream":"stdout","time":"..."} (docker json-file)
};

struct CriRecord {
  std::string_view time;
  std::string_view stream;
  bool partial = false;  // "P": the runtime split a long line; the rest follows
  std::string_view text;
};

// Parses one CRI log line. False when the line is not in CRI format.
bool ParseCri(std::string_view line, CriRecord* out);

// Decodes a docker json-file line: `*text` receives the "log" string with JSON escapes decoded
// and without its trailing newline; `*partial` is true when there was no trailing newline
// (docker splits lines longer than 16 KiB). False when the line is not a docker json line or
// its "log" string is broken.
bool ParseDockerJson(std::string_view line, std::string* text, bool* partial);

// Length of an ISO-8601 / RFC 3339 timestamp at the start of `s` ("2025-05-16T16:39:51.208-07:00",
// "2024-12-04T07:19:43.480Z", "2025-02-18 12:54"), or 0.
size_t TimestampLength(std::string_view s);

// What Ray's driver put around a line it forwarded from a worker (CleanLine fills it).
struct RayWrapping {
  // The prefix removed, "(RayTrainWorker pid=1, ip=10.0.0.5)"; empty when there was none.
  std::string_view prefix;
  // N of a " [repeated Nx across cluster]" suffix removed: lines of other workers that Ray's
  // deduplication folded into this one (they differ from it at most in numbers, so they are
  // not seen and only counted); 0 when there was none.
  uint64_t repeated = 0;
};

// What CleanLine() returns unchanged at its first check, a line without ESC bytes aside: one
// that starts with a letter (no indentation, console wrapper, timestamp or box frame) and ends
// in a printable ASCII byte other than ']' and ')' (no newline, padding, box frame or Ray
// suffix). Most lines of an NCCL log are such lines.
inline bool IsCleanAsIs(std::string_view line) {
  if (line.empty()) return false;
  const unsigned char first = static_cast<unsigned char>(line.front()) | 0x20;
  const unsigned char last = static_cast<unsigned char>(line.back());
  return first >= 'a' && first <= 'z' && last > ' ' && last < 0x7f && last != ']' && last != ')';
}

// Strips CR/LF, ANSI colour codes, trailing padding and TUI box drawing, Ray's
// " [repeated Nx across cluster]" suffix (and the one-time hint after it), and leading console
// wrappers (indentation, CloudWatch "| <time> |", log-platform dates, Open MPI "[1,0]<stdout>:",
// Ray "(RayTrainWorker pid=1, ip=...)", k9s frames). Wrappers in the middle of the line are left
// to the record scanner, which finds records anywhere. Uses `scratch` only when bytes must be
// removed from the middle (ANSI codes).
// `may_hold_ansi` false skips the search for ANSI codes, for callers that checked a whole block
// for ESC bytes at once. When `ray` is given, it receives what Ray put around the line, and is
// left alone where Ray put nothing.
std::string_view CleanLine(std::string_view line, std::string* scratch, bool may_hold_ansi = true,
                           RayWrapping* ray = nullptr);

// Ray's "(RayTrainWorker pid=1, ip=...)" when it ends `before_record` (the text of a line before
// its first record) behind a wrapper CleanLine does not strip (a compose service name, a syslog
// header, kubectl's --prefix); empty otherwise.
std::string_view RayPrefixBefore(std::string_view before_record);

// True for the marker lines Ray writes into a worker's .out/.err file when the worker starts a
// task or actor (":task_name:train_fn", ":actor_name:RayTrainWorker", ":job_id:01000000"); the
// log monitor reads them to name the prefix and never forwards them.
bool IsRayMarkerLine(std::string_view line);

// Joins the pieces of a record split by the runtime ("P" records, docker lines without "\n").
// Bounded: text beyond `max_bytes` is dropped and reported as truncated.
class PartialJoiner {
 public:
  explicit PartialJoiner(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Adds a piece that is not the last one.
  void AddPartial(std::string_view piece);
  // Adds the last piece; returns the whole record, valid until the next call. `*truncated`
  // is set when pieces were dropped.
  std::string_view Complete(std::string_view last, bool* truncated);
  bool pending() const { return !buffer_.empty() || truncated_; }

 private:
  size_t max_bytes_;
  std::string buffer_;
  std::string joined_;
  bool truncated_ = false;
};

}  // namespace efawatch::nccl
