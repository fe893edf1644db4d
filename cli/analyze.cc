#include "cli/analyze.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "daemon/nccl/analyzer.h"
#include "daemon/nccl/report_json.h"

namespace efawatch::cli {
namespace {

constexpr size_t kChunk = 1 << 20;

// Feeds every line of `data` (the last one may lack its newline), numbering from 1; returns
// the number of lines.
uint64_t FeedBuffer(std::string_view source, std::string_view data, nccl::Analyzer* analyzer) {
  return analyzer->FeedLines(source, 1, data);
}

// Large files are cut at line boundaries into one part per physical core (half the hardware
// threads: the scan is memory-bound and gains little from SMT siblings; on a 2-vCPU box it
// stays sequential, where two threads measured no faster); each part is analyzed by its own
// Analyzer on its own thread and the results are merged in order (Analyzer::Merge, tested to
// give the same report as one pass).
constexpr size_t kParallelMinBytes = 32u << 20;
constexpr unsigned kMaxThreads = 4;

unsigned ParallelParts(size_t bytes) {
  unsigned n = std::min(kMaxThreads, std::thread::hardware_concurrency() / 2);
  return n < 2 || bytes < kParallelMinBytes ? 1 : n;
}

void FeedParallel(std::string_view source, std::string_view data, unsigned n,
                  nccl::Analyzer* analyzer) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (unsigned i = 1; i < n && start < data.size(); ++i) {
    size_t cut = std::max(start, data.size() * i / n);
    const void* nl = memchr(data.data() + cut, '\n', data.size() - cut);
    if (nl == nullptr) break;
    size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data.data()) + 1;
    parts.push_back(data.substr(start, end - start));
    start = end;
  }
  parts.push_back(data.substr(start));
  std::vector<std::unique_ptr<nccl::Analyzer>> later;
  std::vector<uint64_t> counts(parts.size(), 0);
  {
    std::vector<std::jthread> threads;
    for (size_t i = 1; i < parts.size(); ++i) {
      later.push_back(std::make_unique<nccl::Analyzer>(analyzer->options()));
      threads.emplace_back(
          [&, i, a = later.back().get()] { counts[i] = FeedBuffer(source, parts[i], a); });
    }
    counts[0] = FeedBuffer(source, parts[0], analyzer);
  }  // joins
  uint64_t offset = counts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    analyzer->Merge(std::move(*later[i - 1]), offset);
    offset += counts[i];
  }
}

// Regular uncompressed files large enough to be split across threads are mapped and scanned in
// place; returns false when the file is not such a file, so the caller streams it instead.
// A single thread streams even a regular file: read() into a buffer that stays in cache was
// measured 2-3x cheaper than first-touch page faults on a mapping (bench/analyze.sh).
bool FeedMapped(const std::string& path, nccl::Analyzer* analyzer) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 2 ||
      ParallelParts(static_cast<size_t>(st.st_size)) < 2) {
    close(fd);
    return false;
  }
  unsigned char magic[2] = {0, 0};
  if (pread(fd, magic, 2, 0) != 2 || (magic[0] == 0x1f && magic[1] == 0x8b)) {
    close(fd);
    return false;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return false;
  madvise(map, size, MADV_SEQUENTIAL);
  FeedParallel(path, std::string_view(static_cast<const char*>(map), size), ParallelParts(size),
               analyzer);
  munmap(map, size);
  return true;
}

// Reads `path` (or stdin for "-") and feeds it line by line. Plain files are read with read()
// into one reused buffer; gzip files (by their magic bytes) go through zlib. Lines that cross
// a buffer boundary are moved to the front of the buffer, not copied aside.
absl::Status FeedFile(const std::string& path, nccl::Analyzer* analyzer) {
  if (path != "-" && FeedMapped(path, analyzer)) return absl::OkStatus();
  int fd = path == "-" ? dup(STDIN_FILENO) : open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(path + ": " + (errno != 0 ? std::strerror(errno) : "cannot open"));
  }
  // zlib decides by the first bytes whether to decompress; peeking needs a seekable file, so
  // pipes always go through zlib (which passes plain data through unchanged).
  unsigned char magic[2] = {0, 0};
  bool seekable = lseek(fd, 0, SEEK_CUR) == 0;
  bool gzip = !seekable || pread(fd, magic, 2, 0) != 2 || (magic[0] == 0x1f && magic[1] == 0x8b);
  gzFile f = nullptr;
  if (gzip) {
    f = gzdopen(fd, "rb");
    if (f == nullptr) {
      close(fd);
      return absl::NotFoundError(path + ": cannot open");
    }
    gzbuffer(f, kChunk);
  }
  // One chunk plus room for a carried partial line; the analyzer truncates long lines, so a
  // line longer than the buffer is fed in one piece of kChunk bytes and the rest is dropped.
  std::string buf(2 * kChunk, '\0');
  size_t have = 0;
  bool skipping = false;  // inside the dropped rest of an over-long line
  uint64_t line_no = 0;
  const std::string_view source = path == "-" ? std::string_view("<stdin>") : path;
  for (;;) {
    size_t room = buf.size() - have;
    int64_t n = 0;
    if (gzip) {
      n = gzread(f, buf.data() + have, static_cast<unsigned>(std::min(room, kChunk)));
    } else {
      n = read(fd, buf.data() + have, std::min(room, kChunk));
      if (n < 0 && errno == EINTR) continue;
    }
    if (n < 0) {
      std::string msg;
      if (gzip) {
        int code = 0;
        msg = gzerror(f, &code);
        gzclose(f);
      } else {
        msg = std::strerror(errno);
        close(fd);
      }
      return absl::DataLossError(path + ": " + msg);
    }
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
      // Whole lines go to the analyzer as one block; the unfinished tail waits for more data.
      size_t last = data.rfind('\n');
      if (last != std::string_view::npos && last >= start) {
        line_no += analyzer->FeedLines(source, line_no + 1, data.substr(start, last + 1 - start));
        start = last + 1;
      }
    }
    have = skipping ? 0 : data.size() - start;
    if (have >= kChunk) {
      // An over-long line: feed what is here as the line, skip the rest up to its newline.
      analyzer->Feed(source, ++line_no, data.substr(start, have));
      skipping = true;
      have = 0;
    } else if (have > 0 && start > 0) {
      memmove(buf.data(), data.data() + start, have);
    }
  }
  if (have > 0 && !skipping) analyzer->Feed(source, ++line_no, std::string_view(buf.data(), have));
  if (gzip) {
    gzclose(f);
  } else {
    close(fd);
  }
  return absl::OkStatus();
}

void PrintText(const nccl::Report& r, std::ostream& out) {
  const nccl::Summary& s = r.summary;
  out << s.verdict << "\n\n";
  out << "network:        " << (s.network.empty() ? "unknown" : s.network);
  if (!s.network_family.empty() && s.network_family != s.network)
    out << " (" << s.network_family << ")";
  out << "\n";
  out << "inter-node:     " << s.inter_node_transport << "\n";
  out << "ofi provider:   " << s.ofi_provider << "\n";
  out << "gdr:            " << s.gdr << "\n";
  out << "nccl version:   " << (s.nccl_version.empty() ? "unknown" : s.nccl_version) << "\n";
  out << "ranks/nodes:    " << (s.ranks < 0 ? std::string("?") : std::to_string(s.ranks)) << " / "
      << (s.nodes < 0 ? std::string("?") : std::to_string(s.nodes)) << "\n";
  out << "processes:      " << r.processes.size() << "\n";
  out << "lines:          " << s.lines << " (" << s.nccl_lines << " NCCL, " << s.malformed_lines
      << " malformed, " << s.warn_records << " WARN)\n";
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
    if (!f.evidence.file.empty()) {
      out << "      " << f.evidence.file << ":" << f.evidence.line << ": " << f.evidence.text
          << "\n";
    }
  }
}

}  // namespace

int RunAnalyze(const std::vector<std::string>& files, const std::string& format, std::ostream& out,
               std::ostream& err) {
  if (format != "text" && format != "json") {
    err << "efawatch analyze: unknown --format '" << format << "' (use text or json)\n";
    return 2;
  }
  if (files.empty()) {
    err << "efawatch analyze: no input file (use - for stdin)\n";
    return 2;
  }
  nccl::Analyzer analyzer;
  for (const std::string& path : files) {
    errno = 0;
    absl::Status st = FeedFile(path, &analyzer);
    if (!st.ok()) {
      err << "efawatch analyze: " << st.message() << "\n";
      return 2;
    }
  }
  nccl::Report report = analyzer.Snapshot();
  if (format == "json") {
    out << nccl::ReportToJson(report).dump(2) << "\n";
  } else {
    PrintText(report, out);
  }
  return report.MaxSeverity() == nccl::Severity::kCritical ? 1 : 0;
}

}  // namespace efawatch::cli
