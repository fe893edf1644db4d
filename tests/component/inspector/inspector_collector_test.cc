// SPDX-License-Identifier: Apache-2.0
// The agent's Inspector collector over a fixture tree of pod volumes and an --inspector-dir,
// driven through its own real tailer (no thread, a fake clock): which files it follows, the
// series it exports, how they go, and what hostile files cost.
#include "daemon/inspector/inspector_collector.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
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
                  const std::string& coll, const std::string& size) {
  return RecordingSink::Key(metrics::M::kNcclBusbwBytesPerSecond, {{"namespace", ns},
                                                                   {"pod", pod},
                                                                   {"comm_id", comm},
                                                                   {"collective", coll},
                                                                   {"size_bucket", size}});
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
  const auto& ar = s.histograms.at(Busbw("train", "job-a-0", kCommA, "AllReduce", "256MiB"));
  EXPECT_EQ(ar.count, 3u);
  EXPECT_NEAR(ar.sum / ar.count / 1e9, 3.2, 1e-9) << "3.2 GB/s on average";
  EXPECT_EQ(ar.cumulative[2], 0u);  // <= 2 GB/s
  EXPECT_EQ(ar.cumulative[3], 3u);  // <= 4 GB/s
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-a-0", kCommA, "AllReduce", "<64KiB")).count, 1u);
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-a-0", kCommA, "Send", "1MiB")).count, 1u);
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-a-0", kCommA, "ReduceScatter", "16MiB")).count, 1u)
      << "a verbose record counts like the others";
  EXPECT_EQ(s.histograms.at(Busbw("train", "job-a-0", kCommA, "AllReduce", "1GiB")).count, 1u)
      << "a record of another format version: its known fields";
  const std::string exec =
      RecordingSink::Key(metrics::M::kNcclExecSecondsTotal, {{"namespace", "train"},
                                                             {"pod", "job-a-0"},
                                                             {"comm_id", kCommA},
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
      s.histograms.at(Busbw("train", "job-a-0", "0xc0ffee00c0ffee", "AllReduce", "256MiB")).count,
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
      s.histograms.at(Busbw("train", "job-b-0", "0xc0ffee00c0ffee", "AllReduce", "256MiB"));
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
      s.histograms.at(Busbw("train", "job-a-0", "0xc0ffee00c0ffee", "AllReduce", "256MiB"));
  EXPECT_EQ(h.count, 6u) << "the first and the last record of each file";
  EXPECT_GT(s.values.at(RecordingSink::Key(metrics::M::kNcclInspectorRecordsTotal,
                                           {{"result", "malformed"}})),
            0);
}

}  // namespace
}  // namespace efawatch::inspector
