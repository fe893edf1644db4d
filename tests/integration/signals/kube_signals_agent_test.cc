// SPDX-License-Identifier: Apache-2.0
// The real efawatchd against the fake Kubernetes API server (tests/component/mesh/
// fake_apiserver.py, HTTPS with a bearer token): an Event on the pod whose log shows a TCP
// fallback, posted once however often the agent looks or is scraped; the node's EfaHealthy
// condition patched False on an EFA fault and True again when it clears; nothing written
// without RBAC (403) or without API access, and the agent keeps running.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/logs/log_agent.h"
#include "tests/support/fake_apiserver.h"

namespace efawatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::FixtureLines;
using testing::TempDir;

std::vector<Json> Writes(const TempDir& dir) {
  std::vector<Json> out;
  std::istringstream in(testing::ReadFileOrEmpty(dir.File("requests.writes")));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

std::vector<Json> EventsWithReason(const TempDir& dir, const std::string& reason) {
  std::vector<Json> out;
  for (const Json& w : Writes(dir)) {
    if (w["method"] == "POST" && w["body"]["reason"] == reason) out.push_back(w["body"]);
  }
  return out;
}

// The condition of `type` in the latest node status patch that has it, or an empty object.
Json LatestCondition(const TempDir& dir, const std::string& type) {
  Json latest = Json::object();
  for (const Json& w : Writes(dir)) {
    if (w["method"] != "PATCH") continue;
    for (const Json& c : w["body"]["status"]["conditions"]) {
      if (c["type"] == type) latest = c;
    }
  }
  return latest;
}

Json LatestEfaCondition(const TempDir& dir) { return LatestCondition(dir, "EfaHealthy"); }

bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return pred();
}

class KubeSignalsAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testing::StartFakeApiServer(dir_, &server_, &url_);
    ASSERT_EQ(why, "");
    const fs::path pod = fs::path(dir_.path()) / "pods/train_fallback-0_uid-a/main";
    fs::create_directories(pod);
    std::ofstream log(pod / "0.log");
    for (const auto& l : FixtureLines("socket-fallback-plugin-missing-2.19.log")) {
      log << "2026-12-02T10:00:00.000000001Z stdout F " << l << "\n";
    }
    fs::copy(testing::SourceDir() + "/tests/fixtures/sysfs/g6.12xlarge", dir_.File("tree"),
             fs::copy_options::recursive);
  }
  std::unique_ptr<testing::LogAgent> Start(const std::string& objects,
                                           const std::string& token_file,
                                           std::vector<std::string> more = {}) {
    testing::WriteFile(dir_.File("objects.json"), objects);
    std::vector<std::string> args = {"--pod-log-root=" + dir_.File("pods"),
                                     "--sysfs-root=" + dir_.File("tree/sys"),
                                     "--procfs-root=" + dir_.File("tree/proc"),
                                     "--efa-evaluate-interval-seconds=1",
                                     "--mesh-k8s-api=" + url_,
                                     "--mesh-k8s-token-file=" + token_file,
                                     "--mesh-k8s-ca-file=" + dir_.File("ca.pem"),
                                     "--kube-signals-interval-ms=200",
                                     "--node-name=node-a",
                                     "--workload-identity=false"};
    args.insert(args.end(), more.begin(), more.end());
    return std::make_unique<testing::LogAgent>(dir_, args);
  }
  std::string Counter() const {
    return dir_.File("tree/sys/class/infiniband/rdmap0s31/hw_counters/no_completion_cmds");
  }

  TempDir dir_;
  std::unique_ptr<testing::Subprocess> server_;
  std::string url_;
};

TEST_F(KubeSignalsAgentTest, EventOnThePodOnceAndEfaConditionRaisedAndCleared) {
  auto agent = Start(R"({"namespaces": {}, "nodes": []})", dir_.File("client-token"));
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  ASSERT_TRUE(WaitUntil([&] { return !EventsWithReason(dir_, "NcclTcpFallback").empty(); }))
      << agent->proc().Stderr();
  const Json e = EventsWithReason(dir_, "NcclTcpFallback")[0];
  EXPECT_EQ(e["regarding"]["namespace"], "train");
  EXPECT_EQ(e["regarding"]["name"], "fallback-0");
  EXPECT_EQ(e["regarding"]["uid"], "uid-a");
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["note"].get<std::string>().rfind(
                "NCCL inter-node traffic over TCP sockets: container main: ", 0),
            0u)
      << e.dump();
  EXPECT_NE(e["note"].get<std::string>().find("0.log:"), std::string::npos)
      << "the evidence line is named: " << e.dump();
  // Many rounds and scrapes later, still one Event per problem.
  for (int i = 0; i < 10; ++i) {
    (void)agent->Scrape();
    std::this_thread::sleep_for(150ms);
  }
  EXPECT_EQ(EventsWithReason(dir_, "NcclTcpFallback").size(), 1u);
  EXPECT_EQ(EventsWithReason(dir_, "NcclNetPluginMissing").size(), 1u);
  EXPECT_GE(testing::Value(agent->Scrape(),
                           "efawatch_kube_signals_total{signal=\"event\",result=\"sent\"}"),
            2);

  // The node's EFA devices are healthy, then the admin queue is stuck, then it is not.
  ASSERT_TRUE(WaitUntil([&] { return LatestEfaCondition(dir_).value("status", "") == "True"; }));
  testing::WriteFile(Counter(), "1\n");
  ASSERT_TRUE(WaitUntil([&] { return LatestEfaCondition(dir_).value("status", "") == "False"; }))
      << agent->proc().Stderr();
  const Json down = LatestEfaCondition(dir_);
  EXPECT_EQ(down["reason"], "EfaAdminQueueStuck");
  EXPECT_NE(down["message"].get<std::string>().find("rdmap0s31"), std::string::npos) << down;
  testing::WriteFile(Counter(), "0\n");
  ASSERT_TRUE(WaitUntil([&] { return LatestEfaCondition(dir_).value("status", "") == "True"; }))
      << agent->proc().Stderr();
  EXPECT_EQ(LatestEfaCondition(dir_)["reason"], "EfaDevicesHealthy");
}

// FabricReady on the g6.12xlarge fixture (its one EFA device present, doctor without FAIL): True
// once the agent's responder (libfabric tcp on loopback here) answers its self-ping; False,
// naming why, when no responder runs, or when the doctor finds a GPU without its driver.
TEST_F(KubeSignalsAgentTest, FabricReadyTrueOnceTheChecksPassFalseWithAReason) {
  auto agent = Start(R"({"namespaces": {}, "nodes": []})", dir_.File("client-token"),
                     {"--fabric-providers=tcp", "--fabric-interface=lo"});
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  ASSERT_TRUE(WaitUntil([&] {
    return LatestCondition(dir_, "FabricReady").value("status", "") == "True";
  })) << LatestCondition(dir_, "FabricReady").dump()
      << agent->proc().Stderr();
  const Json ready = LatestCondition(dir_, "FabricReady");
  EXPECT_EQ(ready["reason"], "FabricChecksPassed");
  EXPECT_NE(ready["message"].get<std::string>().find("pongs over tcp"), std::string::npos)
      << ready.dump();
  agent.reset();

  auto off = Start(R"({"namespaces": {}, "nodes": []})", dir_.File("client-token"),
                   {"--fabric-responder=false"});
  ASSERT_NE(off->port(), 0) << off->proc().Stderr();
  ASSERT_TRUE(WaitUntil([&] {
    return LatestCondition(dir_, "FabricReady").value("reason", "") == "FabricResponderOff";
  })) << LatestCondition(dir_, "FabricReady").dump()
      << off->proc().Stderr();
  EXPECT_EQ(LatestCondition(dir_, "FabricReady")["status"], "False");
  off.reset();

  // An NVIDIA GPU on the PCI bus and no driver loaded: doctor's gpu.driver FAILs.
  const fs::path gpu = fs::path(dir_.File("tree/sys/bus/pci/devices/0000:00:1e.0"));
  fs::create_directories(gpu);
  testing::WriteFile((gpu / "vendor").string(), "0x10de\n");
  testing::WriteFile((gpu / "class").string(), "0x030200\n");
  fs::remove(dir_.File("tree/proc/driver/nvidia/version"));
  auto failing = Start(R"({"namespaces": {}, "nodes": []})", dir_.File("client-token"),
                       {"--fabric-providers=tcp", "--fabric-interface=lo"});
  ASSERT_NE(failing->port(), 0) << failing->proc().Stderr();
  ASSERT_TRUE(WaitUntil([&] {
    return LatestCondition(dir_, "FabricReady").value("reason", "") == "DoctorFailing";
  })) << LatestCondition(dir_, "FabricReady").dump()
      << failing->proc().Stderr();
  EXPECT_NE(LatestCondition(dir_, "FabricReady")["message"].get<std::string>().find("gpu.driver"),
            std::string::npos);
}

TEST_F(KubeSignalsAgentTest, WithoutRbacNothingIsWrittenAndTheAgentCarriesOn) {
  auto agent =
      Start(R"({"namespaces": {}, "nodes": [], "forbid_writes": true})", dir_.File("client-token"));
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  const std::string refused = "efawatch_kube_signals_total{signal=\"event\",result=\"refused\"}";
  std::string s =
      agent->WaitFor([&](const std::string& x) { return testing::Value(x, refused) >= 1; }, 20s);
  EXPECT_EQ(testing::Value(s, refused), 1) << s;
  std::this_thread::sleep_for(1s);  // five more rounds: backed off, not retried
  const std::string requests = testing::ReadFileOrEmpty(dir_.File("requests"));
  size_t posts = 0;
  for (size_t at = requests.find("POST "); at != std::string::npos;
       at = requests.find("POST ", at + 1)) {
    ++posts;
  }
  EXPECT_EQ(posts, 1u) << requests;
  EXPECT_TRUE(Writes(dir_).empty());
  EXPECT_NE(agent->proc().Stderr().find("efawatch-kube-signals"), std::string::npos)
      << "the log names the missing ClusterRole";
  // Still analyzing and serving.
  EXPECT_EQ(testing::Value(agent->Scrape(),
                           "efawatch_nccl_tcp_fallback{namespace=\"train\",pod="
                           "\"fallback-0\",container=\"main\"}"),
            1);
}

TEST_F(KubeSignalsAgentTest, OutsideAPodTheSignalsAreOff) {
  auto agent = Start(R"({"namespaces": {}, "nodes": []})", dir_.File("no-such-token"));
  ASSERT_NE(agent->port(), 0) << agent->proc().Stderr();
  (void)agent->WaitFor([](const std::string& x) {
    return x.find("efawatch_nccl_tcp_fallback{") != std::string::npos;
  });
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_.File("requests")), "");
  EXPECT_NE(agent->proc().Stderr().find("kubernetes signals: off"), std::string::npos)
      << agent->proc().Stderr();
}

}  // namespace
}  // namespace efawatch
