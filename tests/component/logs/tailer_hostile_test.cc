// SPDX-License-Identifier: Apache-2.0
// The real tailer against state a tenant or a crash can leave behind: a checkpoint of the wrong
// shape, and the deleted log of an older restart of a container whose directory lives on.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/logs/tailer.h"
#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::logs {
namespace {

namespace fs = std::filesystem;

class CountingSink final : public LineSink {
 public:
  void OnLine(const LogSource& /*s*/, uint64_t /*n*/, std::string_view line) override {
    ++lines;
    if (line.find("marker") != std::string_view::npos) markers.emplace_back(line);
  }
  void OnSourceGone(const LogSource& /*s*/) override { ++gone; }
  std::string Checkpoint() const override { return "state"; }
  void Restore(std::string_view state) override { restored = std::string(state); }

  int lines = 0;
  int gone = 0;
  std::string restored;
  std::vector<std::string> markers;  // lines naming "marker", in order
};

constexpr char kCri[] = "2026-12-02T10:00:00.000000001Z stdout F ";

// Open descriptors of this process whose target names `needle` (e.g. "0.log (deleted)").
int OpenFdsNaming(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(e.path(), ec).string();
    if (!ec && target.find(needle) != std::string::npos) ++n;
  }
  return n;
}

class TailerHostileTest : public ::testing::Test {
 protected:
  TailerOptions Options() {
    TailerOptions o;
    o.pod_log_root = fs::path(dir_.path()) / "pods";
    o.state_file = fs::path(dir_.path()) / "state.json";
    fs::create_directories(o.pod_log_root);
    return o;
  }
  testing::TempDir dir_;
  common::FakeClock clock_;
};

TEST_F(TailerHostileTest, CheckpointOfTheWrongShapeIsSetAsideAndTheTailerStartsFresh) {
  const TailerOptions o = Options();
  for (const std::string bad : {R"({"files":[1,"x",null]})", R"({"files":"x"})",
                                R"({"files":[{"path":"/p","offset":"12"}]})", R"({"counters":[1]})",
                                R"({"counters":{"bytes_read":-1}})", R"({"sink":5})", R"([1,2])",
                                R"({"files":[{"path":"/p"})"}) {
    SCOPED_TRACE(bad);
    std::ofstream(o.state_file) << bad;
    CountingSink sink;
    Tailer t(o, &sink, clock_);
    ASSERT_NO_THROW(ASSERT_TRUE(t.Start().ok()));
    t.Stop();
    EXPECT_EQ(t.counters().checkpoints_set_aside.load(), 1u);
    EXPECT_EQ(testing::ReadFileOrEmpty(o.state_file.string() + ".bad"), bad);
    EXPECT_TRUE(sink.restored.empty()) << "nothing of a bad checkpoint is restored";
    EXPECT_TRUE(fs::exists(o.state_file)) << "Stop() wrote a fresh checkpoint";
    fs::remove(o.state_file);
  }
}

TEST_F(TailerHostileTest, DeletedLogOfAnOlderRestartIsClosedOnceDrained) {
  const TailerOptions o = Options();
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  std::ofstream(ctr / "0.log") << "2026-12-02T10:00:00Z stdout F first run\n";
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.PollOnce();
  ASSERT_EQ(sink.lines, 1);
  ASSERT_EQ(OpenFdsNaming("/main/0.log"), 1);

  // CrashLoopBackOff: the container restarts, kubelet starts 1.log and removes 0.log (after its
  // last line was written); the container's directory stays.
  std::ofstream(ctr / "0.log", std::ios::app) << "2026-12-02T10:00:01Z stdout F last words\n";
  std::ofstream(ctr / "1.log") << "2026-12-02T10:00:02Z stdout F second run\n";
  fs::remove(ctr / "0.log");
  t.PollOnce();
  EXPECT_EQ(sink.lines, 3) << "the deleted file was drained first";
  EXPECT_EQ(OpenFdsNaming("0.log (deleted)"), 0) << "its descriptor and disk space are released";
  EXPECT_EQ(t.counters().files_watched.load(), 1u);
  EXPECT_EQ(t.counters().deleted_files_closed.load(), 1u);
  EXPECT_EQ(sink.gone, 0) << "the container is not gone: 1.log goes on";

  // Many restarts do not add up.
  for (int i = 2; i < 40; ++i) {
    std::ofstream(ctr / (std::to_string(i) + ".log")) << "2026-12-02T10:00:03Z stdout F run\n";
    fs::remove(ctr / (std::to_string(i - 1) + ".log"));
    t.PollOnce();
  }
  EXPECT_EQ(OpenFdsNaming("(deleted)"), 0);
  EXPECT_EQ(t.counters().files_watched.load(), 1u);
}

}  // namespace
}  // namespace efawatch::logs

namespace efawatch::logs {
namespace {

// A tenant's `truncate -s 50G` named like a log: its holes are skipped by SEEK_DATA, not read
// as gigabytes of NUL bytes (which burned a core for minutes), and the lines around them count.
TEST_F(TailerHostileTest, SparseFileHolesAreSkippedAndTheLinesAroundThemRead) {
  const TailerOptions o = Options();
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  const fs::path log = ctr / "0.log";
  std::ofstream(log) << kCri << "marker head\n";
  fs::resize_file(log, 8ull << 30);  // 8 GiB, nearly all hole
  std::ofstream(log, std::ios::app) << "\n" << kCri << "marker tail\n";
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  while (t.PollOnce()) {
  }
  EXPECT_EQ(sink.markers.size(), 2u);
  EXPECT_GE(t.counters().skipped_hole.load(), 7ull << 30);
  EXPECT_LT(t.counters().bytes_read.load(), 64ull << 20) << "the hole was read, not skipped";
}

// Something that only has a log's name (a core dump, a checkpoint) is left after its first
// bytes; real NUL bytes in it are not a hole.
TEST_F(TailerHostileTest, AFileThatIsNotTextIsLeftAfterItsFirstRead) {
  const TailerOptions o = Options();
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  {
    std::ofstream out(ctr / "0.log", std::ios::binary);
    for (int i = 0; i < (4 << 20); ++i) out.put(static_cast<char>(i % 7 == 0 ? '\n' : i % 3));
  }
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  while (t.PollOnce()) {
  }
  EXPECT_EQ(sink.lines, 0);
  EXPECT_GE(t.counters().skipped_binary.load(), (4u << 20) - (256u << 10));
  std::ofstream(ctr / "0.log", std::ios::app) << kCri << "marker later\n";
  t.PollOnce();
  EXPECT_TRUE(sink.markers.empty()) << "a binary file is not read again";
}

// A file first seen huge gives its head (NCCL's init lines) and its tail, not every byte.
TEST_F(TailerHostileTest, AFileFirstSeenHugeIsReadAtItsHeadAndTail) {
  TailerOptions o = Options();
  o.first_read_max_bytes = 4 << 20;
  o.head_bytes = 1 << 20;
  o.tail_bytes = 1 << 20;
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  {
    std::ofstream out(ctr / "0.log");
    out << kCri << "marker first\n";
    const std::string filler = std::string(kCri) + std::string(200, 'x') + "\n";
    for (size_t n = 0; n < (16u << 20) / filler.size(); ++n) out << filler;
    out << kCri << "marker last\n";
  }
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  while (t.PollOnce()) {
  }
  ASSERT_EQ(sink.markers.size(), 2u);
  EXPECT_NE(sink.markers[0].find("first"), std::string::npos);
  EXPECT_NE(sink.markers[1].find("last"), std::string::npos);
  EXPECT_GE(t.counters().skipped_oversized.load(), 13u << 20);
  // What is written afterwards is read as usual.
  std::ofstream(ctr / "0.log", std::ios::app) << kCri << "marker after\n";
  t.PollOnce();
  EXPECT_EQ(sink.markers.size(), 3u);
}

// A writer faster than the budget: its backlog never grows past the bound, the rest skipped.
TEST_F(TailerHostileTest, ABacklogPastItsBoundSkipsForwardToTheTail) {
  TailerOptions o = Options();
  o.read_chunk_bytes = 1 << 20;
  o.max_backlog_bytes = 4 << 20;
  o.tail_bytes = 1 << 20;
  o.first_read_max_bytes = 0;
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  std::ofstream(ctr / "0.log") << kCri << "marker start\n";
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  t.PollOnce();
  {
    std::ofstream out(ctr / "0.log", std::ios::app);
    const std::string filler = std::string(kCri) + std::string(200, 'y') + "\n";
    for (size_t n = 0; n < (32u << 20) / filler.size(); ++n) out << filler;
    out << kCri << "marker end\n";
  }
  while (t.PollOnce()) {
  }
  ASSERT_EQ(sink.markers.size(), 2u);
  EXPECT_NE(sink.markers[1].find("end"), std::string::npos);
  EXPECT_GE(t.counters().skipped_budget.load(), 24u << 20);
  EXPECT_LE(t.counters().bytes_read.load(), 8u << 20);
}

// A FIFO with no writer and a character device named like logs: neither blocks the tailer nor
// feeds it, and the real log beside them is read.
TEST_F(TailerHostileTest, AFifoAndADeviceNamedLikeLogsNeitherBlockNorFeedTheTailer) {
  const TailerOptions o = Options();
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  const fs::path other = o.pod_log_root / "train_w-1_uid2" / "main";
  fs::create_directories(ctr);
  fs::create_directories(other);
  ASSERT_EQ(::mkfifo((ctr / "0.log").c_str(), 0600), 0);
  const bool device = ::mknod((ctr / "1.log").c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0;
  std::ofstream(other / "0.log") << kCri << "marker real\n";
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(t.PollOnce()) << "nothing left to read";
  EXPECT_EQ(sink.markers.size(), 1u);
  EXPECT_EQ(sink.lines, 1) << (device ? "the zero device fed lines" : "");
}

// Real NUL bytes (not a hole) in the middle of a text log: one cut line, the text around it
// read, whatever the run's length.
TEST_F(TailerHostileTest, ARunOfNulBytesInsideATextLogIsOneCutLine) {
  const TailerOptions o = Options();
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  {
    std::ofstream out(ctr / "0.log", std::ios::binary);
    for (int i = 0; i < 100; ++i) out << kCri << "step " << i << "\n";
    out << kCri << "marker before\n";
    out << std::string(8 << 20, '\0') << "\n";
    out << kCri << "marker after\n";
  }
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  while (t.PollOnce()) {
  }
  EXPECT_EQ(sink.markers.size(), 2u);
  EXPECT_EQ(sink.lines, 103);
  EXPECT_EQ(t.counters().lines_truncated.load(), 1u);
}

// A followed log replaced by a symlink to a file outside the pod log root (a tenant's swap):
// the new "file" is never read, the old one's lines stay counted once.
TEST_F(TailerHostileTest, ALogSwappedForASymlinkOutOfTheRootIsNotRead) {
  const TailerOptions o = Options();
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  const fs::path secret = fs::path(dir_.path()) / "outside.txt";
  std::ofstream(secret) << kCri << "marker secret\n";
  std::ofstream(ctr / "0.log") << kCri << "marker own\n";
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  t.PollOnce();
  fs::remove(ctr / "0.log");
  fs::create_symlink(secret, ctr / "0.log");
  for (int i = 0; i < 3; ++i) t.PollOnce();
  ASSERT_EQ(sink.markers.size(), 1u);
  EXPECT_NE(sink.markers[0].find("own"), std::string::npos);
}

// First sight of a container while kubelet compresses a rotated file: <f>, <f>.gz and the
// <f>.tmp being written are there at once. Each line of the run is read once.
TEST_F(TailerHostileTest, ARotatedFileCaughtMidCompressionIsReadOnce) {
  const TailerOptions o = Options();
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  const std::string rotated = std::string(kCri) + "marker rotated\n";
  std::ofstream(ctr / "0.log.20261204-100000") << rotated;
  {
    gzFile gz = gzopen((ctr / "0.log.20261204-100000.gz").c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    gzwrite(gz, rotated.data(), static_cast<unsigned>(rotated.size()));
    gzclose(gz);
  }
  std::ofstream(ctr / "0.log.20261204-100000.tmp") << kCri << "marker half";
  std::ofstream(ctr / "0.log") << kCri << "marker live\n";
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  while (t.PollOnce()) {
  }
  ASSERT_EQ(sink.markers.size(), 2u);
  EXPECT_NE(sink.markers[0].find("rotated"), std::string::npos);
  EXPECT_NE(sink.markers[1].find("live"), std::string::npos);
}

// Rotated twice while the agent was down: the checkpointed file (now rotated), the file
// created and rotated away during the outage, and the live one are each read to the line.
TEST_F(TailerHostileTest, FilesRotatedTwiceWhileDownAreAllRead) {
  const TailerOptions o = Options();
  const fs::path ctr = o.pod_log_root / "train_w-0_uid1" / "main";
  fs::create_directories(ctr);
  auto write = [&](const std::string& file, int from, int to) {
    std::ofstream out(ctr / file, std::ios::app);
    for (int i = from; i < to; ++i) out << kCri << "step " << i << "\n";
  };
  write("0.log", 0, 10);
  {
    CountingSink sink;
    Tailer t(o, &sink, clock_);
    t.LoadState();
    t.PollOnce();
    ASSERT_EQ(sink.lines, 10);
    clock_.Advance(std::chrono::seconds(10));
    t.PollOnce();  // the checkpoint is due: offsets at the end of 0.log
  }                // the destructor's last checkpoint; the agent is "down" from here
  write("0.log", 10, 15);
  fs::rename(ctr / "0.log", ctr / "0.log.20261204-100000");
  write("0.log", 15, 30);
  fs::rename(ctr / "0.log", ctr / "0.log.20261204-100006");
  write("0.log", 30, 32);
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.LoadState();
  while (t.PollOnce()) {
  }
  EXPECT_EQ(sink.lines, 22) << "lines 10..31, each once";
}

TEST_F(TailerHostileTest, ContainerDirectoryThatIsASymlinkIsNotFollowed) {
  const TailerOptions o = Options();
  // A tenant-controlled directory elsewhere, linked in as a container directory.
  const fs::path elsewhere = fs::path(dir_.path()) / "elsewhere";
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere / "0.log") << "2026-12-02T10:00:00Z stdout F secret\n";
  fs::create_directories(o.pod_log_root / "train_w-0_uid1");
  fs::create_directory_symlink(elsewhere, o.pod_log_root / "train_w-0_uid1" / "main");
  CountingSink sink;
  Tailer t(o, &sink, clock_);
  t.PollOnce();
  t.PollOnce();
  EXPECT_EQ(sink.lines, 0);
  EXPECT_EQ(t.counters().files_watched.load(), 0u);
  EXPECT_EQ(t.counters().files_refused.load(), 1u) << "counted once";
}

}  // namespace
}  // namespace efawatch::logs
