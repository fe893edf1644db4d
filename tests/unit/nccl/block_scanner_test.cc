// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/block_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/report_json.h"

namespace efawatch::nccl {
namespace {

constexpr size_t kLong = 65536;

// Every test runs with each scan this machine has (internal::ForceScanLevel): the AVX2 scan must
// find what the line-by-line one finds.
class BlockScannerTest : public ::testing::TestWithParam<internal::ScanLevel> {
 protected:
  void SetUp() override { internal::ForceScanLevel(GetParam()); }
  void TearDown() override { internal::ForceScanLevel(internal::ScanLevel::kBest); }
};

std::string LevelName(const ::testing::TestParamInfo<internal::ScanLevel>& info) {
  switch (info.param) {
    case internal::ScanLevel::kBest:
      return "Best";
    case internal::ScanLevel::kColour:
      return "Colour";
    case internal::ScanLevel::kLines:
      return "Lines";
  }
  return "Unknown";
}

INSTANTIATE_TEST_SUITE_P(EachScan, BlockScannerTest,
                         ::testing::Values(internal::ScanLevel::kBest, internal::ScanLevel::kColour,
                                           internal::ScanLevel::kLines),
                         LevelName);

TEST(BlockScanLevelTest, TheBestScanIsTheWidestTheCpuHasAndTheLineScanCanBeForced) {
#if defined(__x86_64__)
  EXPECT_EQ(internal::ScanName(), __builtin_cpu_supports("avx2") ? "avx2" : "lines");
#endif
  internal::ForceScanLevel(internal::ScanLevel::kColour);
#if defined(__x86_64__)
  EXPECT_EQ(internal::ScanName(), __builtin_cpu_supports("avx2") ? "avx2-colour" : "lines");
#endif
  internal::ForceScanLevel(internal::ScanLevel::kLines);
  EXPECT_EQ(internal::ScanName(), "lines");
  internal::ForceScanLevel(internal::ScanLevel::kBest);
}

// The indices ForEachCandidateLine() visits (never asking for the next line), checking that
// each visited line is the block's line of that index and the returned count.
std::vector<uint64_t> Visited(const std::vector<std::string>& lines, size_t long_line_bytes,
                              bool trailing_newline = true, bool json = true) {
  std::string block;
  for (size_t i = 0; i < lines.size(); ++i) {
    block += lines[i];
    if (trailing_newline || i + 1 < lines.size()) block += '\n';
  }
  std::vector<uint64_t> got;
  const uint64_t n = ForEachCandidateLine(
      block, long_line_bytes, false,
      [&](uint64_t index, std::string_view line) {
        EXPECT_LT(index, lines.size());
        if (index < lines.size()) {
          EXPECT_EQ(line, lines[index]);
        }
        got.push_back(index);
        return false;
      },
      false, json);
  size_t want_lines = lines.size();
  if (!trailing_newline && !lines.empty() && lines.back().empty()) --want_lines;
  EXPECT_EQ(n, want_lines);
  return got;
}

std::vector<uint64_t> Expected(const std::vector<std::string>& lines, size_t long_line_bytes,
                               bool json = true) {
  std::vector<uint64_t> want;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (IsCandidateLine(lines[i], long_line_bytes, json)) want.push_back(i);
  }
  return want;
}

// A file whose lines cannot be docker json-file records (CRI, plain): Trainer's metric dicts
// and JSON-lines logging start with '{' and are text, passed over like any chatter, by the
// vector scan and the line-by-line path alike; a '{' line with a needle is still found.
TEST_P(BlockScannerTest, BraceLinesAreTextWhereTheFileHoldsNoJsonRecords) {
  std::vector<std::string> lines;
  for (int i = 0; i < 200; ++i) {
    lines.push_back("{'loss': 1.2" + std::to_string(i) +
                    ", 'grad_norm': 0.51, 'learning_rate': 1e-05, 'epoch': 0.1}");
    lines.emplace_back(R"({"level":"info","msg":"step done","step":12})");
  }
  lines.emplace_back("{'x': 'NCCL INFO in a dict'}");
  EXPECT_EQ(Visited(lines, kLong, true, false), (std::vector<uint64_t>{400}));
  EXPECT_EQ(Visited(lines, 40, true, false), Expected(lines, 40, false));
  EXPECT_EQ(Visited(lines, kLong, true, true).size(), 401u) << "json records possible";
  for (size_t offset = 0; offset < 70; ++offset) {
    std::vector<std::string> shifted = {std::string(offset, 'x'), "{brace", "NCCL here"};
    EXPECT_EQ(Visited(shifted, 4096, true, false), Expected(shifted, 4096, false)) << offset;
  }
}

TEST_P(BlockScannerTest, CandidateLinesHoldWhatTheAnalyzerReadsAndNothingElse) {
  for (const char* line : {
           "h:1:2 [0] NCCL INFO Using network Socket",
           "h:1:2 [0] INFO legacy record",
           "h:1:2 [0] misc/ibvwrap.cc:12 WARN legacy warning",
           "NCCL version 2.19.3+cuda12.3",
           "export FI_PROVIDER=tcp",
           "libfabric:1234:1700000000::efa:core:efa_getinfo():1 provider efa output empty list",
           "#  Rank  0 Group  0 Pid  12 on  node-a device  0 [0x53] NVIDIA H100",
           "2026-12-02T10:00:00.000000001Z stdout P the first piece of a long line",
           R"({"log":"step \"1\"\n","stream":"stdout","time":"2026-12-02T10:00:00Z"})",
           R"({"log":"the first piece","stream":"stdout","time":"2026-12-02T10:00:00Z"})",
           R"({"log":"\u001b[1mNC\u001b[0mCL\n","stream":"stdout"})",
           R"({"stream":"stdout","log":"step 1\n"})",
           "(RayTrainWorker pid=7) step 3 [repeated 7x across cluster]",
           ":task_name:RayTrainWorker.__init__",
           ":actor_name:RayTrainWorker",
           ":job_id:01000000",
           "step 1\x1b[0m loss",
           "\x1b[1m\x1b[36mstep 1 loss",
           "\x1b[36mstep 1 loss\x1b[0m\r",
           "step\x1b]0;title\x07 1",
       }) {
    EXPECT_TRUE(IsCandidateLine(line, kLong)) << line;
  }
  EXPECT_TRUE(IsCandidateLine(std::string_view("bin\0ary", 7), kLong));
  for (const char* line : {"", "step 1 loss 0.25 lr 3e-4", "GET /healthz 200",
                           "2026-12-02T10:00:00.000000001Z stdout F step 2 loss 0.24",
                           "a line that ends in WARN", "Info: INFORMATION nccl lower case",
                           "PyTorch FSDP wrapped 12 modules", "epoch: 3 ratio: 0.5 url: http://x",
                           R"({"log":"step 1\n","stream":"stdout","time":"2026-12-02T10:00:00Z"})",
                           "2025-03-04 05:06:07,123 - INFO - step 1 loss 0.25",
                           "\x1b[36mstep 1 loss\x1b[0m", "\x1b[36mstep 1\x1b[0m\x1b[1m",
                           // Any sequence that starts the line: what cleaning deletes is a prefix.
                           "\x1b]0;title\x07step 1", "\x1bXstep 1", "\x1b(Bstep 1"}) {
    EXPECT_FALSE(IsCandidateLine(line, kLong)) << line;
  }
  EXPECT_TRUE(IsCandidateLine(std::string(101, 'x'), 100));
  EXPECT_FALSE(IsCandidateLine(std::string(100, 'x'), 100));
}

// The vector scan looks 32 bytes at a time and at pairs of bytes: every needle at every offset
// around a step boundary, on the first line and later ones, must be found, and nothing else.
TEST_P(BlockScannerTest, FindsEveryNeedleAtEveryOffset) {
  const std::vector<std::string> needles = {
      "NCCL",       " INFO ",     " WARN ",
      "FI_",        "libfabric:", " P ",
      "[repeated ", ":task_",     ":actor_name:",
      ":job_id:",   "#",          std::string(1, '\0'),
      "\x1b",       "NCC",        " INF",
      "FI",         "ibfabric:",  "[repeate",
      ":task",      ":job_i",     "P ",
      " P",         "{",          "] INFO ",
      "\x1b[0m",    "\x1b[0",     R"("log":"step 1\n","stream":"stdout"})",
      "] I",        "] ",         "] INF",
      "]] INFO ",   "] IINFO ",
  };
  for (const std::string& needle : needles) {
    for (size_t offset = 0; offset < 70; ++offset) {
      for (size_t first = 0; first < 3; ++first) {
        std::vector<std::string> lines(first, "step 1 loss 0.25 lr 3e-4 and more text here");
        lines.push_back(std::string(offset, 'x') + needle + "yy");
        lines.emplace_back("ordinary training chatter without anything of interest, long enough");
        lines.push_back("{" + needle);  // a docker json-file line starts with '{'
        lines.emplace_back("x{not at the start} again enough text to fill a step or two of it");
        EXPECT_EQ(Visited(lines, 4096), Expected(lines, 4096))
            << "needle=" << needle << " offset=" << offset << " first=" << first;
        // Below 64 bytes the line-by-line path runs (as on a CPU without AVX2).
        EXPECT_EQ(Visited(lines, 40), Expected(lines, 40))
            << "needle=" << needle << " offset=" << offset << " first=" << first;
      }
    }
  }
}

// A log coloured line by line: each line starts with a colour code and ends with a reset, which
// the scan passes over without looking at it (every block starts with an escape, so the best
// scan filters such codes by mask); any other code, a code that does not end its line, and a
// needle split by a reset are judged as the line-by-line path judges them, wherever the code
// falls in the 64-byte steps.
TEST_P(BlockScannerTest, ColourCodesAreJudgedAlikeAtEveryOffset) {
  const std::vector<std::string> ends = {
      "\x1b[0m",
      "\x1b[m",
      "\x1b[0m\x1b[1m",
      "\x1b[0;1m",
      "\x1b[0mX",
      "\x1b[0m\r",
      "\x1b[0",
      "\x1b[",
      "\x1b",
      "\x1b[1m",
      "NC\x1b[0mCL",
      "NC\x1b[mCL",
      "\x1b[0m\x1b[0m",
      "\x1b[00m",
      "x\x1b[m\x1b[m",
      "F\x1b[0mI_x",
      "\x1b[0mNCCL",
      "\x1b]0;t\x07",
      "[0m\x1b[0m",
      "\x1b[0m ",
      // Four bytes before the newline that only look like a reset.
      "\x1b(0m",
      "\x1b[Am",
      "\x1b[\x1bm",
      std::string("\x1b") + "0m",
      "\x1b(m",
  };
  for (const std::string& end : ends) {
    for (size_t offset = 0; offset < 140; ++offset) {
      std::vector<std::string> lines;
      for (size_t k = 0; k < 4; ++k) {
        lines.push_back("\x1b[36m" + std::string(offset + k, 'a') + "\x1b[0m");
        lines.push_back("\x1b[36m" + std::string(offset + k, 'a') + end);
      }
      // Other anchors where a harmless escape would be: starting a line, before a reset's bytes.
      lines.push_back("#" + std::string(offset, 'a') + "\x1b[0m");
      lines.push_back("\x1b[36m" + std::string(offset, 'a') + "#[0m");
      EXPECT_EQ(Visited(lines, 4096), Expected(lines, 4096))
          << "end=" << ::testing::PrintToString(end) << " offset=" << offset;
    }
  }
}

// In a docker json-file log a record's test runs at the line's first backslash, found by the
// vector scan's carry over the 64-byte steps: a record whose text ends at every offset around a
// step boundary, with and without escapes, split (no backslash at all, across several steps),
// behind a line without a newline, and lines that are no records, must be judged as the
// line-by-line path judges them, including where a record runs into the block's tail.
TEST_P(BlockScannerTest, DockerRecordsAreJudgedAtTheirFirstBackslashAtEveryOffset) {
  const std::string tail = R"(","stream":"stdout","time":"2026-12-02T10:00:00.000000001Z"})";
  const std::vector<std::string> kinds = {
      R"(\n)" + tail,              // plain: not a candidate
      R"(\"q\"\n)" + tail,         // an escape first
      tail,                        // split: no backslash
      R"(\n","strea":"stdout"})",  // the wrong end
      R"(\n)",                     // ends at the backslash's 'n'
      R"(\)",                      // ends at the backslash
  };
  for (const std::string& kind : kinds) {
    for (size_t len = 0; len < 300; ++len) {
      std::vector<std::string> lines;
      for (size_t k = 0; k < 3; ++k) {
        lines.push_back(R"({"log":")" + std::string(len + k, 'a') + kind);
        lines.push_back(R"({"log":"step 1\n)" + tail);
      }
      lines.push_back("not a record \\ with backslashes " + std::string(len, 'b'));
      lines.emplace_back("");
      lines.push_back(R"({"lo":")" + std::string(len, 'c') + R"(\n)" + tail);
      lines.push_back("{" + std::string(len, 'd'));
      lines.push_back(R"({"log":")" + std::string(len, 'e') + kind);
      for (bool newline : {true, false}) {
        EXPECT_EQ(Visited(lines, 4096, newline), Expected(lines, 4096))
            << "kind=" << kind << " len=" << len << " newline=" << newline;
        EXPECT_EQ(Visited(lines, 4096, newline, false), Expected(lines, 4096, false))
            << "kind=" << kind << " len=" << len << " newline=" << newline;
      }
    }
  }
}

// A record whose first backslash lies past the 128 bytes after its line's start, behind plain
// records that put that start at every offset of the scan's steps: the line start that a step
// without events carries must be exact, or the record's head is looked for in the wrong place.
TEST_P(BlockScannerTest, ALongRecordIsJudgedFromItsOwnStartWhereverItStarts) {
  const std::string tail = R"(\n","stream":"stdout","time":"2026-12-02T10:00:00.000000001Z"})";
  for (const std::string& first : {std::string(R"(\"q)"), std::string()}) {
    for (size_t pad = 0; pad < 140; ++pad) {
      const std::vector<std::string> lines = {
          R"({"log":")" + std::string(pad, 'a') + tail,
          R"({"log":"step 1)" + tail + std::string(70, ' '),  // its newline 130 bytes on
          R"({"log":")" + std::string(200, 'e') + first + tail,
          R"({"log":"step 2)" + tail,
      };
      EXPECT_EQ(Visited(lines, 4096), Expected(lines, 4096)) << first << " pad=" << pad;
    }
  }
}

// The same judgement on seeded random lines made of a record's pieces (head, end, escapes,
// backslashes, braces, newlines), colour codes, "] " pairs and chatter, at random lengths: whatever
// the vector scan's steps, it visits what IsCandidateLine() accepts.
TEST_P(BlockScannerTest, RandomRecordPiecesAreJudgedAlike) {
  const std::vector<std::string> pieces = {
      R"({"log":")",
      R"(\n","stream":"stdout"})",
      "\\",
      "\\n",
      "{",
      "\"",
      "n",
      "\n",
      "\n\n",
      "step 1 loss 0.25 ",
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "NCCL",
      "\x1b[0m",
      "\x1b[36m",
      "\x1b",
      "] ",
      "] INFO ",
      "I",
      "#",
      "[0m",
      "m",
  };
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&state](uint64_t bound) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state % bound;
  };
  for (int round = 0; round < 3000; ++round) {
    std::string block;
    const uint64_t count = 1 + next(60);  // up to ~1.5 kB: several 128-byte steps
    for (uint64_t i = 0; i < count; ++i) block += pieces[next(pieces.size())];
    std::vector<std::string> lines;
    for (size_t b = 0; b <= block.size();) {
      size_t e = block.find('\n', b);
      if (e == std::string::npos) e = block.size();
      lines.push_back(block.substr(b, e - b));
      b = e + 1;
    }
    const bool newline = !block.empty() && block.back() == '\n';
    if (newline) lines.pop_back();  // the empty "line" after the last newline
    for (bool json : {true, false}) {
      EXPECT_EQ(Visited(lines, 4096, newline, json), Expected(lines, 4096, json))
          << ::testing::PrintToString(block) << " json=" << json;
    }
  }
}

TEST_P(BlockScannerTest, LinesLongerThanTheLimitAreVisitedWhereverTheyStart) {
  for (size_t limit : {64u, 100u, 300u}) {
    for (size_t lead = 0; lead < 40; ++lead) {
      std::vector<std::string> lines = {std::string(lead, 'a')};
      for (size_t len : {limit - 1, limit, limit + 1, 2 * limit + 7, size_t{3}, limit + 33}) {
        lines.push_back(std::string(len, 'b'));
      }
      EXPECT_EQ(Visited(lines, limit), Expected(lines, limit)) << limit << " " << lead;
      EXPECT_EQ(Visited(lines, limit, false), Expected(lines, limit)) << limit << " " << lead;
    }
  }
}

TEST_P(BlockScannerTest, CountsLinesWithAndWithoutTheLastNewline) {
  auto count = [](std::string_view block) {
    return ForEachCandidateLine(block, kLong, false,
                                [](uint64_t, std::string_view) { return false; });
  };
  EXPECT_EQ(count(""), 0u);
  EXPECT_EQ(count("\n"), 1u);
  EXPECT_EQ(count("a"), 1u);
  EXPECT_EQ(count("a\nb\n"), 2u);
  EXPECT_EQ(count("a\nb"), 2u);
  EXPECT_EQ(count(std::string(1000, '\n')), 1000u);
  std::vector<uint64_t> last;
  ForEachCandidateLine("a\nb NCCL", kLong, false, [&](uint64_t index, std::string_view line) {
    EXPECT_EQ(line, "b NCCL");
    last.push_back(index);
    return false;
  });
  EXPECT_EQ(last, std::vector<uint64_t>{1});
}

// A visit that returns true (a split record awaits its rest) gets the next line too, needle or
// not; `visit_first` does the same across blocks.
TEST_P(BlockScannerTest, TheLineAfterAnUnfinishedRecordIsVisited) {
  const std::string block =
      "plain\nT stdout P h:1:2 [0] NCCL INFO Using net\nT stdout F work Socket\nplain\n"
      "T stdout P a\nT stdout P b\nT stdout F c\nplain again\n";
  std::vector<uint64_t> got;
  ForEachCandidateLine(block, kLong, true, [&](uint64_t index, std::string_view line) {
    got.push_back(index);
    return line.find(" P ") != std::string_view::npos;
  });
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 1, 2, 4, 5, 6}));
}

// With dense_runs, kDenseAfter candidate lines in a row make the next kDenseLines lines visited
// without the scan, candidates or not; then the scan resumes and skips chatter again. Without
// it, only candidates are visited.
TEST_P(BlockScannerTest, DenseRunsVisitTheLinesAfterARunOfCandidates) {
  std::string block;
  const uint64_t run = kDenseAfter, dense = kDenseLines;
  for (uint64_t i = 0; i < run; ++i) block += "h:1:2 [0] NCCL INFO line\n";
  for (uint64_t i = 0; i < dense + 10; ++i) block += "step loss 0.1\n";
  std::vector<uint64_t> exact, dense_visits;
  const uint64_t n = ForEachCandidateLine(block, kLong, false, [&](uint64_t i, std::string_view) {
    exact.push_back(i);
    return false;
  });
  const uint64_t n_dense = ForEachCandidateLine(
      block, kLong, false,
      [&](uint64_t i, std::string_view line) {
        EXPECT_EQ(line, i < run ? "h:1:2 [0] NCCL INFO line" : "step loss 0.1") << i;
        dense_visits.push_back(i);
        return false;
      },
      /*dense_runs=*/true);
  EXPECT_EQ(n, run + dense + 10);
  EXPECT_EQ(n_dense, n);
  ASSERT_EQ(exact.size(), run);
  ASSERT_EQ(dense_visits.size(), run + dense);  // the last 10 lines: scanned again, skipped
  for (uint64_t i = 0; i < dense_visits.size(); ++i) EXPECT_EQ(dense_visits[i], i);
}

// Windows double while the scan between them finds nothing but candidates, up to
// kDenseMaxLines, and start again at kDenseLines after a line the scan passes over. The chatter
// a window runs into is bounded by the run before it.
TEST_P(BlockScannerTest, DenseWindowsGrowOnlyWhileTheRunLasts) {
  // `visited_chatter` after `run` NCCL lines, then 2 * kDenseMaxLines chatter lines.
  auto chatter_visited = [](uint64_t run) {
    std::string block;
    for (uint64_t i = 0; i < run; ++i) block += "h:1:2 [0] NCCL INFO line\n";
    for (uint64_t i = 0; i < 2 * kDenseMaxLines; ++i) block += "step loss 0.1\n";
    uint64_t nccl = 0, chatter = 0;
    ForEachCandidateLine(
        block, kLong, false,
        [&](uint64_t i, std::string_view) {
          (i < run ? nccl : chatter) += 1;
          return false;
        },
        /*dense_runs=*/true);
    EXPECT_EQ(nccl, run);  // every candidate is visited
    return chatter;
  };
  // Windows of 64, 128, 256, ... each after 16 scanned lines: the run of 16 + 64 + 16 + 128
  // lines ends with a window of 128 lines, and the next window (256) runs into the chatter.
  EXPECT_EQ(
      chatter_visited(kDenseAfter + kDenseLines + kDenseAfter + 2 * kDenseLines + kDenseAfter),
      4 * kDenseLines);
  // However long the run, a window holds at most kDenseMaxLines lines.
  EXPECT_LE(chatter_visited(100000), kDenseMaxLines);
  EXPECT_GT(chatter_visited(100000), 0u);
  // A line the scan passes over starts the windows again: 64 lines after the 16 candidates
  // that follow the one the scan stops at. Windows of 64..1024 end at line 2064; the scan
  // then looks at lines 2064-2079, and line 2070 is chatter.
  std::string block;
  const uint64_t restart = 2070;
  for (uint64_t i = 0; i < restart; ++i) block += "h:1:2 [0] NCCL INFO line\n";
  block += "step loss 0.1\n";
  for (uint64_t i = 0; i < kDenseAfter + 1; ++i) block += "h:1:2 [0] NCCL INFO line\n";
  for (uint64_t i = 0; i < 1000; ++i) block += "step loss 0.1\n";
  uint64_t late_chatter = 0;
  ForEachCandidateLine(
      block, kLong, false,
      [&](uint64_t i, std::string_view line) {
        if (i > restart && line == "step loss 0.1") ++late_chatter;
        return false;
      },
      /*dense_runs=*/true);
  EXPECT_EQ(late_chatter, kDenseLines);
}

// The analyzer's block path must report what its per-line path reports, counters included,
// on a log where most lines are chatter and a record is split at "NC|CL" by the runtime.
TEST_P(BlockScannerTest, FeedLinesMatchesFeedingEveryLine) {
  std::vector<std::string> lines;
  for (int i = 0; i < 200; ++i) {
    lines.push_back("2026-12-02T10:00:00.000000001Z stdout F step " + std::to_string(i));
    if (i % 37 == 0) {
      lines.emplace_back(
          "2026-12-02T10:00:00.000000001Z stdout F a:1:1 [0] NCCL INFO Bootstrap : Using "
          "eth0:10.0.0.1<0>");
      lines.emplace_back("2026-12-02T10:00:00.000000001Z stdout P b:2:2 [0] NC");
      lines.emplace_back("2026-12-02T10:00:00.000000001Z stdout F CL INFO Using network Socket");
      lines.emplace_back("2026-12-02T10:00:00.000000001Z stdout F export FI_PROVIDER=tcp");
      lines.emplace_back("2026-12-02T10:00:00.000000001Z stdout F " + std::string(70000, 'z'));
    }
  }
  std::string block;
  for (const auto& l : lines) block += l + "\n";
  Analyzer per_line, blocks;
  for (size_t i = 0; i < lines.size(); ++i) per_line.Feed("x.log", i + 1, lines[i]);
  EXPECT_EQ(blocks.FeedLines("x.log", 1, block), lines.size());
  EXPECT_EQ(ReportToJson(blocks.Snapshot()).dump(), ReportToJson(per_line.Snapshot()).dump());
  EXPECT_EQ(blocks.counters().lines, per_line.counters().lines);
  EXPECT_EQ(blocks.counters().truncated_lines, per_line.counters().truncated_lines);
  EXPECT_EQ(blocks.counters().nccl_lines, per_line.counters().nccl_lines);
  EXPECT_EQ(blocks.counters().records, per_line.counters().records);
  EXPECT_GT(per_line.counters().truncated_lines, 0u);
  // The joined "NC|CL" record is seen: b's process exists.
  const Report r = blocks.Snapshot();
  bool saw_b = false;
  for (const Process& p : r.processes) saw_b = saw_b || p.host == "b";
  EXPECT_TRUE(saw_b);
}

}  // namespace
}  // namespace efawatch::nccl
