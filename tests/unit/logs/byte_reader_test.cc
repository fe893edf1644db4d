// SPDX-License-Identifier: Apache-2.0
// The tailer's byte reader on one real file, without a pod log tree: lines handed over in runs,
// a partial line kept for the next read, long lines cut and counted, the read chunk and the
// backlog bound, copytruncate, holes and files that are not text.
#include "daemon/logs/byte_reader.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/subprocess.h"

namespace efawatch::logs {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Records each line with its number, and each call: "run:<first>+<count>" for OnLines and
// "line:<n>" for OnLine, to tell runs of whole lines from lines that went through `partial`.
class RecordingSink final : public LineSink {
 public:
  void OnLine(const LogSource& /*source*/, uint64_t n, std::string_view line) override {
    lines.push_back(std::to_string(n) + ":" + std::string(line));
    if (!in_run_) calls.push_back("line:" + std::to_string(n));
  }
  void OnLines(const LogSource& source, uint64_t first, uint64_t count,
               std::string_view block) override {
    calls.push_back("run:" + std::to_string(first) + "+" + std::to_string(count));
    in_run_ = true;
    LineSink::OnLines(source, first, count, block);
    in_run_ = false;
  }
  void OnSourceGone(const LogSource& /*source*/) override {}

  std::vector<std::string> lines;
  std::vector<std::string> calls;

 private:
  bool in_run_ = false;
};

class ByteReaderTest : public ::testing::Test {
 protected:
  // A TrackedFile open on `name` in the test's directory, created empty when missing.
  std::unique_ptr<TrackedFile> Open(const std::string& name) {
    const fs::path p = fs::path(dir_.path()) / name;
    if (!fs::exists(p)) std::ofstream(p).flush();
    auto t = std::make_unique<TrackedFile>();
    t->source.path = p;
    t->fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(t->fd, 0);
    return t;
  }
  void Append(const std::string& name, const std::string& text) {
    std::ofstream(fs::path(dir_.path()) / name, std::ios::app | std::ios::binary) << text;
  }

  testing::TempDir dir_;
  TailerOptions options_;
  TailerCounters counters_;
  RecordingSink sink_;
};

TEST_F(ByteReaderTest, HandsWholeLinesOverInOneRunAndKeepsAPartialLineForTheNextRead) {
  Append("0.log", "a\nb\nc");
  auto t = Open("0.log");
  ByteReader reader(options_, &sink_, counters_);
  EXPECT_FALSE(reader.Read(*t, false));
  EXPECT_THAT(sink_.calls, ElementsAre("run:1+2"));
  EXPECT_EQ(t->partial, "c");
  EXPECT_EQ(t->LineStart(), 4u) << "a restart resumes at the line begun, not after its bytes";
  Append("0.log", "d\ne\n");
  reader.Read(*t, false);
  EXPECT_THAT(sink_.lines, ElementsAre("1:a", "2:b", "3:cd", "4:e"));
  EXPECT_THAT(sink_.calls, ElementsAre("run:1+2", "line:3", "run:4+1"));
  EXPECT_EQ(counters_.lines_read, 4u);
  EXPECT_EQ(counters_.bytes_read, 9u);
  EXPECT_EQ(t->LineStart(), 9u);
}

TEST_F(ByteReaderTest, ALineLongerThanMaxLineBytesIsCutThereAndCounted) {
  options_.max_line_bytes = 8;
  Append("0.log", "short\n0123456789abcdef\nnext\n");
  auto t = Open("0.log");
  ByteReader reader(options_, &sink_, counters_);
  reader.Read(*t, true);
  EXPECT_THAT(sink_.lines, ElementsAre("1:short", "2:01234567", "3:next"));
  EXPECT_EQ(counters_.lines_read, 3u);
  EXPECT_EQ(counters_.lines_truncated, 1u);
  EXPECT_EQ(counters_.bytes_read, 28u) << "the cut bytes were read, not skipped";
}

TEST_F(ByteReaderTest, ALongLineSplitAcrossReadsIsCutOnceAndCountedOnce) {
  options_.max_line_bytes = 4;
  ByteReader reader(options_, &sink_, counters_);
  auto t = Open("0.log");
  Append("0.log", "abc");
  reader.Read(*t, false);
  Append("0.log", "defgh");
  reader.Read(*t, false);
  Append("0.log", "ij\nk\n");
  reader.Read(*t, false);
  EXPECT_THAT(sink_.lines, ElementsAre("1:abcd", "2:k"));
  EXPECT_EQ(counters_.lines_truncated, 1u);
}

TEST_F(ByteReaderTest, ReadsAtMostReadChunkBytesAndSaysThereIsMore) {
  options_.read_chunk_bytes = 4;
  Append("0.log", "abc\ndef\nghi\n");
  auto t = Open("0.log");
  ByteReader reader(options_, &sink_, counters_);
  EXPECT_TRUE(reader.Read(*t, false));
  EXPECT_THAT(sink_.lines, ElementsAre("1:abc"));
  EXPECT_EQ(t->offset, 4u);
  EXPECT_FALSE(reader.Read(*t, true)) << "to_eof reads past the chunk";
  EXPECT_THAT(sink_.lines, ElementsAre("1:abc", "2:def", "3:ghi"));
}

TEST_F(ByteReaderTest, ABacklogBeyondMaxBacklogBytesSkipsToItsTailCounted) {
  options_.read_chunk_bytes = 10;
  options_.max_backlog_bytes = 20;
  options_.tail_bytes = 10;
  std::string text;
  for (int i = 0; i < 10; ++i) text += "line " + std::to_string(i) + "...\n";  // 10 bytes each
  Append("0.log", text);
  auto t = Open("0.log");
  ByteReader reader(options_, &sink_, counters_);
  EXPECT_TRUE(reader.Read(*t, false));
  EXPECT_EQ(counters_.skipped_budget, 80u);  // from 10 to 100 - tail_bytes
  EXPECT_EQ(t->offset, 90u);
  reader.Read(*t, false);
  EXPECT_THAT(sink_.lines, ElementsAre("1:line 0...", "2:line 9..."));
}

TEST_F(ByteReaderTest, ACopytruncatedFileIsReadAgainFromItsStart) {
  Append("0.log", "one\ntwo\n");
  auto t = Open("0.log");
  ByteReader reader(options_, &sink_, counters_);
  reader.Read(*t, false);
  fs::resize_file(fs::path(dir_.path()) / "0.log", 0);
  Append("0.log", "x\n");
  reader.Read(*t, false);
  EXPECT_EQ(counters_.truncations, 1u);
  EXPECT_THAT(sink_.lines, ElementsAre("1:one", "2:two", "3:x")) << "line numbers go on";
}

TEST_F(ByteReaderTest, AHoleOfASparseFileIsSkippedCountedAndTheLinesAroundItRead) {
  const fs::path p = fs::path(dir_.path()) / "0.log";
  Append("0.log", "head\n");
  fs::resize_file(p, 64ull << 20);
  Append("0.log", "\ntail\n");
  auto t = Open("0.log");
  ByteReader reader(options_, &sink_, counters_);
  reader.Read(*t, true);
  EXPECT_GE(counters_.skipped_hole, 60ull << 20);
  EXPECT_LT(counters_.bytes_read, 4ull << 20) << "the hole was read, not skipped";
  ASSERT_FALSE(sink_.lines.empty());
  EXPECT_EQ(sink_.lines.front(), "1:head");
  EXPECT_EQ(sink_.lines.back().substr(sink_.lines.back().find(':')), ":tail");
}

TEST_F(ByteReaderTest, AFileThatIsNotTextIsLeftAfterItsFirstBytesAndNeverReadAgain) {
  std::string junk;
  for (int i = 0; i < 8192; ++i) junk += static_cast<char>(i % 7 == 0 ? '\n' : 1 + i % 3);
  Append("core.log", junk);
  auto t = Open("core.log");
  ByteReader reader(options_, &sink_, counters_);
  EXPECT_FALSE(reader.Read(*t, false));
  EXPECT_TRUE(t->binary);
  EXPECT_EQ(counters_.skipped_binary, junk.size());
  EXPECT_EQ(counters_.bytes_read, 0u);
  Append("core.log", "text now\n");
  EXPECT_FALSE(reader.Read(*t, true));
  EXPECT_THAT(sink_.lines, IsEmpty());
}

TEST_F(ByteReaderTest, TextWithTabsCarriageReturnsAndColourCodesIsText) {
  Append("0.log", "\x1b[31mred\x1b[0m\tcol\r\n");
  auto t = Open("0.log");
  ByteReader reader(options_, &sink_, counters_);
  reader.Read(*t, false);
  EXPECT_FALSE(t->binary);
  EXPECT_THAT(sink_.lines, ElementsAre("1:\x1b[31mred\x1b[0m\tcol\r"));
}

TEST_F(ByteReaderTest, AFileFirstSeenHugeIsReadAtItsHeadAndTailOnly) {
  options_.read_chunk_bytes = 6;  // the head, as head_bytes is a multiple of the read buffer
  Append("0.log", "h1\nh2\nmiddle\nt1\n");
  auto t = Open("0.log");
  t->skip_at = 6;   // after "h1\nh2\n"
  t->skip_to = 13;  // at "t1\n"
  ByteReader reader(options_, &sink_, counters_);
  EXPECT_TRUE(reader.Read(*t, false));
  reader.Read(*t, false);
  EXPECT_THAT(sink_.lines, ElementsAre("1:h1", "2:h2", "3:t1"));
  EXPECT_EQ(counters_.skipped_oversized, 7u);
}

}  // namespace
}  // namespace efawatch::logs
