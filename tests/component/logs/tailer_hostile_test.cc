// The real tailer against state a tenant or a crash can leave behind: a checkpoint of the wrong
// shape, and the deleted log of an older restart of a container whose directory lives on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/logs/tailer.h"
#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::logs {
namespace {

namespace fs = std::filesystem;

class CountingSink final : public LineSink {
 public:
  void OnLine(const LogSource& /*s*/, uint64_t /*n*/, std::string_view /*line*/) override {
    ++lines;
  }
  void OnSourceGone(const LogSource& /*s*/) override { ++gone; }
  std::string Checkpoint() const override { return "state"; }
  void Restore(std::string_view state) override { restored = std::string(state); }

  int lines = 0;
  int gone = 0;
  std::string restored;
};

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
