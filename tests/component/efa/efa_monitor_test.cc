// SPDX-License-Identifier: Apache-2.0
// The real EFA monitor over fixture sysfs/procfs trees: golden scrapes, and findings raised and
// cleared as counter files change between evaluations.
#include "daemon/efa/efa_monitor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "daemon/export/family_sink.h"
#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::efa {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

std::string FixtureDir() { return testing::SourceDir() + "/tests/fixtures/sysfs/"; }

// A private, writable copy of a fixture tree.
class Tree {
 public:
  explicit Tree(const std::string& name) {
    fs::copy(FixtureDir() + name, dir_.path(), fs::copy_options::recursive);
  }
  fs::path sys() const { return fs::path(dir_.path()) / "sys"; }
  fs::path proc() const { return fs::path(dir_.path()) / "proc"; }
  void Set(const std::string& rel, const std::string& value) const {
    testing::WriteFile((sys() / rel).string(), value + "\n");
  }

 private:
  testing::TempDir dir_;
};

EfaMonitorOptions Options(const fs::path& sys, const fs::path& proc) {
  EfaMonitorOptions o;
  o.sysfs_root = sys;
  o.procfs_root = proc;
  o.health.clear_after = 60s;
  return o;
}

std::vector<std::string> Kinds(const common::FindingsBoard& board) {
  std::vector<std::string> out;
  for (const auto& f : *board.Snapshot()) out.push_back(f.kind + " " + f.subject);
  return out;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, ScrapeMatchesGoldenFileThatPromtoolAccepts) {
  const std::string tree = FixtureDir() + GetParam();
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(Options(tree + "/sys", tree + "/proc"), clock, &board, nullptr, nullptr);
  const std::string text =
      exporter::RenderCollectors({&monitor}, std::chrono::steady_clock::time_point::max());
  const std::string golden_path = FixtureDir() + GetParam() + ".prom";
  if (std::getenv("EFAWATCH_UPDATE_GOLDEN") != nullptr) testing::WriteFile(golden_path, text);
  EXPECT_EQ(text, testing::ReadFileOrEmpty(golden_path))
      << "rerun with EFAWATCH_UPDATE_GOLDEN=1 to accept an intended change";
  if (!testing::OnPath("promtool")) GTEST_SKIP() << "promtool not installed (apt: prometheus)";
  auto [rc, out] = testing::RunCommand(
      {"/bin/sh", "-c", "promtool check metrics < " + golden_path + " 2>&1"}, 30s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "");
}

INSTANTIATE_TEST_SUITE_P(Trees, GoldenTest,
                         ::testing::Values("p5.48xlarge", "g6.12xlarge", "legacy-flat"));

TEST(EfaMonitorTest, P5ExportsAll32DevicesAndEveryCounter) {
  const std::string tree = FixtureDir() + "p5.48xlarge";
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(Options(tree + "/sys", tree + "/proc"), clock, &board, nullptr, nullptr);
  const std::string text =
      exporter::RenderCollectors({&monitor}, std::chrono::steady_clock::time_point::max());
  EXPECT_THAT(text, HasSubstr("efawatch_efa_devices 32\n"));
  size_t port_lines = 0, device_lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("efawatch_efa_") && line.find("port=\"1\"") != std::string::npos) {
      ++port_lines;
    } else if (line.starts_with("efawatch_efa_") && line.find("device=") != std::string::npos) {
      ++device_lines;
    }
  }
  EXPECT_EQ(port_lines, 32u * 22u);
  EXPECT_EQ(device_lines, 32u * 12u);
}

TEST(EfaMonitorTest, RisingErrorCounterRaisesAFindingThatClearsItself) {
  Tree tree("g6.12xlarge");
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(Options(tree.sys(), tree.proc()), clock, &board, nullptr, nullptr);
  monitor.EvaluateOnce();
  EXPECT_TRUE(board.Snapshot()->empty());

  tree.Set("class/infiniband/rdmap0s31/ports/1/hw_counters/unresponsive_remote_events", "4");
  clock.Advance(15s);
  monitor.EvaluateOnce();
  EXPECT_THAT(Kinds(board), ::testing::ElementsAre("efa_unresponsive_remote_events rdmap0s31/1"));

  tree.Set("class/infiniband/rdmap0s31/hw_counters/no_completion_cmds", "1");
  clock.Advance(15s);
  monitor.EvaluateOnce();
  EXPECT_THAT(Kinds(board), ::testing::ElementsAre("efa_admin_queue_stuck rdmap0s31",
                                                   "efa_unresponsive_remote_events rdmap0s31/1"));

  tree.Set("class/infiniband/rdmap0s31/hw_counters/no_completion_cmds", "0");
  clock.Advance(61s);
  monitor.EvaluateOnce();
  EXPECT_TRUE(board.Snapshot()->empty()) << "quiet for longer than clear_after";
}

TEST(EfaMonitorTest, UnreadableCounterIsUnknownNotZero) {
  Tree tree("g6.12xlarge");
  const fs::path f = tree.sys() / "class/infiniband/rdmap0s31/ports/1/hw_counters/rx_drops";
  fs::remove(f);
  fs::create_directory(f);  // reading it fails, as a counter read returning EIO does
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(Options(tree.sys(), tree.proc()), clock, &board, nullptr, nullptr);
  const std::string text =
      exporter::RenderCollectors({&monitor}, std::chrono::steady_clock::time_point::max());
  EXPECT_THAT(text, Not(HasSubstr("efawatch_efa_rx_drops_total")));
  EXPECT_THAT(text, HasSubstr("efawatch_rdma_hw_read_errors{device=\"rdmap0s31\"} 1"));
  EXPECT_THAT(text, HasSubstr("efawatch_efa_tx_bytes_total{device=\"rdmap0s31\",port=\"1\"}"));
  monitor.EvaluateOnce();
  EXPECT_THAT(Kinds(board), ::testing::ElementsAre("efa_counter_unreadable rdmap0s31/1"));
}

TEST(EfaMonitorTest, CounterResetIsCountedAndRaisesNothing) {
  Tree tree("g6.12xlarge");
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(Options(tree.sys(), tree.proc()), clock, &board, nullptr, nullptr);
  monitor.EvaluateOnce();
  tree.Set("class/infiniband/rdmap0s31/ports/1/hw_counters/tx_bytes", "5");
  clock.Advance(15s);
  monitor.EvaluateOnce();
  EXPECT_TRUE(board.Snapshot()->empty());
  const std::string text =
      exporter::RenderCollectors({&monitor}, std::chrono::steady_clock::time_point::max());
  EXPECT_THAT(text, HasSubstr("efawatch_rdma_hw_resets_total 1"));
}

TEST(EfaMonitorTest, ReadsADeviceAtMostOncePerInterval) {
  Tree tree("g6.12xlarge");
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(Options(tree.sys(), tree.proc()), clock, &board, nullptr, nullptr);
  auto reads = [&] {
    const std::string t =
        exporter::RenderCollectors({&monitor}, std::chrono::steady_clock::time_point::max());
    const std::string key = "\nefawatch_rdma_device_reads_total ";
    return std::stoi(t.substr(t.find(key) + key.size()));
  };
  EXPECT_EQ(reads(), 2);  // two devices, first read
  clock.Advance(500ms);
  tree.Set("class/infiniband/rdmap0s31/ports/1/hw_counters/tx_bytes", "99999999999");
  EXPECT_EQ(reads(), 2) << "served from the cache within a second";
  clock.Advance(600ms);
  EXPECT_EQ(reads(), 4);
}

TEST(EfaMonitorTest, DeviceVanishingRaisesDeviceGone) {
  Tree tree("g6.12xlarge");
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(Options(tree.sys(), tree.proc()), clock, &board, nullptr, nullptr);
  monitor.EvaluateOnce();
  fs::remove_all(tree.sys() / "class/infiniband/rdmap0s31");
  clock.Advance(15s);
  monitor.EvaluateOnce();
  EXPECT_THAT(Kinds(board), ::testing::ElementsAre("efa_device_gone rdmap0s31"));
}

// The log-free fallback check on fixture counters and net/dev files.
void WriteNetDev(const fs::path& proc, uint64_t ens5_rx) {
  testing::WriteFile((proc / "net/dev").string(),
                     "Inter-|   Receive |  Transmit\n face |bytes packets|bytes packets\n"
                     "  ens5: " +
                         std::to_string(ens5_rx) + " 1 0 0 0 0 0 0 1000 1 0 0 0 0 0 0\n");
}

TEST(EfaMonitorTest, FallbackCheckFiresWhenEfaIdlesAndEthernetIsBusyDuringNccl) {
  Tree tree("g6.12xlarge");
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(
      Options(tree.sys(), tree.proc()), clock, &board, [] { return true; }, nullptr);
  for (int i = 0; i <= 8; ++i) {
    WriteNetDev(tree.proc(), uint64_t(i) * (1ull << 30));  // 1 GiB per 15 s on ens5
    monitor.EvaluateOnce();
    clock.Advance(15s);
  }
  EXPECT_THAT(Kinds(board), ::testing::Contains("efa_idle_tcp_busy node"));
}

TEST(EfaMonitorTest, FallbackCheckStaysSilentWhenEfaIsBusy) {
  Tree tree("g6.12xlarge");
  common::FakeClock clock;
  common::FindingsBoard board(clock);
  EfaMonitor monitor(
      Options(tree.sys(), tree.proc()), clock, &board, [] { return true; }, nullptr);
  for (int i = 0; i <= 8; ++i) {
    WriteNetDev(tree.proc(), uint64_t(i) * (1ull << 30));
    tree.Set("class/infiniband/rdmap0s31/ports/1/hw_counters/tx_bytes",
             std::to_string(34231176 + uint64_t(i) * (8ull << 30)));
    monitor.EvaluateOnce();
    clock.Advance(15s);
  }
  EXPECT_TRUE(board.Snapshot()->empty());
}

}  // namespace
}  // namespace efawatch::efa
