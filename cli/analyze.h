// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "lib/nccl/analyzer.h"

namespace efawatch::cli {

// `efawatch analyze [--format text|json] [--threads N] FILE...`: feeds each file ("-" = stdin;
// gzip files are decompressed transparently) to one nccl::Analyzer and prints the report to
// `out`. Large regular files are analyzed in `threads` parts at once (0: one per hardware thread
// for files of 32 MiB and more); the report is the same as from one pass.
// Returns 0 when there is no critical finding, 1 when there is one, 2 on a usage or I/O error
// (one line on `err`).
// `efawatch analyze` keeps state for every rank of a large job and visits it line after line;
// on 4 KiB pages that working set can miss the TLB. When the regular files among the arguments
// add up to 64 MiB or more, the first of them is mostly NCCL's lines (internal::MostlyNccl) and
// glibc's `glibc.malloc.hugetlb` tunable is not set yet, this re-executes the program with it
// set to 1 (glibc then asks for transparent huge pages for the heap): on bench/analyze.sh's
// 400 MB all-NCCL log, 0.42 s instead of 0.50 s in one thread. Smaller inputs and chatty logs
// are not worth the second start. A tunable the user set is left alone (=0 turns this off);
// when exec fails, the program simply goes on.
void ReexecWithHugePageHeap(char** argv);

// Exit codes of `efawatch analyze` (README): 0 no critical finding, 1 a critical finding,
// 2 bad usage or an unreadable file, 3 the input held no NCCL output (NCCL_DEBUG unset?): a
// script that gates a job on the verdict must not read "nothing to say" as "OK".
inline constexpr int kExitCritical = 1;
inline constexpr int kExitNoNcclOutput = 3;

// With `keep`, the analyzer is handed to the caller instead of being freed: a process that exits
// right after need not free a large run's millions of small objects one by one (4% of the
// instructions of `efawatch analyze` on bench/analyze.sh's log, measured with callgrind).
int RunAnalyze(const std::vector<std::string>& files, const std::string& format, unsigned threads,
               std::ostream& out, std::ostream& err,
               std::unique_ptr<nccl::Analyzer>* keep = nullptr);

namespace internal {
/// Whether the first regular file among argv[1..] (the first 64 KiB of it) looks like an NCCL
/// log rather than a pod's chatter: "NCCL" on at least one line in four. Only such a log builds
/// the state of many ranks that the huge-page heap pays for; a chatty pod log keeps a few MiB.
bool MostlyNccl(char** argv);

/// A pread() of the file bytes [*offset, end) into dst[0, n) that retries EINTR and advances
/// *offset: how many were read, 0 at `end`, or -1 with `error` set, also when the file ends
/// before `end` (it shrank while it was read: a rotation by copytruncate). Declared for its test.
int64_t PreadRange(int fd, uint64_t* offset, uint64_t end, char* dst, size_t n, std::string* error);
}  // namespace internal

}  // namespace efawatch::cli
