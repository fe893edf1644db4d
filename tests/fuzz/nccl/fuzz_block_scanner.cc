// SPDX-License-Identifier: Apache-2.0
// libFuzzer differential target for the block scanner (lib/nccl/block_scanner.h):
//   1. ForEachCandidateLine() (the vector scan) must visit exactly the lines IsCandidateLine()
//      (plain substring searches, line by line) accepts, with the right indices and count, and
//      the line after each one whose visit asks for it.
//   2. Analyzer::FeedLines() (which skips the other lines) must give the same report, in the
//      same order, and the same counters as an analyzer that parses every line
//      (AnalyzerOptions::block_scan false), wherever the blocks are cut.
// The first byte picks the line-length limit and the bounds, the second where blocks are cut;
// seeds are tests/fixtures/nccl/*.log.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/block_scanner.h"
#include "lib/nccl/report_json.h"

namespace {

using namespace efawatch::nccl;

std::vector<std::string_view> SplitLines(std::string_view input) {
  std::vector<std::string_view> lines;
  for (size_t b = 0; b < input.size();) {
    size_t e = input.find('\n', b);
    if (e == std::string_view::npos) e = input.size();
    lines.push_back(input.substr(b, e - b));
    b = e + 1;
  }
  return lines;
}

// Part 1: with `ask_every` > 0, the visit of every line whose index is a multiple of it asks
// for the next line.
void CheckScan(std::string_view input, const std::vector<std::string_view>& lines,
               size_t long_line_bytes, uint64_t ask_every) {
  std::vector<uint64_t> want;
  bool next_too = false;
  for (uint64_t i = 0; i < lines.size(); ++i) {
    if (next_too || IsCandidateLine(lines[i], long_line_bytes)) {
      want.push_back(i);
      next_too = ask_every != 0 && i % ask_every == 0;
    } else {
      next_too = false;
    }
  }
  std::vector<uint64_t> got;
  const uint64_t n = ForEachCandidateLine(input, long_line_bytes, false,
                                          [&](uint64_t index, std::string_view line) {
                                            if (index >= lines.size() || line != lines[index]) {
                                              __builtin_trap();
                                            }
                                            got.push_back(index);
                                            return ask_every != 0 && index % ask_every == 0;
                                          });
  if (n != lines.size() || got != want) __builtin_trap();
}

bool SameCounters(const Counters& a, const Counters& b) {
  return a.lines == b.lines && a.nccl_lines == b.nccl_lines &&
         a.malformed_lines == b.malformed_lines && a.evicted_processes == b.evicted_processes &&
         a.evicted_comms == b.evicted_comms && a.truncated_lines == b.truncated_lines &&
         a.records == b.records && a.warn_records == b.warn_records &&
         a.legacy_records == b.legacy_records && a.ray_repeated_lines == b.ray_repeated_lines &&
         a.ray_marker_lines == b.ray_marker_lines;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t mode = size > 0 ? data[0] : 0;
  // 40: below 64 bytes the line-by-line path runs, as on a CPU without AVX2.
  constexpr size_t kLimits[4] = {40, 100, 300, 64 * 1024};
  const size_t long_line_bytes = kLimits[mode & 3];
  const std::vector<std::string_view> lines = SplitLines(input);
  // Each scan this machine has (AVX2, AVX2 with the colour filter, line by line) against the
  // reference.
  for (internal::ScanLevel level :
       {internal::ScanLevel::kBest, internal::ScanLevel::kColour, internal::ScanLevel::kLines}) {
    internal::ForceScanLevel(level);
    CheckScan(input, lines, long_line_bytes, 0);
    CheckScan(input, lines, long_line_bytes, 1 + (mode >> 5));
  }
  internal::ForceScanLevel(internal::ScanLevel::kBest);

  AnalyzerOptions options;
  options.max_line_bytes = long_line_bytes;
  if (mode & 4) {
    options.max_processes = 3;
    options.max_comms_per_process = 2;
    options.max_settings_per_process = 2;
  }
  options.envelope = (mode & 8) != 0 ? Envelope::kPlain : Envelope::kAuto;
  options.group_by_source = (mode & 16) != 0;
  AnalyzerOptions every_line = options;
  every_line.block_scan = false;
  Analyzer per_line(every_line), blocks(options);
  for (size_t i = 0; i < lines.size(); ++i) per_line.Feed("a.log", i + 1, lines[i]);
  // Blocks end at line ends: cut after the line holding the byte the second input byte picks.
  size_t cut = size > 1 ? (static_cast<size_t>(data[1]) * input.size()) / 256 : 0;
  cut = input.find('\n', cut);
  const size_t k = cut == std::string_view::npos ? input.size() : cut + 1;
  uint64_t m = blocks.FeedLines("a.log", 1, input.substr(0, k));
  m += blocks.FeedLines("a.log", m + 1, input.substr(k));
  if (m != lines.size() || !SameCounters(per_line.counters(), blocks.counters()) ||
      ReportToJson(per_line.Snapshot()).dump() != ReportToJson(blocks.Snapshot()).dump()) {
    __builtin_trap();
  }
  return 0;
}
