// SPDX-License-Identifier: Apache-2.0
// The real tailer over a temporary pod log tree, driven pass by pass (PollOnce) with files
// written, rotated, truncated and deleted the way kubelet and the runtimes do it.
#include "daemon/logs/tailer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::logs {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

class RecordingSink final : public LineSink {
 public:
  void OnLine(const LogSource& s, uint64_t n, std::string_view line) override {
    lines.push_back(s.Key() + ":" + std::to_string(n) + ":" + std::string(line));
  }
  void OnSourceGone(const LogSource& s) override { gone.push_back(s.Key()); }
  std::string Checkpoint() const override { return std::to_string(lines.size()); }
  void Restore(std::string_view state) override { restored = std::string(state); }

  std::vector<std::string> lines;
  std::vector<std::string> gone;
  std::string restored;
};

class TailerTest : public ::testing::Test {
 protected:
  fs::path Container(const std::string& pod = "train_worker-0_uid1",
                     const std::string& ctr = "main") {
    fs::path d = fs::path(dir_.path()) / "pods" / pod / ctr;
    fs::create_directories(d);
    return d;
  }
  static void Append(const fs::path& f, const std::string& text) {
    std::ofstream out(f, std::ios::app);
    out << text;
  }
  TailerOptions Options() {
    TailerOptions o;
    o.pod_log_root = fs::path(dir_.path()) / "pods";
    o.state_file = fs::path(dir_.path()) / "state.json";
    return o;
  }

  testing::TempDir dir_;
  common::FakeClock clock_;
};

TEST_F(TailerTest, ReadsOnlyNewCompleteLinesAndJoinsALineWrittenInTwoParts) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  RecordingSink sink;
  Tailer t(Options(), &sink, clock_);
  const fs::path log = Container() / "0.log";
  Append(log, "a\nb");
  t.PollOnce();
  Append(log, "c\nd\n");
  t.PollOnce();
  t.PollOnce();
  EXPECT_THAT(sink.lines, ElementsAre("train/worker-0/main:1:a", "train/worker-0/main:2:bc",
                                      "train/worker-0/main:3:d"));
  EXPECT_EQ(t.counters().lines_read, 3u);
  EXPECT_EQ(t.counters().files_watched, 1u);
}

TEST_F(TailerTest, FollowsKubeletRotationWithoutLosingTheOldFilesTail) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  RecordingSink sink;
  Tailer t(Options(), &sink, clock_);
  const fs::path log = Container() / "0.log";
  Append(log, "1\n");
  t.PollOnce();
  Append(log, "2\n");                                  // written before the rename
  fs::rename(log, log.string() + ".20261202-101500");  // kubelet: N.log -> N.log.<time>
  Append(log, "3\n");                                  // the runtime reopens N.log
  t.PollOnce();
  EXPECT_THAT(sink.lines, ElementsAre("train/worker-0/main:1:1", "train/worker-0/main:2:2",
                                      "train/worker-0/main:3:3"));
  EXPECT_EQ(t.counters().rotations, 1u);
}

TEST_F(TailerTest, CopyTruncateStartsAgainFromTheTop) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  RecordingSink sink;
  Tailer t(Options(), &sink, clock_);
  const fs::path log = Container() / "0.log";
  Append(log, "first line\nsecond line\n");
  t.PollOnce();
  fs::resize_file(log, 0);
  Append(log, "x\n");
  t.PollOnce();
  EXPECT_EQ(sink.lines.back(), "train/worker-0/main:3:x");
  EXPECT_EQ(t.counters().truncations, 1u);
}

TEST_F(TailerTest, ReadsAtMostAChunkPerFilePerPassAndSaysWhenMoreIsLeft) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  RecordingSink sink;
  TailerOptions o = Options();
  o.read_chunk_bytes = 8;
  Tailer t(o, &sink, clock_);
  const fs::path log = Container() / "0.log";
  Append(log, "aaa\nbbb\nccc\nddd\n");  // 16 bytes: two passes' worth
  EXPECT_TRUE(t.PollOnce());
  EXPECT_THAT(sink.lines, ElementsAre("train/worker-0/main:1:aaa", "train/worker-0/main:2:bbb"));
  t.PollOnce();
  EXPECT_EQ(sink.lines.size(), 4u);
  EXPECT_FALSE(t.PollOnce()) << "all read";
  Append(log, "e\n");
  EXPECT_FALSE(t.PollOnce()) << "a short file is read whole";
  EXPECT_EQ(sink.lines.back(), "train/worker-0/main:5:e");
}

TEST_F(TailerTest, DeletedPodIsReportedGone) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  RecordingSink sink;
  Tailer t(Options(), &sink, clock_);
  Append(Container() / "0.log", "a\n");
  t.PollOnce();
  fs::remove_all(fs::path(dir_.path()) / "pods" / "train_worker-0_uid1");
  t.PollOnce();
  EXPECT_THAT(sink.gone, ElementsAre("train/worker-0/main"));
  EXPECT_EQ(t.counters().files_watched, 0u);
}

TEST_F(TailerTest, SymlinkOutOfTheRootIsNotFollowed) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  const fs::path secret = fs::path(dir_.path()) / "secret.log";
  Append(secret, "do not read\n");
  fs::create_symlink(secret, Container() / "0.log");
  RecordingSink sink;
  Tailer t(Options(), &sink, clock_);
  t.PollOnce();
  t.PollOnce();
  EXPECT_TRUE(sink.lines.empty());
  EXPECT_EQ(t.counters().files_refused, 1u);
}

TEST_F(TailerTest, RestartResumesFromTheCheckpointNeitherRereadingNorSkipping) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  const fs::path log = Container() / "0.log";
  {
    RecordingSink sink;
    Tailer t(Options(), &sink, clock_);
    Append(log, "1\n2\npart");
    t.PollOnce();  // writes the checkpoint (first pass is due)
    EXPECT_EQ(sink.lines.size(), 2u);
    Append(log, "ial\n3\n");
    // No further checkpoint: as if SIGKILLed here. The lines after the checkpoint are read
    // again by the next agent, which also restores the sink's state as of the checkpoint.
    t.PollOnce();
    EXPECT_EQ(sink.lines.size(), 4u);
  }
  RecordingSink sink;
  Tailer t(Options(), &sink, clock_);
  ASSERT_TRUE(t.Start().ok());
  t.Stop();
  EXPECT_EQ(sink.restored, "2");
  EXPECT_THAT(sink.lines, ElementsAre("train/worker-0/main:3:partial", "train/worker-0/main:4:3"));
}

// A state directory that cannot take the checkpoint (here: gone) is counted at every due
// checkpoint, and the writes count again once it is back.
TEST_F(TailerTest, CountsCheckpointsThatCannotBeWritten) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  RecordingSink sink;
  TailerOptions o = Options();
  o.state_file = fs::path(dir_.path()) / "state" / "state.json";
  Tailer t(o, &sink, clock_);
  Append(Container() / "0.log", "1\n");
  t.PollOnce();  // the first pass is due
  EXPECT_EQ(t.counters().checkpoint_write_failures, 1u);
  EXPECT_EQ(t.counters().checkpoint_writes, 0u);
  t.PollOnce();  // not due yet
  EXPECT_EQ(t.counters().checkpoint_write_failures, 1u);
  clock_.Advance(o.checkpoint_interval);
  t.PollOnce();
  EXPECT_EQ(t.counters().checkpoint_write_failures, 2u);
  fs::create_directories(o.state_file.parent_path());
  clock_.Advance(o.checkpoint_interval);
  t.PollOnce();
  EXPECT_EQ(t.counters().checkpoint_write_failures, 2u);
  EXPECT_EQ(t.counters().checkpoint_writes, 1u);
  EXPECT_TRUE(fs::exists(o.state_file));
}

// An idle tailer does not rewrite (and fsync) the same state at every checkpoint interval: a
// due checkpoint with nothing changed is counted as unchanged, and the next change is written.
TEST_F(TailerTest, WritesACheckpointOnlyWhenTheStateChanged) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  RecordingSink sink;
  TailerOptions o = Options();
  o.state_file = fs::path(dir_.path()) / "state.json";
  Tailer t(o, &sink, clock_);
  Append(Container() / "0.log", "1\n");
  t.PollOnce();
  EXPECT_EQ(t.counters().checkpoint_writes, 1u);
  const auto written = fs::last_write_time(o.state_file);
  clock_.Advance(o.checkpoint_interval);
  t.PollOnce();
  EXPECT_EQ(t.counters().checkpoint_writes, 1u);
  EXPECT_EQ(t.counters().checkpoints_unchanged, 1u);
  EXPECT_EQ(fs::last_write_time(o.state_file), written);
  Append(Container() / "0.log", "2\n");
  clock_.Advance(o.checkpoint_interval);
  t.PollOnce();
  EXPECT_EQ(t.counters().checkpoint_writes, 2u);
  EXPECT_EQ(t.counters().checkpoints_unchanged, 1u);
  EXPECT_THAT(testing::ReadFileOrEmpty(o.state_file.string()),
              ::testing::HasSubstr("\"line_no\":2"));
}

TEST_F(TailerTest, RestartAfterRotationWhileDownFinishesTheRotatedFile) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  const fs::path log = Container() / "0.log";
  {
    RecordingSink sink;
    Tailer t(Options(), &sink, clock_);
    Append(log, "1\n");
    t.PollOnce();
  }
  Append(log, "2\n");
  fs::rename(log, log.string() + ".20261202-101500");
  Append(log, "3\n");
  RecordingSink sink;
  Tailer t(Options(), &sink, clock_);
  ASSERT_TRUE(t.Start().ok());
  t.Stop();
  EXPECT_THAT(sink.lines, ElementsAre("train/worker-0/main:2:2", "train/worker-0/main:3:3"));
}

TEST_F(TailerTest, ClassifiesCriPaths) {
  auto s = ClassifyCriPath("/r", "/r/ns_pod-a_1234-5678/ctr/3.log");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->namespace_name, "ns");
  EXPECT_EQ(s->pod, "pod-a");
  EXPECT_EQ(s->uid, "1234-5678");
  EXPECT_EQ(s->container, "ctr");
  EXPECT_FALSE(ClassifyCriPath("/r", "/r/ns_pod_uid/ctr/3.log.20261202-101500"));
  EXPECT_FALSE(ClassifyCriPath("/r", "/r/nounderscore/ctr/0.log"));
  EXPECT_FALSE(ClassifyCriPath("/r", "/elsewhere/ns_pod_uid/ctr/0.log"));
}

}  // namespace
}  // namespace efawatch::logs

namespace efawatch::logs {
namespace {

TEST_F(TailerTest, FollowsPlainAndDockerJsonFilesByGlobAndRefusesSymlinks) {
  fs::create_directories(fs::path(dir_.path()) / "pods");
  const fs::path hostpath = fs::path(dir_.path()) / "nccl";
  fs::create_directories(hostpath / "abc123");
  Append(hostpath / "nccl.node-a.42", "plain line\n");
  Append(hostpath / "abc123" / "abc123-json.log", R"({"log":"x\n","stream":"stdout"})"
                                                  "\n");
  fs::create_symlink("/etc/hostname", hostpath / "nccl.evil.1");
  auto opts = Options();
  opts.globs = {(hostpath / "nccl.*").string(), (hostpath / "*" / "*-json.log").string()};
  RecordingSink sink;
  Tailer t(opts, &sink, clock_);
  t.PollOnce();
  std::sort(sink.lines.begin(), sink.lines.end());
  ASSERT_EQ(sink.lines.size(), 2u);
  EXPECT_THAT(sink.lines[0],
              ::testing::EndsWith("abc123-json.log:1:{\"log\":\"x\\n\",\"stream\":\"stdout\"}"));
  EXPECT_THAT(sink.lines[1], ::testing::EndsWith("nccl.node-a.42:1:plain line"));
  EXPECT_EQ(t.counters().files_refused, 1u);
  fs::remove(hostpath / "nccl.node-a.42");
  t.PollOnce();
  ASSERT_EQ(sink.gone.size(), 1u);
  EXPECT_THAT(sink.gone[0], ::testing::EndsWith("nccl.node-a.42"));
}

// A hostPath where every job's NCCL_DEBUG_FILE outputs pile up: the newest files are followed,
// the dead jobs' counted, and a pod that starts later still gets its container log followed.
TEST_F(TailerTest, AGlobFollowsItsNewestFilesAndLeavesRoomForPodLogs) {
  const fs::path hostpath = fs::path(dir_.path()) / "nccl";
  fs::create_directories(hostpath);
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 10; ++i) {
    const fs::path f = hostpath / ("nccl.node-a." + std::to_string(100 + i));
    Append(f, "job " + std::to_string(i) + "\n");
    fs::last_write_time(f, now - std::chrono::hours(20 - i));
  }
  auto opts = Options();
  fs::create_directories(opts.pod_log_root);
  opts.globs = {(hostpath / "nccl.*").string()};
  opts.max_glob_files = 3;
  opts.max_files = 4;
  RecordingSink sink;
  Tailer t(opts, &sink, clock_);
  t.PollOnce();
  std::sort(sink.lines.begin(), sink.lines.end());
  ASSERT_EQ(sink.lines.size(), 3u);
  EXPECT_THAT(sink.lines[0], ::testing::EndsWith("nccl.node-a.107:1:job 7"));
  EXPECT_THAT(sink.lines[2], ::testing::EndsWith("nccl.node-a.109:1:job 9"));
  EXPECT_EQ(t.counters().files_over_cap, 7u);
  Append(Container() / "0.log", "2026-12-02T10:00:00.000000001Z stdout F pod line\n");
  t.PollOnce();
  EXPECT_EQ(sink.lines.back(),
            "train/worker-0/main:1:2026-12-02T10:00:00.000000001Z stdout F pod line");
  EXPECT_EQ(t.counters().files_over_cap, 7u) << "each left file counted once";
}

}  // namespace
}  // namespace efawatch::logs
