// SPDX-License-Identifier: Apache-2.0
// The real efawatchd against what a tenant or a caller can do to it: a pod printing invalid
// UTF-8 (the agent stays up, its scrape stays valid, `efawatch status` works, a restart on the
// same state works), a checkpoint of the wrong shape, and more WatchFindings streams than the
// cap. Every wait polls for a condition; none depends on timing.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "efawatch/v1/agent.grpc.pb.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ::testing::HasSubstr;
using testing::Subprocess;
using testing::TempDir;

class Agent {
 public:
  Agent(const TempDir& dir, const std::vector<std::string>& extra = {}) {
    fs::remove(dir.File("ports.json"));
    fs::create_directories(dir.File("pods"));
    std::vector<std::string> argv = {
        testing::BinaryPath("bin/efawatchd"), "--metrics-listen=127.0.0.1:0",
        "--grpc-listen=127.0.0.1:0",          "--port-file=" + dir.File("ports.json"),
        "--pod-log-root=" + dir.File("pods"), "--state-dir=" + dir.File("state"),
        "--sysfs-root=" + dir.File("nosys")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<Subprocess>(argv);
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    const std::regex re(R"re("metrics": (\d+), "grpc": (\d+))re");
    while (std::chrono::steady_clock::now() < deadline && port_ == 0 && !proc_->Wait(0ms)) {
      std::smatch m;
      const std::string text = testing::ReadFileOrEmpty(dir.File("ports.json"));
      if (std::regex_search(text, m, re)) {
        port_ = std::stoi(m[1]);
        grpc_port_ = std::stoi(m[2]);
      }
      std::this_thread::sleep_for(20ms);
    }
  }
  bool ok() const { return port_ != 0; }
  std::string Scrape() const { return testing::HttpGet(port_, "/metrics").second; }
  std::string WaitFor(const std::function<bool(const std::string&)>& pred,
                      std::chrono::milliseconds timeout = 20s) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string s;
    do {
      s = Scrape();
      if (pred(s)) return s;
      std::this_thread::sleep_for(20ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return s;
  }
  Subprocess& proc() { return *proc_; }
  std::string grpc_address() const { return "127.0.0.1:" + std::to_string(grpc_port_); }

 private:
  std::unique_ptr<Subprocess> proc_;
  int port_ = 0;
  int grpc_port_ = 0;
};

// The value of the sample `series` (name and labels as printed), or -1 when absent.
double Value(const std::string& scrape, const std::string& series) {
  auto p = scrape.find("\n" + series + " ");
  if (p == std::string::npos) return -1;
  return std::stod(scrape.substr(p + series.size() + 2));
}

// Checkpoints the tailer took: written, or due and unchanged since the last one written.
double Checkpoints(const std::string& scrape) {
  return Value(scrape, "efawatch_logs_checkpoint_writes_total") +
         Value(scrape, "efawatch_logs_checkpoints_unchanged_total");
}

void ExpectPromtoolClean(const TempDir& dir, const std::string& scrape) {
  if (!testing::OnPath("promtool")) return;
  testing::WriteFile(dir.File("scrape.prom"), scrape);
  auto [rc, out] = testing::RunCommand(
      {"/bin/sh", "-c", "promtool check metrics < " + dir.File("scrape.prom") + " 2>&1"}, 30s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, ::testing::Not(HasSubstr("error"))) << out;
}

void ExpectStatusWorks(const Agent& agent) {
  auto [rc, out] = testing::RunCommand({testing::BinaryPath("bin/efawatch"), "status", "--agent",
                                        agent.grpc_address(), "--format", "json"},
                                       15s);
  EXPECT_EQ(rc, 0) << out;
}

void ExpectCleanStop(Subprocess& proc) {
  proc.Signal(SIGTERM);
  auto code = proc.Wait(5s);
  ASSERT_TRUE(code.has_value()) << "agent still running 5 s after SIGTERM";
  EXPECT_EQ(*code, 0) << proc.Stderr();
}

TEST(HostileTest, InvalidUtf8PodLineLeavesTheAgentServingAndRestartable) {
  TempDir dir;
  const fs::path ctr = dir.File("pods") + "/train_w-0_uid1/main";
  fs::create_directories(ctr);
  Agent agent(dir, {"--pod-grace-period-seconds=600"});
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  {
    std::ofstream out(ctr / "0.log");
    const std::string t = "2026-12-02T10:00:00.000000001Z stdout F ";
    out << t << "host:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
        << t << "host:1:1 [0] NCCL INFO Using network Sock\xff\xfe\n"
        << t << "host:1:1 [0] misc/x.cc:1 NCCL WARN bad \xff\xfe byte\n"
        << t << "host:1:1 [0] misc/y.cc:2 NCCL WARN " << std::string(476, 'a')
        << "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\n";
  }
  const std::string series =
      "efawatch_logs_nccl_lines_total{namespace=\"train\",pod=\"w-0\",container=\"main\"}";
  std::string s = agent.WaitFor([&](const std::string& x) { return Value(x, series) == 4; });
  ASSERT_EQ(Value(s, series), 4) << s;
  // A checkpoint taken after the lines were read (the first pass writes one at once, then one
  // every 5 s, or finds nothing changed): the agent used to die here, on the tailer's thread.
  const double writes = Checkpoints(s);
  s = agent.WaitFor([&](const std::string& x) { return Checkpoints(x) > writes; });
  ASSERT_GT(Checkpoints(s), writes) << agent.proc().Stderr();
  ASSERT_FALSE(agent.proc().Wait(0ms).has_value()) << agent.proc().Stderr();
  EXPECT_THAT(s, HasSubstr("network=\"other\""));
  ExpectPromtoolClean(dir, s);
  ExpectStatusWorks(agent);
  ExpectCleanStop(agent.proc());

  // Restarted on the same state and the same log: it comes up, restores, and keeps serving.
  Agent again(dir, {"--pod-grace-period-seconds=600"});
  ASSERT_TRUE(again.ok()) << again.proc().Stderr();
  s = again.WaitFor([&](const std::string& x) { return Value(x, series) == 4; });
  EXPECT_EQ(Value(s, series), 4) << "counted once, across the restart";
  ExpectPromtoolClean(dir, s);
  ExpectStatusWorks(again);
  ExpectCleanStop(again.proc());
}

TEST(HostileTest, CheckpointOfTheWrongShapeIsSetAsideAndTheAgentStarts) {
  TempDir dir;
  fs::create_directories(dir.File("state"));
  testing::WriteFile(dir.File("state/logs-checkpoint.json"), R"({"files":[1,"x",null]})");
  Agent agent(dir);
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  const std::string s = agent.WaitFor([](const std::string& x) {
    return Value(x, "efawatch_logs_checkpoints_set_aside_total") == 1;
  });
  EXPECT_EQ(Value(s, "efawatch_logs_checkpoints_set_aside_total"), 1);
  EXPECT_EQ(testing::ReadFileOrEmpty(dir.File("state/logs-checkpoint.json.bad")),
            R"({"files":[1,"x",null]})");
  ExpectCleanStop(agent.proc());
}

TEST(HostileTest, WatchFindingsStreamsBeyondTheCapGetResourceExhausted) {
  TempDir dir;
  Agent agent(dir, {"--max-watch-streams=2"});
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  auto stub = v1::Agent::NewStub(
      grpc::CreateChannel(agent.grpc_address(), grpc::InsecureChannelCredentials()));
  auto open_stream = [&](grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + 60s);
    return stub->WatchFindings(ctx, v1::WatchFindingsRequest());
  };
  grpc::ClientContext c1, c2, c3, c4;
  auto r1 = open_stream(&c1);
  auto r2 = open_stream(&c2);
  // The server counts a stream when its call arrives: wait until it saw both.
  std::string s = agent.WaitFor(
      [](const std::string& x) { return Value(x, "efawatch_rpc_watch_streams") == 2; });
  ASSERT_EQ(Value(s, "efawatch_rpc_watch_streams"), 2);
  auto r3 = open_stream(&c3);
  v1::FindingEvent e;
  EXPECT_FALSE(r3->Read(&e));
  const grpc::Status refused = r3->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_THAT(refused.error_message(), HasSubstr("--max-watch-streams"));
  s = agent.Scrape();
  EXPECT_EQ(Value(s, "efawatch_rpc_refused_total{limit=\"watch_streams\"}"), 1);

  // A stream that ends frees its place.
  c1.TryCancel();
  (void)r1->Finish();
  s = agent.WaitFor(
      [](const std::string& x) { return Value(x, "efawatch_rpc_watch_streams") == 1; });
  ASSERT_EQ(Value(s, "efawatch_rpc_watch_streams"), 1);
  auto r4 = open_stream(&c4);
  s = agent.WaitFor(
      [](const std::string& x) { return Value(x, "efawatch_rpc_watch_streams") == 2; });
  EXPECT_EQ(Value(s, "efawatch_rpc_watch_streams"), 2);
  EXPECT_EQ(Value(s, "efawatch_rpc_refused_total{limit=\"watch_streams\"}"), 1);
  c2.TryCancel();
  c4.TryCancel();
  (void)r2->Finish();
  (void)r4->Finish();
  ExpectCleanStop(agent.proc());
}

}  // namespace
}  // namespace efawatch
