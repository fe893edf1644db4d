// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

// Finds NCCL log records inside one (already unwrapped) physical line. Pure functions over
// string_views: no allocation besides the output vector, no regular expressions, no
// backtracking: every byte is looked at a bounded number of times.
namespace efawatch::nccl {

enum class Level { kInfo, kWarn, kTrace };

// One `host:pid:tid [dev] NCCL INFO|WARN ...` record. All views point into the scanned line.
// Pasted excerpts and some log shippers cut the prefix: a line that begins at `NCCL INFO` or
// `NCCL WARN` (after blanks) is a record with no host, pid or device.
struct Record {
  std::string_view host;      // empty when the prefix was trimmed away (some pasted logs)
  std::string_view proc_key;  // "host:pid", contiguous in the line; empty without a prefix
  uint32_t pid = 0;           // the thread id after it is checked, not kept (nothing needs it)
  int dev = -1;               // -1 without a "[dev]" field
  Level level = Level::kInfo;
  bool legacy = false;        // NCCL <= 2.2: "INFO"/"WARN" without the NCCL token
  std::string_view location;  // WARN/TRACE: "file:line" or whatever a plugin passed
  std::string_view message;   // text after "NCCL INFO " (right-trimmed)
  std::string_view full;      // from the prefix to the end of the message
};

// Clears `out`, appends every record of `line` in order (a terminal copy can join several onto
// one line) and returns how many were found. Exact duplicates on one line (CloudWatch consoles
// repeat the message after a `|`) are reported once.
size_t FindRecords(std::string_view line, std::vector<Record>* out);

// Finds a bare version banner "NCCL version 2.19.3+cuda12.3" anywhere in the line (NCCL <= 2.21
// prints it with printf, without the host prefix). `cuda` may be an unexpanded macro as in
// TensorFlow builds ("CUDA_MAJOR.CUDA_MINOR").
bool FindVersionBanner(std::string_view line, std::string_view* version, std::string_view* cuda);

// Splits "2.19.3+cuda12.3" into its two halves; `cuda` is empty without "+cuda".
void SplitVersion(std::string_view text, std::string_view* version, std::string_view* cuda);

namespace internal {
// The fast path of FindRecords() for a line starting "host:pid:tid [dev] NCCL INFO ": the
// message start, or npos (the general search then runs); `r`'s prefix fields are set only on
// success. `vector` false: the scalar parser alone (the SSE2 pass must agree with it: tests).
size_t ParseInfoPrefix(std::string_view line, Record* r, bool vector);
}  // namespace internal

}  // namespace efawatch::nccl
