// SPDX-License-Identifier: Apache-2.0
#include "cli/analyze.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/nccl/analyzer.h"
#include "lib/nccl/report_json.h"

namespace efawatch::cli {
namespace {

// Block size: a block of lines is fed while it is still in the core's own cache (256 KiB
// measured no slower than 1 MiB, and leaves room for the analyzer's state when two threads share
// a cache).
constexpr size_t kChunk = 1 << 18;

// Reads the next bytes into dst[0, n): returns how many, 0 at the end, or -1 with `error` set.
using ReadFn = absl::FunctionRef<int64_t(char* dst, size_t n, std::string* error)>;

// Feeds every line that `read` yields to `analyzer`, numbering from 1; returns the number of
// lines. Whole lines go to the analyzer in blocks straight from one reused buffer; a line that
// crosses a read boundary is moved to the front of the buffer, not copied aside. The analyzer
// truncates long lines, so a line longer than a chunk is fed as its first kChunk bytes and the
// rest is skipped.
absl::StatusOr<uint64_t> StreamLines(ReadFn read, std::string_view source,
                                     nccl::Analyzer* analyzer) {
  std::string buf(2 * kChunk, '\0');
  size_t have = 0;
  bool skipping = false;  // inside the dropped rest of an over-long line
  uint64_t line_no = 0;
  std::string error;
  for (;;) {
    int64_t n = read(buf.data() + have, std::min(buf.size() - have, kChunk), &error);
    if (n < 0) return absl::DataLossError(std::string(source) + ": " + error);
    if (n == 0) break;
    std::string_view data(buf.data(), have + static_cast<size_t>(n));
    size_t start = 0;
    if (skipping) {
      const void* nl = memchr(data.data(), '\n', data.size());
      if (nl != nullptr) {
        start = static_cast<size_t>(static_cast<const char*>(nl) - data.data()) + 1;
        skipping = false;
      }
    }
    if (!skipping) {
      size_t last = data.rfind('\n');
      if (last != std::string_view::npos && last >= start) {
        line_no += analyzer->FeedLines(source, line_no + 1, data.substr(start, last + 1 - start));
        start = last + 1;
      }
    }
    have = skipping ? 0 : data.size() - start;
    if (have >= kChunk) {
      analyzer->Feed(source, ++line_no, data.substr(start, have));
      skipping = true;
      have = 0;
    } else if (have > 0 && start > 0) {
      memmove(buf.data(), data.data() + start, have);
    }
  }
  if (have > 0 && !skipping) analyzer->Feed(source, ++line_no, std::string_view(buf.data(), have));
  return line_no;
}

// A read() that retries EINTR.
int64_t ReadFd(int fd, char* dst, size_t n, std::string* error) {
  for (;;) {
    ssize_t r = read(fd, dst, n);
    if (r >= 0) return r;
    if (errno != EINTR) {
      *error = std::strerror(errno);
      return -1;
    }
  }
}

// Where the line after byte `from` starts (the byte after the first newline at or after it),
// or `size` when none does.
uint64_t NextLineStart(int fd, uint64_t from, uint64_t size) {
  char buf[4096];
  while (from < size) {
    const ssize_t r =
        pread(fd, buf, static_cast<size_t>(std::min<uint64_t>(sizeof(buf), size - from)),
              static_cast<off_t>(from));
    if (r <= 0) return size;
    if (const void* nl = memchr(buf, '\n', static_cast<size_t>(r)); nl != nullptr) {
      return from + static_cast<uint64_t>(static_cast<const char*>(nl) - buf) + 1;
    }
    from += static_cast<uint64_t>(r);
  }
  return size;
}

// A regular file of `size` bytes is cut at line starts into `parts` ranges; each range is read
// with pread() into its own reused buffer and fed by its own thread into its own Analyzer, and
// the results are merged in order (Analyzer::Merge, tested to give the same report as one
// pass). The first range goes into `analyzer` itself. Read, not mapped: on the 2-vCPU machines
// this is measured on, touching a mapped file's page-cache pages cost three to five times a
// read() of the same bytes into a buffer that stays in the core's cache (a memchr over a
// mapped 200 MB log: 0.09 s; read() and memchr: 0.03 s; grep reads too).
absl::Status FeedFileParts(int fd, uint64_t size, unsigned parts, std::string_view source,
                           nccl::Analyzer* analyzer) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  uint64_t begin = 0;
  for (unsigned i = 1; i < parts && begin < size; ++i) {
    const uint64_t cut = NextLineStart(fd, std::max(begin, size * i / parts), size);
    if (cut > begin) ranges.emplace_back(begin, cut);
    begin = cut;
  }
  if (begin < size || ranges.empty()) ranges.emplace_back(begin, size);
  std::vector<std::unique_ptr<nccl::Analyzer>> later;
  std::vector<absl::StatusOr<uint64_t>> counts(ranges.size(), uint64_t{0});
  auto feed = [&](size_t i, nccl::Analyzer* a) {
    uint64_t offset = ranges[i].first;
    counts[i] = StreamLines(
        [&](char* dst, size_t n, std::string* error) {
          return internal::PreadRange(fd, &offset, ranges[i].second, dst, n, error);
        },
        source, a);
  };
  {
    std::vector<std::jthread> threads;
    for (size_t i = 1; i < ranges.size(); ++i) {
      later.push_back(std::make_unique<nccl::Analyzer>(analyzer->options()));
      threads.emplace_back([&, i, a = later.back().get()] { feed(i, a); });
    }
    feed(0, analyzer);
  }  // joins
  uint64_t offset = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (!counts[i].ok()) return counts[i].status();
    if (i > 0) analyzer->Merge(std::move(*later[i - 1]), offset);
    offset += *counts[i];
  }
  return absl::OkStatus();
}

// How many parts a file of `bytes` is analyzed in: `threads` when it is set, otherwise one
// per hardware thread (up to kMaxThreads) for files of at least kParallelMinBytes. The scan is
// CPU-bound on cached input: two threads on a 2-vCPU machine measured 1.6x faster in wall time
// than one (bench/analyze.sh).
constexpr uint64_t kParallelMinBytes = 32u << 20;
constexpr unsigned kMaxThreads = 8;

unsigned Parts(uint64_t bytes, unsigned threads) {
  if (threads > 0) return threads;
  unsigned n = std::min(kMaxThreads, std::thread::hardware_concurrency());
  return n < 2 || bytes < kParallelMinBytes ? 1 : n;
}

// Reads `path` (or stdin for "-") and feeds it line by line. gzip files (by their magic
// bytes) and pipes go through zlib; other regular files are read with pread(), large ones in
// parallel parts.
absl::Status FeedFile(const std::string& path, unsigned threads, nccl::Analyzer* analyzer) {
  int fd = path == "-" ? dup(STDIN_FILENO) : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(path + ": " + (errno != 0 ? std::strerror(errno) : "cannot open"));
  }
  const std::string_view source = path == "-" ? std::string_view("<stdin>") : path;
  // zlib decides by the first bytes whether to decompress; peeking needs a seekable file, so
  // pipes always go through zlib (which passes plain data through unchanged).
  unsigned char magic[2] = {0, 0};
  struct stat st {};
  bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  bool seekable = lseek(fd, 0, SEEK_CUR) == 0;
  bool gzip = !seekable || pread(fd, magic, 2, 0) != 2 || (magic[0] == 0x1f && magic[1] == 0x8b);
  if (!gzip && regular && st.st_size > 0) {
    const auto size = static_cast<uint64_t>(st.st_size);
    absl::Status fed = FeedFileParts(fd, size, Parts(size, threads), source, analyzer);
    close(fd);
    return fed;
  }
  absl::StatusOr<uint64_t> lines;
  if (gzip) {
    gzFile f = gzdopen(fd, "rb");
    if (f == nullptr) {
      close(fd);
      return absl::NotFoundError(path + ": cannot open");
    }
    gzbuffer(f, kChunk);
    lines = StreamLines(
        [&](char* dst, size_t n, std::string* error) -> int64_t {
          int r = gzread(f, dst, static_cast<unsigned>(n));
          if (r < 0) {
            int code = 0;
            *error = gzerror(f, &code);
          }
          return r;
        },
        source, analyzer);
    gzclose(f);
  } else {
    lines = StreamLines(
        [&](char* dst, size_t n, std::string* error) { return ReadFd(fd, dst, n, error); }, source,
        analyzer);
    close(fd);
  }
  return lines.status();
}

// The analyzer's state is many small objects, tens of MiB of them on a large job's log, in one
// heap per thread. glibc's defaults give memory back as a heap's top frees up and take it again
// as it grows; on a second thread's heap every round costs page faults (with huge pages, 2 MiB
// zeroed each). On bench/analyze.sh's all-NCCL log with two threads: 9,000 page faults and
// 0.45 s wall with the defaults, 400 and 0.31 s with these. The process exits after its report,
// so memory it does not give back costs nothing; untouched padding is only address space.
void KeepHeapGrown() {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
}

void PrintText(const nccl::Report& r, std::ostream& out) {
  const nccl::Summary& s = r.summary;
  const nccl::Verdict& v = s.verdict;
  const std::string_view family = nccl::NameOf(v.family);
  out << s.headline << "\n\n";
  out << "network:        " << (v.network.empty() ? "unknown" : v.network);
  if (!family.empty() && family != v.network) out << " (" << family << ")";
  out << "\n";
  out << "inter-node:     " << v.transport << "\n";
  out << "ofi provider:   " << v.ofi_provider << "\n";
  out << "gdr:            " << nccl::NameOf(v.gdr) << "\n";
  out << "nccl version:   " << (v.nccl_version.empty() ? "unknown" : v.nccl_version) << "\n";
  out << "ranks/nodes:    " << (v.ranks < 0 ? std::string("?") : std::to_string(v.ranks)) << " / "
      << (v.nodes < 0 ? std::string("?") : std::to_string(v.nodes)) << "\n";
  out << "node count:     ";
  if (v.nodes_evidence == nccl::NodesEvidence::kUnknown) {
    out << "unknown (this log does not show how many nodes the job spans)\n";
  } else {
    out << nccl::NameOf(v.nodes_evidence) << " (" << s.nodes_rule << ", " << s.nodes_proof.source
        << ":" << s.nodes_proof.line << ")\n";
  }
  out << "processes:      " << r.processes.size() << "\n";
  out << "lines:          " << s.lines << " (" << s.nccl_lines << " NCCL, " << s.malformed_lines
      << " malformed, " << s.warn_records << " WARN)\n";
  if (s.ray_repeated_lines != 0) {
    out << "ray folded:     " << s.ray_repeated_lines
        << " more lines (Ray's \"[repeated Nx across cluster]\"; RAY_DEDUP_LOGS=0 shows them)\n";
  }
  if (r.findings.empty()) return;
  out << "\nfindings:\n";
  // One entry per kind and severity; the first evidence stands for all of them.
  std::map<std::pair<int, std::string>, std::pair<const nccl::Finding*, uint64_t>> groups;
  for (const nccl::Finding& f : r.findings) {
    auto& g = groups[{-static_cast<int>(f.severity), f.kind}];
    if (g.first == nullptr) g.first = &f;
    ++g.second;
  }
  for (const auto& [key, g] : groups) {
    const nccl::Finding& f = *g.first;
    out << "  [" << nccl::SeverityName(f.severity) << "] " << f.kind;
    if (g.second > 1) out << " (" << g.second << " processes)";
    out << ": " << f.message << "\n";
    if (!f.evidence.source.empty()) {
      out << "      " << f.evidence.source << ":" << f.evidence.line << ": " << f.evidence.text
          << "\n";
    }
  }
}

}  // namespace

namespace internal {

int64_t PreadRange(int fd, uint64_t* offset, uint64_t end, char* dst, size_t n,
                   std::string* error) {
  const size_t want = static_cast<size_t>(std::min<uint64_t>(n, end - *offset));
  if (want == 0) return 0;
  for (;;) {
    const ssize_t r = pread(fd, dst, want, static_cast<off_t>(*offset));
    if (r > 0) {
      *offset += static_cast<uint64_t>(r);
      return r;
    }
    if (r == 0) {
      *error = "the file shrank while it was read";
      return -1;
    }
    if (errno != EINTR) {
      *error = std::strerror(errno);
      return -1;
    }
  }
}

bool MostlyNccl(char** argv) {
  for (char** a = argv + 1; *a != nullptr; ++a) {
    struct stat st {};
    if (stat(*a, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) continue;
    const int fd = open(*a, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string head(64 * 1024, '\0');
    const ssize_t r = pread(fd, head.data(), head.size(), 0);
    close(fd);
    if (r <= 0) continue;
    head.resize(static_cast<size_t>(r));
    const auto lines = static_cast<size_t>(std::count(head.begin(), head.end(), '\n'));
    size_t nccl = 0;
    for (size_t at = 0; (at = head.find("NCCL", at)) != std::string::npos; at += 4) ++nccl;
    return 4 * nccl >= std::max<size_t>(lines, 1);
  }
  return false;
}

}  // namespace internal

void ReexecWithHugePageHeap(char** argv) {
  // The second start costs ~12 ms. What the huge pages save is the page faults of a growing
  // heap, which cost more on a virtual machine: 0-5 % on a 400 MB log where first measured, a
  // drop from 0.10 s to 0.04 s of system time on a 56 MB all-NCCL log (41 MB of heap) on the
  // 2-vCPU machines of #45. From 64 MiB of input on, they pay for the second start.
  constexpr uint64_t kMinInputBytes = uint64_t{64} << 20;
  uint64_t input_bytes = 0;
  for (char** a = argv + 1; *a != nullptr; ++a) {
    struct stat st {};
    if (stat(*a, &st) == 0 && S_ISREG(st.st_mode)) input_bytes += static_cast<uint64_t>(st.st_size);
  }
  if (input_bytes < kMinInputBytes || !internal::MostlyNccl(argv)) return;
  constexpr std::string_view kTunable = "glibc.malloc.hugetlb";
  const char* current = std::getenv("GLIBC_TUNABLES");
  std::string tunables = current != nullptr ? current : "";
  if (tunables.find(kTunable) != std::string::npos) return;
  tunables += (tunables.empty() ? "" : ":") + std::string(kTunable) + "=1";
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Still here: exec failed (no /proc?); the variable stays set, so no second try.
}

int RunAnalyze(const std::vector<std::string>& files, const std::string& format, unsigned threads,
               std::ostream& out, std::ostream& err, std::unique_ptr<nccl::Analyzer>* keep) {
  if (format != "text" && format != "json") {
    err << "efawatch analyze: unknown --format '" << format << "' (use text or json)\n";
    return 2;
  }
  if (files.empty()) {
    err << "efawatch analyze: no input file (use - for stdin)\n";
    return 2;
  }
  KeepHeapGrown();
  auto analyzer = std::make_unique<nccl::Analyzer>();
  for (const std::string& path : files) {
    errno = 0;
    absl::Status st = FeedFile(path, threads, analyzer.get());
    if (!st.ok()) {
      err << "efawatch analyze: " << st.message() << "\n";
      return 2;
    }
  }
  // The text output shows no communicator: a report without them is ~15 ms less on a
  // 2,000-process, 74,000-communicator log (bench/analyze.sh's).
  const nccl::Report report = analyzer->Snapshot({.communicators = format == "json"});
  if (format == "json") {
    out << nccl::ReportToJson(report).dump(2) << "\n";
  } else {
    PrintText(report, out);
  }
  if (keep != nullptr) *keep = std::move(analyzer);
  if (report.MaxSeverity() == nccl::Severity::kCritical) return kExitCritical;
  return report.HasNcclOutput() ? 0 : kExitNoNcclOutput;
}

}  // namespace efawatch::cli
