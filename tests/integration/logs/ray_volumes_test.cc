// SPDX-License-Identifier: Apache-2.0
// The real efawatchd over a fixture kubelet tree shaped like two KubeRay worker pods: their
// container logs under the pod log root, and Ray's session logs in an emptyDir volume
// (session_<ts>/logs/ with session_latest). Worker files are written while it runs (plain
// NCCL lines, and a job driver's Ray-prefixed and deduplicated ones), Ray rotates a worker
// file, the agent is SIGKILLed and restarted, a new session starts, a pod is deleted. The
// scraped series must name the right pod, verdict and line counts, nothing lost or doubled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <regex>
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

constexpr char kWorker[] =
    "worker-5c1d9e2a7b3f4e6d8a0c2b4d6f8e1a3c5b7d9f0e2a4c6b8d0f1e3a5c-02000000-";

void Append(const fs::path& f, const std::vector<std::string>& lines, size_t from = 0,
            size_t to = SIZE_MAX) {
  std::ofstream out(f, std::ios::app);
  for (size_t i = from; i < std::min(to, lines.size()); ++i) out << lines[i] << "\n";
}

void AppendCri(const fs::path& f, const std::vector<std::string>& lines) {
  std::ofstream out(f, std::ios::app);
  for (const auto& l : lines) out << "2026-12-02T10:00:00.000000001Z stdout F " << l << "\n";
}

// The agent over this test's tree.
class Agent : public testing::LogAgent {
 public:
  explicit Agent(const TempDir& dir)
      : LogAgent(dir, {"--pod-log-root=" + dir.File("logs"),
                       "--pod-volume-root=" + dir.File("kubelet")}) {}
};

std::string Series(const std::string& metric, const std::string& pod,
                   const std::string& container = "(volume:ray-logs)") {
  return metric + "{namespace=\"ray\",pod=\"" + pod + "\",container=\"" + container + "\"}";
}

// A KubeRay worker pod: its container log directory and its /tmp/ray emptyDir.
struct RayPod {
  RayPod(const TempDir& dir, const std::string& name, const std::string& uid)
      : name(name),
        log_dir(fs::path(dir.path()) / "logs" / ("ray_" + name + "_" + uid)),
        uid_dir(fs::path(dir.path()) / "kubelet" / uid),
        volume(uid_dir / "volumes/kubernetes.io~empty-dir/ray-logs") {
    fs::create_directories(log_dir / "ray-worker");
    fs::create_directories(volume);
  }
  // Starts a session as `ray start` does and returns its logs directory.
  fs::path NewSession(const std::string& ts) const {
    fs::path logs = volume / ("session_" + ts) / "logs";
    fs::create_directories(logs);
    std::error_code ec;
    fs::remove(volume / "session_latest", ec);
    fs::create_symlink("/tmp/ray/session_" + ts, volume / "session_latest");
    return logs;
  }
  std::string name;
  fs::path log_dir, uid_dir, volume;
};

TEST(RayVolumesTest, FollowsRaySessionsPerPodThroughRotationSigkillNewSessionAndDeletion) {
  TempDir dir;
  const auto efa = FixtureLines("ray-worker-efa-2.29.log");
  const auto driver = FixtureLines("ray-driver-two-nodes-efa-2.29.log");
  const auto socket = FixtureLines("socket-fallback-plugin-missing-2.19.log");
  ASSERT_GT(efa.size(), 10u);
  ASSERT_GT(socket.size(), 10u);
  RayPod a(dir, "rc-efa-gpu-worker-a", "uid-a");
  RayPod b(dir, "rc-efa-gpu-worker-b", "uid-b");
  AppendCri(a.log_dir / "ray-worker/0.log", {"Local node IP: 10.0.1.11", "Ray runtime started."});
  AppendCri(b.log_dir / "ray-worker/0.log", {"Local node IP: 10.0.2.22"});
  const fs::path logs_a = a.NewSession("2026-03-02_09-00-00_000001_7");
  const fs::path logs_b = b.NewSession("2026-03-02_09-00-05_000002_7");
  const fs::path out_a = logs_a / (std::string(kWorker) + "3105.out");
  const fs::path out_b = logs_b / (std::string(kWorker) + "4410.out");
  const size_t half = efa.size() / 2;
  Append(out_a, efa, 0, half);
  Append(logs_a / (std::string(kWorker) + "3105.err"), {"a warning on stderr"});
  Append(out_b, socket, 0, socket.size() / 2);

  auto agent = std::make_unique<Agent>(dir);
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  const std::string lines_a = Series("efawatch_logs_lines_total", a.name);
  const std::string lines_b = Series("efawatch_logs_lines_total", b.name);
  const size_t half_b = socket.size() / 2;  // whole lines
  std::string s = agent->WaitFor([&](const std::string& x) {
    return Value(x, lines_a) == double(half + 1) &&
           Value(x, lines_b) == static_cast<double>(half_b);
  });
  ASSERT_EQ(Value(s, lines_a), double(half + 1)) << s;
  EXPECT_EQ(Value(s, Series("efawatch_logs_lines_total", a.name, "ray-worker")), 2)
      << "the container log is its own series";

  // Written while the agent runs: the rest of B's worker file, a job driver's forwarded lines
  // (Ray prefixes, ANSI colours, dedup suffixes) in A, then Ray rotates A's worker file.
  Append(out_b, socket, socket.size() / 2);
  Append(logs_a / "job-driver-raysubmit_7Hc2.log", driver);
  Append(out_a, efa, half, half + 2);
  fs::rename(out_a, fs::path(out_a.string() + ".1"));
  Append(out_a, efa, half + 2);
  const double total_a = double(efa.size() + 1 + driver.size());
  s = agent->WaitFor([&](const std::string& x) {
    return Value(x, lines_a) == total_a && Value(x, lines_b) == double(socket.size());
  });
  EXPECT_EQ(Value(s, lines_a), total_a) << s;
  EXPECT_EQ(Value(s, lines_b), double(socket.size()));
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", b.name)), 1) << s;
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", a.name)), 0);
  EXPECT_THAT(s, HasSubstr("pod=\"" + a.name +
                           "\",container=\"(volume:ray-logs)\",network=\"Libfabric\",transport="
                           "\"NET/OFI\",ofi_provider=\"efa\",nccl_version=\"2.29.7\",nodes="
                           "\"proven_multi\""));
  EXPECT_GE(Value(s, "efawatch_logs_rotations_total"), 1);

  // Let a checkpoint record this, write more, SIGKILL, write more while it is down, restart.
  const double writes = Checkpoints(s);
  agent->WaitFor([&](const std::string& x) { return Checkpoints(x) > writes; }, 15s);
  Append(out_a, {"step 100 loss 1.5", "step 101 loss 1.4"});
  agent->proc().Signal(SIGKILL);
  ASSERT_TRUE(agent->proc().Wait(5s).has_value());
  fs::rename(fs::path(out_a.string() + ".1"), fs::path(out_a.string() + ".2"));
  fs::rename(out_a, fs::path(out_a.string() + ".1"));  // rotated while the agent was down
  Append(out_a, {"step 102 loss 1.3"});
  agent = std::make_unique<Agent>(dir);
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  s = agent->WaitFor([&](const std::string& x) { return Value(x, lines_a) >= total_a + 3; });
  EXPECT_EQ(Value(s, lines_a), total_a + 3) << "nothing lost, nothing doubled";
  EXPECT_EQ(Value(s, lines_b), double(socket.size()));
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", b.name)), 1)
      << "the verdict survives the restart";

  // A new session in A: the old session's files are closed, the new one's counted.
  const double watched = Value(s, "efawatch_logs_files_watched");
  const fs::path logs_a2 = a.NewSession("2026-03-02_11-30-00_000003_7");
  Append(logs_a2 / (std::string(kWorker) + "5120.out"), efa);
  s = agent->WaitFor(
      [&](const std::string& x) { return Value(x, lines_a) == total_a + 3 + double(efa.size()); });
  EXPECT_EQ(Value(s, lines_a), total_a + 3 + double(efa.size()));
  EXPECT_EQ(Value(s, "efawatch_logs_files_watched"), watched - 2)
      << "three files of the old session closed, one of the new one opened";
  EXPECT_EQ(Value(s, Series("efawatch_nccl_tcp_fallback", a.name)), 0);

  // status: each verdict with its source and file count.
  auto [rc, json] =
      testing::RunCommand({testing::BinaryPath("bin/efawatch"), "status", "--agent",
                           "127.0.0.1:" + std::to_string(agent->grpc_port()), "--format", "json"},
                          10s);
  ASSERT_EQ(rc, 0) << json;
  EXPECT_THAT(json,
              HasSubstr(R"re("pod":"rc-efa-gpu-worker-b","container":"(volume:ray-logs)")re"));
  EXPECT_THAT(json, ::testing::ContainsRegex(R"re("source":"pod_volume","files":"?1"?)re"));

  // B is deleted: kubelet removes its volumes and log directory; its series go after 2 s.
  fs::remove_all(b.uid_dir);
  fs::remove_all(b.log_dir);
  s = agent->WaitFor(
      [&](const std::string& x) { return x.find("pod=\"" + b.name + "\"") == std::string::npos; });
  EXPECT_THAT(s, Not(HasSubstr("pod=\"" + b.name + "\"")));
  EXPECT_THAT(s, HasSubstr(lines_a));

  agent->proc().Signal(SIGTERM);
  auto code = agent->proc().Wait(2s);
  ASSERT_TRUE(code.has_value()) << agent->proc().Stderr();
  EXPECT_EQ(*code, 0);
}

TEST(RayVolumesTest, SymlinkOutOfThePodsVolumeIsRefusedAndCounted) {
  TempDir dir;
  RayPod a(dir, "rc-sneaky", "uid-s");
  RayPod other(dir, "rc-other", "uid-o");
  const fs::path logs = a.NewSession("1");
  Append(other.volume / "nccl.other.log", {"x:1:1 [0] NCCL INFO Using network Socket"});
  fs::create_symlink(other.volume / "nccl.other.log", logs / (std::string(kWorker) + "1.out"));
  fs::create_symlink("/etc/hostname", a.volume / "nccl.etc.log");
  Agent agent(dir);
  ASSERT_NE(agent.port(), 0);
  std::string s = agent.WaitFor(
      [](const std::string& x) { return Value(x, "efawatch_logs_files_refused_total") == 2; });
  EXPECT_EQ(Value(s, "efawatch_logs_files_refused_total"), 2) << s;
  EXPECT_THAT(s, Not(HasSubstr("pod=\"rc-sneaky\",container=\"(volume:ray-logs)\"")));
  EXPECT_EQ(Value(s, Series("efawatch_logs_lines_total", "rc-other")), 1)
      << "the other pod's own file is read, once, as its own";
}

}  // namespace
}  // namespace efawatch
