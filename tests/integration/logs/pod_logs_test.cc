// SPDX-License-Identifier: Apache-2.0
// The real efawatchd following a temporary pod log tree: CRI logs built from the NCCL fixtures
// are written while it runs, rotated as kubelet does, truncated, deleted; the agent is SIGKILLed
// and restarted mid-stream. The scraped metrics must count every line exactly once and show the
// expected verdicts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/integration/logs/log_agent.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::Checkpoints;
using testing::FixtureLines;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;
using testing::Value;

void AppendCri(const fs::path& f, const std::vector<std::string>& lines, size_t from = 0,
               size_t to = SIZE_MAX) {
  std::ofstream out(f, std::ios::app);
  for (size_t i = from; i < std::min(to, lines.size()); ++i) {
    out << "2026-12-02T10:00:00.000000001Z stdout F " << lines[i] << "\n";
  }
}

std::vector<std::string> Chatter(int n, int start = 0) {
  std::vector<std::string> v;
  v.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v.push_back("step " + std::to_string(start + i) + " loss 0.123");
  return v;
}

// The agent over this test's tree.
class Agent : public testing::LogAgent {
 public:
  explicit Agent(const TempDir& dir) : LogAgent(dir, {"--pod-log-root=" + dir.File("pods")}) {}
};

std::string Series(const std::string& metric, const std::string& pod) {
  return metric + "{namespace=\"train\",pod=\"" + pod + "\",container=\"main\"}";
}

TEST(PodLogsTest, CountsEveryLineOnceThroughRotationTruncationDeletionAndSigkill) {
  TempDir dir;
  const fs::path a = fs::path(dir.path()) / "pods/train_fallback-0_uid-a/main";
  const fs::path b = fs::path(dir.path()) / "pods/train_efa-0_uid-b/main";
  const fs::path c = fs::path(dir.path()) / "pods/train_chatter-0_uid-c/main";
  for (const auto& d : {a, b, c}) fs::create_directories(d);
  const auto fallback = FixtureLines("socket-fallback-plugin-missing-2.19.log");
  const auto efa = FixtureLines("efa-ofi-healthy-2.21.log");
  ASSERT_GT(fallback.size(), 10u);
  ASSERT_GT(efa.size(), 10u);
  const size_t half = fallback.size() / 2;

  AppendCri(a / "0.log", fallback, 0, half);
  AppendCri(b / "0.log", efa);
  AppendCri(c / "0.log", Chatter(500));

  auto agent = std::make_unique<Agent>(dir);
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  const std::string chatter_lines = Series("efawatch_logs_lines_total", "chatter-0");
  std::string s = agent->WaitFor([&](const std::string& x) {
    return Value(x, chatter_lines) == 500 &&
           Value(x, Series("efawatch_nccl_tcp_fallback", "efa-0")) == 0;
  });
  ASSERT_EQ(Value(s, chatter_lines), 500) << s;
  EXPECT_EQ(Value(s, Series("efawatch_logs_nccl_lines_total", "chatter-0")), 0);
  EXPECT_THAT(s, Not(HasSubstr(Series("efawatch_nccl_tcp_fallback", "chatter-0"))))
      << "a pod without NCCL gets no verdict series";

  // Lag from a written line to its metric, with inotify.
  const auto t0 = std::chrono::steady_clock::now();
  AppendCri(c / "0.log", Chatter(1, 500));
  s = agent->WaitFor([&](const std::string& x) { return Value(x, chatter_lines) == 501; }, 5s);
  const auto lag = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(Value(s, chatter_lines), 501);
  EXPECT_LT(lag, 1s) << "lag " << std::chrono::duration_cast<std::chrono::milliseconds>(lag).count()
                     << " ms";
  RecordProperty(
      "lag_ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(lag).count()));

  // Kubelet rotation of A: N.log -> N.log.<time>, then the runtime writes a new N.log.
  fs::rename(a / "0.log", a / "0.log.20261202-100000");
  AppendCri(a / "0.log", fallback, half);
  // copytruncate of C.
  fs::resize_file(c / "0.log", 0);
  s = agent->WaitFor([&](const std::string& x) {
    return Value(x, Series("efawatch_logs_lines_total", "fallback-0")) == double(fallback.size());
  });
  EXPECT_EQ(Value(s, Series("efawatch_logs_lines_total", "fallback-0")), double(fallback.size()));
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", "fallback-0")), 1) << s;
  EXPECT_EQ(Value(s, Series("efawatch_nccl_net_plugin_missing", "fallback-0")), 1);
  // A fallback, not a choice: nothing in the log sets NCCL_IB_DISABLE or NCCL_NET=Socket.
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_deliberate", "fallback-0")), 0) << s;
  EXPECT_GE(Value(s, "efawatch_logs_rotations_total"), 1);
  AppendCri(c / "0.log", Chatter(250, 1000));
  s = agent->WaitFor([&](const std::string& x) { return Value(x, chatter_lines) == 751; });
  EXPECT_EQ(Value(s, chatter_lines), 751);
  EXPECT_GE(Value(s, "efawatch_logs_truncations_total"), 1);
  // Let a checkpoint record this state (every 5 s), so what follows is "mid-stream".
  const double writes = Checkpoints(s);
  s = agent->WaitFor([&](const std::string& x) { return Checkpoints(x) > writes; }, 15s);

  // SIGKILL mid-stream; lines written while the agent is down must be read by the next one.
  AppendCri(c / "0.log", Chatter(100, 2000));
  agent->proc().Signal(SIGKILL);
  ASSERT_TRUE(agent->proc().Wait(5s).has_value());
  AppendCri(c / "0.log", Chatter(149, 3000));
  agent = std::make_unique<Agent>(dir);
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  s = agent->WaitFor([&](const std::string& x) { return Value(x, chatter_lines) >= 1000; });
  EXPECT_EQ(Value(s, chatter_lines), 1000) << "nothing lost, nothing doubled";
  EXPECT_EQ(Value(s, Series("efawatch_logs_lines_total", "fallback-0")), double(fallback.size()));
  EXPECT_EQ(Value(s, Series("efawatch_logs_lines_total", "efa-0")), double(efa.size()));
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", "fallback-0")), 1)
      << "the verdict survives the restart";
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", "efa-0")), 0);

  // GetNodeHealth carries the per-pod verdicts and the fallback finding.
  auto [rc, json] =
      testing::RunCommand({testing::BinaryPath("bin/efawatch"), "status", "--agent",
                           "127.0.0.1:" + std::to_string(agent->grpc_port()), "--format", "json"},
                          10s);
  ASSERT_EQ(rc, 0) << json;
  EXPECT_THAT(json, ::testing::ContainsRegex(
                        R"re("pod":"fallback-0","container":"main","tcp_fallback":true)re"));
  EXPECT_THAT(json, HasSubstr(R"re("kind":"tcp_fallback")re"));
  EXPECT_THAT(json, HasSubstr(R"re("subject":"train/fallback-0/main")re"));

  // A deleted pod's series go away after the grace period (2 s here).
  fs::remove_all(fs::path(dir.path()) / "pods/train_efa-0_uid-b");
  s = agent->WaitFor(
      [&](const std::string& x) {
        return x.find(Series("efawatch_logs_lines_total", "efa-0")) == std::string::npos;
      },
      10s);
  EXPECT_THAT(s, Not(HasSubstr("pod=\"efa-0\"")));
  EXPECT_THAT(s, HasSubstr(Series("efawatch_logs_lines_total", "fallback-0")));

  agent->proc().Signal(SIGTERM);
  auto code = agent->proc().Wait(2s);
  ASSERT_TRUE(code.has_value()) << agent->proc().Stderr();
  EXPECT_EQ(*code, 0);
}

// A job that has run for hours: kubelet rotated its NCCL init lines into 0.log.<time> (the
// oldest compressed), and the live 0.log holds only training lines. An agent installed now (no
// checkpoint) reads the run's rotated files first and gives the verdict within seconds; killed
// one second after start, the next agent counts every line once.
TEST(PodLogsTest, FreshAgentReadsTheRunsRotatedFilesFirst) {
  TempDir dir;
  const fs::path d = fs::path(dir.path()) / "pods/train_longrun-0_uid-l/main";
  fs::create_directories(d);
  const auto fallback = FixtureLines("socket-fallback-plugin-missing-2.19.log");
  const size_t half = fallback.size() / 2;
  AppendCri(d / "0.log.20261202-090000", fallback, 0, half);
  auto [gz_rc, gz_out] =
      testing::RunCommand({"/usr/bin/env", "gzip", (d / "0.log.20261202-090000").string()}, 10s);
  ASSERT_EQ(gz_rc, 0) << gz_out;
  ASSERT_TRUE(fs::exists(d / "0.log.20261202-090000.gz"));
  AppendCri(d / "0.log.20261202-100000", fallback, half);
  AppendCri(d / "0.log", Chatter(100));
  // A file of the container's previous run is not this run's history.
  AppendCri(d / "1.log.20261201-080000", Chatter(7));
  const double total = double(fallback.size() + 100);
  const std::string lines = Series("efawatch_logs_lines_total", "longrun-0");

  const auto start = std::chrono::steady_clock::now();
  auto agent = std::make_unique<Agent>(dir);
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  std::string s = agent->WaitFor(
      [&](const std::string& x) {
        return Value(x, Series("efawatch_nccl_tcp_fallback", "longrun-0")) == 1 &&
               Value(x, lines) == total;
      },
      5s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", "longrun-0")), 1) << s;
  EXPECT_EQ(Value(s, Series("efawatch_nccl_net_plugin_missing", "longrun-0")), 1);
  EXPECT_EQ(Value(s, lines), total) << "every line of this run, once";

  // A second fresh agent, SIGKILLed 1 s after start, then a third: still every line once.
  agent->proc().Signal(SIGKILL);
  ASSERT_TRUE(agent->proc().Wait(5s).has_value());
  fs::remove_all(dir.File("state"));
  agent = std::make_unique<Agent>(dir);
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  std::this_thread::sleep_for(1s);
  agent->proc().Signal(SIGKILL);
  ASSERT_TRUE(agent->proc().Wait(5s).has_value());
  AppendCri(d / "0.log", Chatter(5, 100));
  agent = std::make_unique<Agent>(dir);
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  s = agent->WaitFor([&](const std::string& x) { return Value(x, lines) >= total + 5; });
  std::this_thread::sleep_for(500ms);
  s = agent->Scrape();
  EXPECT_EQ(Value(s, lines), total + 5) << "nothing lost, nothing doubled";
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", "longrun-0")), 1);
}

TEST(PodLogsTest, SymlinkOutOfTheRootIsNotFollowed) {
  TempDir dir;
  const fs::path d = fs::path(dir.path()) / "pods/train_sneaky-0_uid-d/main";
  fs::create_directories(d);
  AppendCri(fs::path(dir.path()) / "outside.log", Chatter(10));
  fs::create_symlink(fs::path(dir.path()) / "outside.log", d / "0.log");
  Agent agent(dir);
  ASSERT_NE(agent.port(), 0);
  std::string s = agent.WaitFor(
      [](const std::string& x) { return Value(x, "efawatch_logs_files_refused_total") == 1; });
  EXPECT_EQ(Value(s, "efawatch_logs_files_refused_total"), 1);
  EXPECT_THAT(s, Not(HasSubstr("sneaky-0")));
  EXPECT_EQ(Value(s, "efawatch_logs_read_lines_total"), 0);
}

}  // namespace
}  // namespace efawatch
