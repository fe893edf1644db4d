// SPDX-License-Identifier: Apache-2.0
// Analyzer::FeedLines must give the report (and counters) that an analyzer parsing every line
// (AnalyzerOptions::block_scan false) gives line by line,
// whatever the envelope and wherever the input is cut into blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "lib/nccl/report_json.h"
#include "tests/unit/nccl/nccl_test_util.h"

namespace efawatch::nccl {
namespace {

using testing::FixtureDir;
using testing::ReadLines;
using testing::SharedDir;
using testing::Wrap;
using testing::WrapLine;

std::string Dump(const Analyzer& a) {
  const Counters& c = a.counters();
  return ReportToJson(a.Snapshot()).dump() + " lines=" + std::to_string(c.lines) +
         " nccl=" + std::to_string(c.nccl_lines) +
         " malformed=" + std::to_string(c.malformed_lines) +
         " truncated=" + std::to_string(c.truncated_lines) +
         " records=" + std::to_string(c.records);
}

void CheckBlocks(const std::string& name, const std::vector<std::string>& physical) {
  SCOPED_TRACE(name);
  AnalyzerOptions every_line;
  every_line.block_scan = false;
  Analyzer per_line(every_line);
  std::string text;
  for (size_t i = 0; i < physical.size(); ++i) {
    per_line.Feed(name, i + 1, physical[i]);
    text += physical[i];
    text += '\n';
  }
  const std::string want = Dump(per_line);
  // Cuts at line boundaries: one block, and two blocks cut at a few places.
  std::vector<size_t> starts = {0};
  for (size_t i = 0; i < physical.size(); ++i)
    starts.push_back(starts.back() + physical[i].size() + 1);
  for (size_t k = 0; k <= physical.size(); k += std::max<size_t>(1, physical.size() / 5)) {
    Analyzer blocks;
    uint64_t n = blocks.FeedLines(name, 1, std::string_view(text).substr(0, starts[k]));
    EXPECT_EQ(n, k);
    n += blocks.FeedLines(name, n + 1, std::string_view(text).substr(starts[k]));
    EXPECT_EQ(n, physical.size());
    EXPECT_EQ(Dump(blocks), want) << "cut before line " << k + 1;
  }
}

void CheckFile(const std::string& path) {
  std::vector<std::string> lines = ReadLines(path);
  for (Wrap wrap : {Wrap::kPlain, Wrap::kCri, Wrap::kDockerJson}) {
    std::vector<std::string> physical;
    for (size_t i = 0; i < lines.size(); ++i) {
      for (std::string& p : WrapLine(lines[i], wrap, i)) physical.push_back(std::move(p));
    }
    CheckBlocks(path + " wrap " + std::to_string(static_cast<int>(wrap)), physical);
  }
}

TEST(AnalyzerFeedLinesTest, FixturesGiveTheSameReportAsFeed) {
  for (const auto& e : std::filesystem::directory_iterator(FixtureDir())) {
    if (e.path().extension() == ".log") CheckFile(e.path().string());
  }
}

TEST(AnalyzerFeedLinesTest, CorpusGivesTheSameReportAsFeed) {
  const std::string dir = SharedDir() + "/nccl-logs";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared NCCL corpus not found at " << dir;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".log") CheckFile(e.path().string());
  }
}

// ANSI codes in a plain line between clean ones, and codes that reach the text without a raw
// ESC byte in the line: JSON-escaped, or in a CRI piece fed in an earlier block and joined
// with a later one.
TEST(AnalyzerFeedLinesTest, AnsiCodesOutsideTheBlockAreStillRemoved) {
  const std::string colored =
      "\x1b[32mgpu1:10:11 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo\x1b[0m";
  std::vector<std::string> physical = WrapLine(colored, Wrap::kDockerJson, 0);
  physical.push_back(
      "2025-03-04T05:06:07.1Z stdout P \x1b[1mgpu2:20:21 [0] NCCL INFO NCCL_SOCKET_");
  physical.push_back("2025-03-04T05:06:07.2Z stdout F IFNAME set by environment to lo\x1b[0m");
  physical.push_back("gpu3:30:31 [1] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>");
  physical.push_back("\x1b[33mgpu4:40:41 [2] NCCL INFO Using network Socket\x1b[0m");
  physical.push_back("gpu5:50:51 [3] NCCL INFO Using network Socket");
  CheckBlocks("ansi", physical);
  Analyzer a;
  std::string text;
  for (const std::string& p : physical) text += p + "\n";
  a.FeedLines("ansi", 1, text);
  Report r = a.Snapshot();
  std::vector<std::string> hosts;
  for (const Process& p : r.processes) hosts.push_back(p.host);
  std::sort(hosts.begin(), hosts.end());
  EXPECT_EQ(hosts, (std::vector<std::string>{"gpu1", "gpu2", "gpu3", "gpu4", "gpu5"}));
}

// The block's ESC bytes are found by one forward scan, not per line: codes in the middle of
// lines that otherwise look clean (a letter first and last) are removed wherever they are, near
// the start of a block, 64 KiB into it and far beyond.
TEST(AnalyzerFeedLinesTest, AnsiCodesInTheMiddleOfCleanLookingLinesFarApart) {
  auto colored = [](int host) {
    return "gpu" + std::to_string(host) +
           ":7:8 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to \x1b[1mlo\x1b[0m";
  };
  const std::string filler = "gpu0:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC";
  std::vector<std::string> physical;
  size_t offset = 0;
  auto add = [&](const std::string& line) {
    physical.push_back(line);
    offset += line.size() + 1;
  };
  // A colored line starts 8 bytes before 64 KiB, so its first ESC lies beyond (a pad line of
  // other text sets the offset exactly); the first line is colored too.
  constexpr size_t k64KiB = 65536;
  const size_t esc_in_line = colored(1).find('\x1b');
  add(colored(3));
  while (offset + 2 * (filler.size() + 1) < k64KiB) add(filler);
  add(std::string(k64KiB - 8 - offset - 1, 'x'));
  ASSERT_EQ(offset, k64KiB - 8);
  ASSERT_GT(esc_in_line, 8u);
  add(colored(1));
  for (int i = 0; i < 6000; ++i) add(filler);
  add(colored(2));
  ASSERT_GT(offset, 5 * k64KiB);
  // The same report as line by line (where every line is cleaned), and that report sees the
  // codes removed: "lo" is the loopback interface.
  CheckBlocks("far-ansi", physical);
  Analyzer a;
  std::string text;
  for (const std::string& p : physical) text += p + "\n";
  a.FeedLines("far-ansi", 1, text);
  const Report r = a.Snapshot();
  EXPECT_TRUE(std::any_of(r.findings.begin(), r.findings.end(),
                          [](const Finding& f) { return f.kind == kLoopbackMisuse; }));
}

}  // namespace
}  // namespace efawatch::nccl
