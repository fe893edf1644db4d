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
  uint64_t line_no = 0;
  size_t start = 0;
  while (start < data.size()) {
    const void* nl = memchr(data.data() + start, '\n', data.size() - start);
    size_t end = nl == nullptr ? data.size()
                               : static_cast<size_t>(static_cast<const char*>(nl) - data.data());
    analyzer->Feed(source, ++line_no, data.substr(start, end - start));
    start = end + 1;
  }
  return line_no;
}

// Large files are cut at line boundaries into one part per physical core (half the hardware
// threads: the scan is memory-bound and gains little from SMT siblings; on a 2-vCPU box it
// stays sequential, where two threads measured no faster); each part is analyzed by its own
// Analyzer on its own thread and the results are merged in order (Analyzer::Merge, tested to
// give the same report as one pass).
constexpr size_t kParallelMinBytes = 32u << 20;
constexpr unsigned kMaxThreads = 4;

void FeedParallel(std::string_view source, std::string_view data, nccl::Analyzer* analyzer) {
  unsigned n = std::min(kMaxThreads, std::thread::hardware_concurrency() / 2);
  if (n < 2 || data.size() < kParallelMinBytes) {
    FeedBuffer(source, data, analyzer);
    return;
  }
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

// Regular uncompressed files are mapped and scanned in place (no copy); returns false when the
// file is not such a file, so the caller falls back to zlib.
bool FeedMapped(const std::string& path, nccl::Analyzer* analyzer) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 2) {
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
  FeedParallel(path, std::string_view(static_cast<const char*>(map), size), analyzer);
  munmap(map, size);
  return true;
}

// Reads `path` (or stdin for "-") through zlib, which passes plain data through unchanged and
// decompresses gzip, and feeds it line by line.
absl::Status FeedFile(const std::string& path, nccl::Analyzer* analyzer) {
  if (path != "-" && FeedMapped(path, analyzer)) return absl::OkStatus();
  gzFile f = path == "-" ? gzdopen(dup(STDIN_FILENO), "rb") : gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(path + ": " + (errno != 0 ? std::strerror(errno) : "cannot open"));
  }
  gzbuffer(f, kChunk);
  std::string buf(kChunk, '\0');
  std::string carry;
  uint64_t line_no = 0;
  const std::string_view source = path == "-" ? std::string_view("<stdin>") : path;
  for (;;) {
    int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      return absl::DataLossError(path + ": " + msg);
    }
    if (n == 0) break;
    std::string_view data(buf.data(), static_cast<size_t>(n));
    size_t start = 0;
    for (;;) {
      const void* nl = memchr(data.data() + start, '\n', data.size() - start);
      if (nl == nullptr) break;
      size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data.data());
      if (!carry.empty()) {
        carry.append(data.substr(start, end - start));
        analyzer->Feed(source, ++line_no, carry);
        carry.clear();
      } else {
        analyzer->Feed(source, ++line_no, data.substr(start, end - start));
      }
      start = end + 1;
    }
    // Keep the unfinished tail, bounded: the analyzer truncates long lines anyway.
    if (carry.size() < (1u << 20)) carry.append(data.substr(start));
  }
  if (!carry.empty()) analyzer->Feed(source, ++line_no, carry);
  gzclose(f);
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
