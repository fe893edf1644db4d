// SPDX-License-Identifier: Apache-2.0
// The agent's Inspector collector over a fixture tree of pod volumes and an --inspector-dir,
// driven through its own real tailer (no thread, a fake clock): which files it follows, the
// series it exports, how they go, and what hostile files cost.
#include "daemon/inspector/inspector_collector.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "daemon/logs/tailer.h"
#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::inspector {
namespace {

namespace fs = std::filesystem;

// What one collection wrote, by "metric{label=value,...}".
class RecordingSink final : public common::MetricSink {
 public:
  void Add(metrics::Metric metric, const common::Labels& labels, double value) override {
    values[Key(metric, labels)] = value;
  }
  void AddHistogram(metrics::Metric metric, const common::Labels& labels,
                    const common::HistogramSample& sample) override {
    histograms[Key(metric, labels)] = sample;
  }
  static std::string Key(metrics::Metric metric, const common::Labels& labels) {
    std::string k = std::string(metric.name()) + "{";
    for (const auto& [n, v] : labels) k += n + "=" + v + ",";
    return k + "}";
  }
  std::map<std::string, double> values;
  std::map<std::string, common::HistogramSample> histograms;
};

std::string Busbw(const std::string& ns, const std::string& pod, const std::string& comm,
                  const std::string& coll, const std::string& size,
                  const std::string& comm_name = "") {
  return RecordingSink::Key(metrics::M::kNcclBusbwBytesPerSecond, {{"namespace", ns},
                                                                   {"pod", pod},
                                                                   {"comm_id", comm},
                                                                   {"comm_name", comm_name},
                                                                   {"collective", coll},
                                                                   {"size_bucket", size}});
}

std::string CommSeries(metrics::Metric m, const std::string& pod, const std::string& comm_id,
                       const std::string& comm_name) {
  return RecordingSink::Key(
      m, {{"namespace", "train"}, {"pod", pod}, {"comm_id", comm_id}, {"comm_name", comm_name}});
}

double Records(const RecordingSink& s, const std::string& result) {
  return s.values.at(
      RecordingSink::Key(metrics::M::kNcclInspectorRecordsTotal, {{"result", result}}));
}

// Sets a file's modification time to `t` (wall time): how old the plugin's last dump is.
void SetMtime(const fs::path& path, std::chrono::system_clock::time_point t) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const struct timespec times[2] = {{ns / 1'000'000'000, ns % 1'000'000'000},
                                    {ns / 1'000'000'000, ns % 1'000'000'000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

constexpr char kCommA[] = "0x1f2e3d4c5b6a79";

class InspectorCollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path();
    o_.pod_log_root = root_ / "logs";
    o_.volume_root = root_ / "kubelet";
    o_.inspector_dir = root_ / "hostpath";
    o_.instance_type = "p4d.24xlarge";
    o_.expected_bytes_per_second = 50e9;
    fs::create_directories(o_.inspector_dir);
    AddPod("job-a-0", "uid-a");
  }
  void AddPod(const std::string& pod, const std::string& uid) {
    fs::create_directories(o_.pod_log_root / ("train_" + pod + "_" + uid) / "main");
    fs::create_directories(Volume(uid));
  }
  fs::path Volume(const std::string& uid) {
    return o_.volume_root / uid / "volumes/kubernetes.io~empty-dir/ray";
  }
  static fs::path FixtureFile(const std::string& name) {
    return fs::path(testing::SourceDir()) / "tests/fixtures/inspector" / name;
  }
  RecordingSink Scrape(InspectorCollector& c) {
    RecordingSink sink;
    EXPECT_TRUE(c.Collect(clock_.Now() + std::chrono::seconds(1), sink).ok());
    return sink;
  }
  static void Drain(logs::Tailer& t) {
    for (int i = 0; i < 1000 && t.PollOnce(); ++i) {
    }
  }

  testing::TempDir dir_;
  fs::path root_;
  InspectorCollectorOptions o_;
  common::FakeClock clock_;
};

TEST_F(InspectorCollectorTest, AJsonLinesFileInAPodVolumeGivesThePodsSeries) {
  fs::create_directories(Volume("uid-a") / "nccl-inspector");
  fs::copy_file(FixtureFile("job-a-0-pid4242.log"),
                Volume("uid-a") / "nccl-inspector" / "job-a-0-pid4242.log");
  // Files that are not the Inspector's, named alike, are not followed.
  std::ofstream(Volume("uid-a") / "app.log") << "epoch 1 loss 0.3\n";
  testing::WriteFile((Volume("uid-a") / "nccl-inspector" / "empty.log").string(), "");
  InspectorCollector c(o_, clock_);
  logs::Tailer t(InspectorTailerOptions(o_, &c), &c, clock_);
  t.LoadState();
  Drain(t);
  EXPECT_EQ(t.counters().files_watched.load(), 1u);

  RecordingSink s = Scrape(c);
  const auto& ar = s.histograms.at(Busbw("train", "job-a-0", kCommA, "AllReduce", "256MiB", "dp"));
  EXPECT_EQ(ar.count, 3u);
  EXPECT_NEAR(ar.sum / ar.count / 1e9, 3.2, 1e-9) << "3.2 GB/s on average";
  EXPECT_EQ(ar.cumulative[2], 0u);  // <= 2 GB/s
  EXPECT_EQ(ar.cumulative[3], 3u);  // <= 4 GB/s
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-a-0", kCommA, "AllReduce", "<64KiB", "dp")).count,
            1u);
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-a-0", kCommA, "Send", "1MiB", "dp")).count, 1u);
  EXPECT_EQ(
      s.histograms.at(Busbw("train", "job-a-0", kCommA, "ReduceScatter", "16MiB", "dp")).count, 1u)
      << "a verbose record counts like the others";
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-a-0", kCommA, "AllReduce", "1GiB", "dp")).count, 1u)
      << "a record of another format version: its known fields";
  const std::string exec =
      RecordingSink::Key(metrics::M::kNcclExecSecondsTotal, {{"namespace", "train"},
                                                             {"pod", "job-a-0"},
                                                             {"comm_id", kCommA},
                                                             {"comm_name", "dp"},
                                                             {"collective", "AllGather"},
                                                             {"size_bucket", "64MiB"}});
  EXPECT_NEAR(s.values.at(exec), 0.0251658, 1e-9);
  auto records = [&](const std::string& result) {
    return s.values.at(
        RecordingSink::Key(metrics::M::kNcclInspectorRecordsTotal, {{"result", result}}));
  };
  EXPECT_EQ(records("op"), 8);
  EXPECT_EQ(records("other_version"), 1);
  EXPECT_EQ(records("malformed"), 2) << "the partial last line is not read until it ends";
  EXPECT_EQ(s.values.at(RecordingSink::Key(metrics::M::kNcclInspectorFiles, {{"format", "jsonl"}})),
            1);
  EXPECT_EQ(s.values.at(RecordingSink::Key(metrics::M::kFabricExpectedBandwidthBytesPerSecond,
                                           {{"instance_type", "p4d.24xlarge"}})),
            50e9);

  // New records are read as they come; the pod's deletion takes its series.
  std::ifstream fast(FixtureFile("job-b-0-pid77.log"));
  std::string line;
  std::getline(fast, line);
  std::ofstream(Volume("uid-a") / "nccl-inspector" / "job-a-0-pid4242.log", std::ios::app)
      << "\n"
      << line << "\n";
  Drain(t);
  s = Scrape(c);
  EXPECT_EQ(
      s.histograms.at(Busbw("train", "job-a-0", "0xc0ffee00c0ffee", "AllReduce", "256MiB", "dp"))
          .count,
      1u);
  fs::remove_all(o_.volume_root / "uid-a");
  fs::remove_all(o_.pod_log_root / "train_job-a-0_uid-a");
  Drain(t);
  s = Scrape(c);
  EXPECT_TRUE(s.histograms.empty()) << "the pod is gone, and its series with it";
}

TEST_F(InspectorCollectorTest, ASilentCommunicatorLosesItsSeries) {
  fs::copy_file(FixtureFile("job-b-0-pid77.log"), Volume("uid-a") / "b.jsonl");
  InspectorCollector c(o_, clock_);
  logs::Tailer t(InspectorTailerOptions(o_, &c), &c, clock_);
  t.LoadState();
  Drain(t);
  EXPECT_EQ(Scrape(c).histograms.size(), 1u);
  clock_.Advance(std::chrono::minutes(14));
  t.PollOnce();
  EXPECT_EQ(Scrape(c).histograms.size(), 1u);
  clock_.Advance(std::chrono::minutes(2));
  t.PollOnce();
  EXPECT_TRUE(Scrape(c).histograms.empty()) << "15 minutes without an operation";
}

TEST_F(InspectorCollectorTest, HostPathFilesGoToThePodTheirHostNameNames) {
  AddPod("job-b-0", "uid-b");
  fs::copy_file(FixtureFile("job-b-0-pid77.log"), o_.inspector_dir / "job-b-0-pid77.log");
  std::ofstream(o_.inspector_dir / "other.log") << "not the Inspector's\nat all\n";
  InspectorCollector c(o_, clock_);
  logs::Tailer t(InspectorTailerOptions(o_, &c), &c, clock_);
  t.LoadState();
  Drain(t);
  RecordingSink s = Scrape(c);
  const auto& h =
      s.histograms.at(Busbw("train", "job-b-0", "0xc0ffee00c0ffee", "AllReduce", "256MiB", "dp"));
  EXPECT_EQ(h.count, 3u);
  EXPECT_NEAR(h.sum / h.count / 1e9, 45, 1e-9);
  EXPECT_EQ(s.values.at(RecordingSink::Key(metrics::M::kNcclInspectorRecordsTotal,
                                           {{"result", "malformed"}})),
            0)
      << "a file whose first line is not a record is left alone";
}

TEST_F(InspectorCollectorTest, PromModeFilesAreReadWholeWhenRewritten) {
  AddPod("job-c-0", "uid-c");
  const fs::path prom = Volume("uid-c") / "nccl_inspector_metrics_GPU-0.prom";
  fs::copy_file(FixtureFile("nccl_inspector_metrics_GPU-0a1b2c3d-0000-1111-2222-333344445555.prom"),
                prom);
  InspectorCollector c(o_, clock_);
  c.ReadPromFiles();
  const std::string ar = Busbw("train", "job-c-0", "0xabcdef01234567", "AllReduce", "256MiB");
  RecordingSink s = Scrape(c);
  ASSERT_TRUE(s.histograms.contains(ar));
  EXPECT_EQ(s.histograms.at(ar).count, 1u);
  EXPECT_EQ(s.values.at(RecordingSink::Key(metrics::M::kNcclInspectorFiles, {{"format", "prom"}})),
            1);
  // Rewritten with the same ops (same coll_sn): nothing new. With a newer op: counted once.
  std::string text = testing::ReadFileOrEmpty(prom.string());
  std::ofstream(prom) << text << "\n";
  c.ReadPromFiles();
  EXPECT_EQ(Scrape(c).histograms.at(ar).count, 1u);
  const std::string next = "coll_sn=\"102\"";
  const size_t at = text.find("coll_sn=\"100\"");
  text.replace(at, next.size(), next);
  std::ofstream(prom) << text;
  c.ReadPromFiles();
  EXPECT_EQ(Scrape(c).histograms.at(ar).count, 2u);
  fs::remove(prom);
  c.ReadPromFiles();
  EXPECT_FALSE(Scrape(c).histograms.contains(ar));
}

constexpr char kV51[] = "nccl_inspector_metrics_5e6f7a8b-1111-2222-3333-444455556666.prom";

// NCCL >= 2.30's Prometheus mode: every (collective, size class) of the file becomes the pod's
// series, with comm_name and no comm_id, none malformed; each rewrite is one more interval.
TEST_F(InspectorCollectorTest, V51FilesInAPodVolumeGiveThePodsSeries) {
  AddPod("job-c-0", "uid-c");
  const fs::path prom = Volume("uid-c") / kV51;
  fs::copy_file(FixtureFile(kV51), prom);
  InspectorCollector c(o_, clock_);
  c.ReadPromFiles();
  RecordingSink s = Scrape(c);
  const std::string ar = Busbw("train", "job-c-0", "", "AllReduce", "256MiB", "unknown");
  ASSERT_TRUE(s.histograms.contains(ar));
  EXPECT_EQ(s.histograms.at(ar).count, 2u) << "RING_SIMPLE and TREE_SIMPLE: two samples";
  EXPECT_NEAR(s.histograms.at(ar).sum / 1e9, 42.1875 + 38.5, 1e-6);
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-c-0", "", "AllGather", "64MiB", "unknown")).count,
            1u);
  EXPECT_EQ(
      s.histograms.at(Busbw("train", "job-c-0", "", "ReduceScatter", "1GiB", "unknown")).count, 1u);
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-c-0", "", "AllReduce", "1MiB", "tp")).count, 1u);
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-c-0", "", "Send", "4MiB", "unknown")).count, 1u);
  EXPECT_EQ(Records(s, "prom_malformed"), 0);
  EXPECT_EQ(Records(s, "prom_op"), 6);
  EXPECT_EQ(Records(s, "prom_empty"), 1);
  const auto progress = s.values.at(
      CommSeries(metrics::M::kNcclInspectorProgressTimestampSeconds, "job-c-0", "", "unknown"));
  EXPECT_NEAR(progress,
              std::chrono::duration<double>(fs::last_write_time(prom).time_since_epoch() -
                                            (fs::file_time_type::clock::now().time_since_epoch() -
                                             std::chrono::system_clock::now().time_since_epoch()))
                  .count(),
              2.0)
      << "the file's modification time";
  // The next interval: rewritten in place with new values.
  std::string text = testing::ReadFileOrEmpty(prom.string());
  text.replace(text.find("42.1875"), 7, "40.0000");
  std::ofstream(prom, std::ios::trunc) << text;
  SetMtime(prom, std::chrono::system_clock::now() + std::chrono::seconds(30));
  c.ReadPromFiles();
  s = Scrape(c);
  EXPECT_EQ(s.histograms.at(ar).count, 4u);
  EXPECT_EQ(Records(s, "prom_malformed"), 0);
}

// A file the writer was caught in the middle of: what was read is counted once, the rest when
// the writer is done, and nothing is ever malformed.
TEST_F(InspectorCollectorTest, AV51RewriteCaughtHalfWayIsCountedOnce) {
  AddPod("job-c-0", "uid-c");
  const fs::path prom = Volume("uid-c") / kV51;
  const std::string text = testing::ReadFileOrEmpty(FixtureFile(kV51).string());
  size_t half = 0;
  for (int lines = 0; lines < 4; ++lines) half = text.find('\n', half) + 1;
  InspectorCollector c(o_, clock_);
  std::ofstream(prom) << text.substr(0, half) << text.substr(half, 40);  // cut mid-line
  c.ReadPromFiles();
  RecordingSink s = Scrape(c);
  EXPECT_EQ(Records(s, "prom_malformed"), 0);
  EXPECT_EQ(Records(s, "prom_torn"), 1) << "a cut last line on every try";
  EXPECT_EQ(Records(s, "prom_op"), 0);
  std::ofstream(prom, std::ios::trunc) << text.substr(0, half);  // whole lines so far
  c.ReadPromFiles();
  EXPECT_EQ(Records(Scrape(c), "prom_op"), 2);
  std::ofstream(prom, std::ios::trunc) << text;  // the writer finished
  c.ReadPromFiles();
  s = Scrape(c);
  EXPECT_EQ(Records(s, "prom_op"), 6) << "the two read before are not counted again";
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-c-0", "", "AllReduce", "256MiB", "unknown")).count,
            2u);
  EXPECT_EQ(Records(s, "prom_malformed"), 0);
}

// A writer that truncates and rewrites the file as fast as it can while the agent reads it:
// never a malformed line, and the rewrites that were whole are read.
TEST_F(InspectorCollectorTest, ATruncatingWriterNeverGivesMalformedLines) {
  AddPod("job-c-0", "uid-c");
  const fs::path prom = Volume("uid-c") / kV51;
  const std::string text = testing::ReadFileOrEmpty(FixtureFile(kV51).string());
  std::atomic<bool> stop{false};
  std::atomic<int> rewrites{0};
  std::thread writer([&] {
    // As the plugin writes: fopen("w") truncates, then one write and a flush per sample pair.
    while (!stop) {
      FILE* f = std::fopen(prom.c_str(), "w");
      if (f == nullptr) continue;
      for (size_t at = 0; at < text.size();) {
        size_t next = text.find('\n', text.find('\n', at) + 1);
        next = next == std::string::npos ? text.size() : next + 1;
        std::fwrite(text.data() + at, 1, next - at, f);
        std::fflush(f);
        at = next;
      }
      std::fclose(f);
      ++rewrites;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  InspectorCollector c(o_, clock_);
  for (int i = 0; i < 300; ++i) {
    c.ReadPromFiles();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop = true;
  writer.join();
  c.ReadPromFiles();
  RecordingSink s = Scrape(c);
  EXPECT_GT(rewrites.load(), 100);
  EXPECT_EQ(Records(s, "prom_malformed"), 0);
  EXPECT_GT(Records(s, "prom_op"), 0);
}

// A job that stopped completing ops: its file keeps its last values and its old modification
// time. Seen first by an agent that started after the job hung, it is stale at once, and its
// values are not bandwidth of now.
TEST_F(InspectorCollectorTest, AV51FileUnchangedForTenMinutesIsStaleAtOnce) {
  AddPod("job-c-0", "uid-c");
  const fs::path prom = Volume("uid-c") / kV51;
  fs::copy_file(FixtureFile(kV51), prom);
  const auto wall = clock_.WallNow();
  SetMtime(prom, wall - std::chrono::minutes(11));
  InspectorCollector c(o_, clock_);
  c.ReadPromFiles();
  RecordingSink s = Scrape(c);
  const std::string stale = CommSeries(metrics::M::kNcclInspectorStale, "job-c-0", "", "unknown");
  ASSERT_TRUE(s.values.contains(stale));
  EXPECT_EQ(s.values.at(stale), 1);
  EXPECT_NEAR(s.values.at(CommSeries(metrics::M::kNcclInspectorProgressTimestampSeconds, "job-c-0",
                                     "", "unknown")),
              std::chrono::duration<double>(wall.time_since_epoch()).count() - 660, 1e-3);
  EXPECT_TRUE(s.histograms.empty()) << "a stale file's values are no current bandwidth";
  EXPECT_EQ(Records(s, "prom_stale"), 6);
  // The job moves again: fresh, counted.
  SetMtime(prom, wall);
  c.ReadPromFiles();
  s = Scrape(c);
  EXPECT_EQ(s.values.at(stale), 0);
  EXPECT_EQ(s.histograms.size(), 5u);
  // Then nothing for 10 minutes and more, while the file is there (the pod runs).
  clock_.Advance(std::chrono::minutes(10) + std::chrono::seconds(1));
  c.ReadPromFiles();
  EXPECT_EQ(Scrape(c).values.at(stale), 1);
}

// JSON Lines: the newest record's dump_timestamp_us is the communicator's progress.
TEST_F(InspectorCollectorTest, JsonProgressIsTheNewestRecordsDumpTime) {
  fs::copy_file(FixtureFile("job-b-0-pid77.log"), Volume("uid-a") / "b.jsonl");
  InspectorCollector c(o_, clock_);
  logs::Tailer t(InspectorTailerOptions(o_, &c), &c, clock_);
  t.LoadState();
  Drain(t);
  RecordingSink s = Scrape(c);
  const std::string progress = CommSeries(metrics::M::kNcclInspectorProgressTimestampSeconds,
                                          "job-a-0", "0xc0ffee00c0ffee", "dp");
  ASSERT_TRUE(s.values.contains(progress));
  EXPECT_NEAR(s.values.at(progress), 1764900000.000003, 1e-3) << "the fixture's newest record";
  // The fixture's records are from December 2025, the fake clock's now is January 2026.
  EXPECT_EQ(
      s.values.at(CommSeries(metrics::M::kNcclInspectorStale, "job-a-0", "0xc0ffee00c0ffee", "dp")),
      1);
}

// Summaries() (efawatch status) says what Collect() exports: the same communicator, its
// progress time and staleness, and each (collective, size class) with its count and time.
TEST_F(InspectorCollectorTest, SummariesMatchTheExportedSeries) {
  fs::copy_file(FixtureFile("job-b-0-pid77.log"), Volume("uid-a") / "b.jsonl");
  InspectorCollector c(o_, clock_);
  logs::Tailer t(InspectorTailerOptions(o_, &c), &c, clock_);
  t.LoadState();
  Drain(t);
  const RecordingSink s = Scrape(c);
  const std::vector<CommSummary> sums = c.Summaries();
  ASSERT_EQ(sums.size(), 1u);
  const CommSummary& sum = sums[0];
  EXPECT_EQ(sum.namespace_name, "train");
  EXPECT_EQ(sum.pod, "job-a-0");
  EXPECT_EQ(sum.comm_id, "0xc0ffee00c0ffee");
  EXPECT_EQ(sum.comm_name, "dp");
  EXPECT_NEAR(static_cast<double>(sum.last_progress_unix_us) * 1e-6,
              s.values.at(CommSeries(metrics::M::kNcclInspectorProgressTimestampSeconds, "job-a-0",
                                     "0xc0ffee00c0ffee", "dp")),
              1e-3);
  EXPECT_TRUE(sum.stale);
  ASSERT_FALSE(sum.ops.empty());
  for (const OpSummary& op : sum.ops) {
    const common::Labels labels = {
        {"namespace", "train"},          {"pod", "job-a-0"},
        {"comm_id", "0xc0ffee00c0ffee"}, {"comm_name", "dp"},
        {"collective", op.collective},   {"size_bucket", op.size_bucket}};
    EXPECT_EQ(
        static_cast<double>(op.count),
        s.histograms.at(RecordingSink::Key(metrics::M::kNcclBusbwBytesPerSecond, labels)).count);
    EXPECT_DOUBLE_EQ(op.exec_seconds,
                     s.values.at(RecordingSink::Key(metrics::M::kNcclExecSecondsTotal, labels)));
  }
}

// What a tenant can write into its volume: a record per byte, a huge sparse file, a flood. Each
// is read within the tailer's bounds, and a record written after it is still counted.
TEST_F(InspectorCollectorTest, HostileFilesStayWithinTheReadingBudget) {
  std::ifstream fixture(FixtureFile("job-b-0-pid77.log"));
  std::string record;
  std::getline(fixture, record);
  {
    std::ofstream out(Volume("uid-a") / "per-byte.log");
    out << record << "\n";
    const std::string junk(1 << 20, '\n');
    for (int i = 0; i < 32; ++i) out << junk;  // 32 Mi one-byte lines
    out << record << "\n";
  }
  {
    std::ofstream(Volume("uid-a") / "sparse.log") << record << "\n";
    fs::resize_file(Volume("uid-a") / "sparse.log", 8ull << 30);
    std::ofstream(Volume("uid-a") / "sparse.log", std::ios::app) << "\n" << record << "\n";
  }
  {
    std::ofstream out(Volume("uid-a") / "garbage.log");
    out << record << "\n";
    for (int i = 0; i < 200000; ++i)
      out << "{\"header\":{\"id\":\"0x1\"},\"metadata\":[" << i << "\n";
    out << record << "\n";
  }
  InspectorCollector c(o_, clock_);
  logs::Tailer t(InspectorTailerOptions(o_, &c), &c, clock_);
  t.LoadState();
  Drain(t);
  EXPECT_EQ(t.counters().files_watched.load(), 3u);
  const logs::TailerOptions to = InspectorTailerOptions(o_, &c);
  // Each file first seen larger than first_read_max_bytes: its head and its tail only.
  EXPECT_LE(t.counters().bytes_read.load(), 3 * (to.head_bytes + to.tail_bytes) + (1 << 20));
  RecordingSink s = Scrape(c);
  const auto& h =
      s.histograms.at(Busbw("train", "job-a-0", "0xc0ffee00c0ffee", "AllReduce", "256MiB", "dp"));
  EXPECT_EQ(h.count, 6u) << "the first and the last record of each file";
  EXPECT_GT(s.values.at(RecordingSink::Key(metrics::M::kNcclInspectorRecordsTotal,
                                           {{"result", "malformed"}})),
            0);
}

}  // namespace
}  // namespace efawatch::inspector
