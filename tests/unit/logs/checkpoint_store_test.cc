// SPDX-License-Identifier: Apache-2.0
// The tailer's checkpoint store alone: a state written is read back whole, an unchanged one is
// not written again, a damaged file is set aside and none of it taken, and the file format is
// the one earlier agents wrote (an upgraded agent must still restore its offsets).
#include "daemon/logs/checkpoint_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/subprocess.h"

namespace efawatch::logs {
namespace {

namespace fs = std::filesystem;
using testing::ReadFileOrEmpty;
using testing::WriteFile;

class Sink final : public LineSink {
 public:
  void OnLine(const LogSource& /*source*/, uint64_t /*n*/, std::string_view /*line*/) override {}
  void OnSourceGone(const LogSource& /*source*/) override {}
  bool CheckpointValid(std::string_view state) const override { return state != "damaged"; }
};

// Written by the tailer before it was split into modules (same fields, same order: nlohmann
// sorts object keys): the store must read it and write the same state back byte for byte.
constexpr char kEarlierFormat[] =
    R"({"counters":{"bytes_read":120,"lines_read":7,"lines_truncated":1,"rotations":2,)"
    R"("truncations":3},"files":[{"dev":2049,"ino":131,"line_no":5,"offset":100,)"
    R"("path":"/var/log/pods/ns_p_u/c/0.log","tail":"6f6b0a"},{"dev":2049,"ino":132,)"
    R"("line_no":2,"offset":20,"path":"/var/log/pods/ns_p_u/c/1.log","tail":""}],)"
    R"("sink":"{\"containers\":{}}","version":1})";

TailerCheckpoint Sample() {
  TailerCheckpoint s;
  s.files.emplace_back("/var/log/pods/ns_p_u/c/0.log", ResumePoint{2049, 131, 100, 5, "6f6b0a"});
  s.files.emplace_back("/var/log/pods/ns_p_u/c/1.log", ResumePoint{2049, 132, 20, 2, ""});
  s.counters = {120, 7, 2, 3, 1};
  s.sink = R"({"containers":{}})";
  return s;
}

void ExpectSame(const TailerCheckpoint& a, const TailerCheckpoint& b) {
  ASSERT_EQ(a.files.size(), b.files.size());
  for (size_t i = 0; i < a.files.size(); ++i) {
    SCOPED_TRACE(a.files[i].first);
    EXPECT_EQ(a.files[i].first, b.files[i].first);
    const ResumePoint& x = a.files[i].second;
    const ResumePoint& y = b.files[i].second;
    EXPECT_EQ(x.dev, y.dev);
    EXPECT_EQ(x.ino, y.ino);
    EXPECT_EQ(x.offset, y.offset);
    EXPECT_EQ(x.line_no, y.line_no);
    EXPECT_EQ(x.tail, y.tail);
  }
  EXPECT_EQ(a.counters.bytes_read, b.counters.bytes_read);
  EXPECT_EQ(a.counters.lines_read, b.counters.lines_read);
  EXPECT_EQ(a.counters.rotations, b.counters.rotations);
  EXPECT_EQ(a.counters.truncations, b.counters.truncations);
  EXPECT_EQ(a.counters.lines_truncated, b.counters.lines_truncated);
  EXPECT_EQ(a.sink, b.sink);
}

class CheckpointStoreTest : public ::testing::Test {
 protected:
  fs::path StateFile() const { return fs::path(dir_.path()) / "state.json"; }

  testing::TempDir dir_;
  TailerCounters counters_;
  Sink sink_;
};

TEST_F(CheckpointStoreTest, AStateWrittenThenLoadedRestoresOffsetsCountersAndSinkState) {
  CheckpointStore store(StateFile(), counters_);
  ASSERT_TRUE(store.Write(Sample()).ok());
  EXPECT_EQ(counters_.checkpoint_writes, 1u);
  EXPECT_FALSE(fs::exists(StateFile().string() + ".tmp"));

  TailerCounters restarted;
  CheckpointStore again(StateFile(), restarted);
  const absl::StatusOr<TailerCheckpoint> loaded = again.Load(sink_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectSame(*loaded, Sample());
  EXPECT_EQ(restarted.checkpoints_set_aside, 0u);
}

TEST_F(CheckpointStoreTest, ACheckpointInTheEarlierFormatIsRestoredAndWrittenBackTheSame) {
  WriteFile(StateFile().string(), kEarlierFormat);
  CheckpointStore store(StateFile(), counters_);
  const absl::StatusOr<TailerCheckpoint> loaded = store.Load(sink_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ExpectSame(*loaded, Sample());
  fs::remove(StateFile());
  ASSERT_TRUE(store.Write(*loaded).ok());
  EXPECT_EQ(ReadFileOrEmpty(StateFile().string()), kEarlierFormat);
}

TEST_F(CheckpointStoreTest, NoFilesFollowedWritesNoFilesKey) {
  CheckpointStore store(StateFile(), counters_);
  TailerCheckpoint empty;
  empty.sink = "s";
  ASSERT_TRUE(store.Write(empty).ok());
  EXPECT_EQ(ReadFileOrEmpty(StateFile().string()),
            R"({"counters":{"bytes_read":0,"lines_read":0,"lines_truncated":0,"rotations":0,)"
            R"("truncations":0},"sink":"s","version":1})");
  const absl::StatusOr<TailerCheckpoint> loaded = store.Load(sink_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->files.empty());
}

TEST_F(CheckpointStoreTest, AnUnchangedStateIsNotWrittenAgain) {
  CheckpointStore store(StateFile(), counters_);
  ASSERT_TRUE(store.Write(Sample()).ok());
  ASSERT_TRUE(store.Write(Sample()).ok());
  EXPECT_EQ(counters_.checkpoint_writes, 1u);
  EXPECT_EQ(counters_.checkpoints_unchanged, 1u);
  TailerCheckpoint changed = Sample();
  changed.files[0].second.offset = 110;
  ASSERT_TRUE(store.Write(changed).ok());
  EXPECT_EQ(counters_.checkpoint_writes, 2u);
}

TEST_F(CheckpointStoreTest, NoStateFileIsAFreshStartAndNothingIsSetAside) {
  CheckpointStore store(StateFile(), counters_);
  EXPECT_TRUE(absl::IsNotFound(store.Load(sink_).status()));
  EXPECT_EQ(counters_.checkpoints_set_aside, 0u);
}

TEST_F(CheckpointStoreTest, WithoutAStateFileNothingIsWrittenOrLoaded) {
  CheckpointStore store("", counters_);
  EXPECT_FALSE(store.enabled());
  EXPECT_TRUE(store.Write(Sample()).ok());
  EXPECT_EQ(counters_.checkpoint_writes, 0u);
  EXPECT_TRUE(absl::IsNotFound(store.Load(sink_).status()));
}

TEST_F(CheckpointStoreTest, ACorruptCheckpointIsSetAsideAndNoneOfItTaken) {
  const std::string cut = std::string(kEarlierFormat).substr(0, 90);  // cut short by a crash
  WriteFile(StateFile().string(), cut);
  CheckpointStore store(StateFile(), counters_);
  const absl::StatusOr<TailerCheckpoint> loaded = store.Load(sink_);
  EXPECT_TRUE(absl::IsDataLoss(loaded.status())) << loaded.status();
  EXPECT_EQ(counters_.checkpoints_set_aside, 1u);
  EXPECT_FALSE(fs::exists(StateFile()));
  EXPECT_EQ(ReadFileOrEmpty(StateFile().string() + ".bad"), cut);
}

TEST_F(CheckpointStoreTest, FieldsOfTheWrongTypeAreSetAside) {
  for (const char* text : {
           R"({"files":[{"path":"/x","dev":"2049","ino":1,"offset":0,"line_no":0,"tail":""}]})",
           R"({"files":{"path":"/x"}})",
           R"({"counters":{"bytes_read":-1}})",
           R"({"sink":7})",
           R"([1,2,3])",
       }) {
    SCOPED_TRACE(text);
    TailerCounters counters;
    WriteFile(StateFile().string(), text);
    CheckpointStore store(StateFile(), counters);
    EXPECT_TRUE(absl::IsDataLoss(store.Load(sink_).status()));
    EXPECT_EQ(counters.checkpoints_set_aside, 1u);
    EXPECT_TRUE(fs::exists(StateFile().string() + ".bad"));
  }
}

TEST_F(CheckpointStoreTest, ASinkStateTheSinkCallsDamagedSetsTheWholeCheckpointAside) {
  TailerCheckpoint s = Sample();
  s.sink = "damaged";
  CheckpointStore store(StateFile(), counters_);
  ASSERT_TRUE(store.Write(s).ok());
  EXPECT_TRUE(absl::IsDataLoss(store.Load(sink_).status()));
  EXPECT_EQ(counters_.checkpoints_set_aside, 1u);
}

TEST_F(CheckpointStoreTest, AWriteThatFailsIsCountedAndReturned) {
  CheckpointStore store(fs::path(dir_.path()) / "gone" / "state.json", counters_);
  EXPECT_FALSE(store.Write(Sample()).ok());
  EXPECT_EQ(counters_.checkpoint_write_failures, 1u);
  EXPECT_EQ(counters_.checkpoint_writes, 0u);
}

TEST(TailAtTest, IsTheHexOfUpTo64BytesBeforeTheOffset) {
  testing::TempDir dir;
  const std::string path = dir.File("0.log");
  WriteFile(path, "ok\n" + std::string(100, 'x'));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(TailAt(fd, 3), "6f6b0a");
  EXPECT_EQ(TailAt(fd, 0), "");
  std::string x64;
  for (int i = 0; i < 64; ++i) x64 += "78";  // 'x'
  EXPECT_EQ(TailAt(fd, 103), x64);
  ::close(fd);
}

}  // namespace
}  // namespace efawatch::logs
