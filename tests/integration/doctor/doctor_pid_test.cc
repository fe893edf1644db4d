// SPDX-License-Identifier: Apache-2.0
// `efawatch doctor --pid` against a real process: one started here with libfabric loaded
// (LD_PRELOAD) and NCCL_SOCKET_IFNAME=lo, FI_PROVIDER=tcp in its environment.

#include <gtest/gtest.h>
#include <rdma/fabric.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

using namespace std::chrono_literals;

// The libfabric file the process has mapped, from its /proc/PID/maps; "" until it has one.
std::string MappedLibfabric(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash != std::string::npos && line.find("/libfabric.so", slash) != std::string::npos) {
      return line.substr(slash);
    }
  }
  return "";
}

TEST(DoctorPidTest, ReportsTheLoadedLibfabricAndTheSettingsOfTheProcess) {
  testing::Subprocess proc(
      {"/bin/sleep", "60"},
      {{"LD_PRELOAD", "libfabric.so.1"}, {"NCCL_SOCKET_IFNAME", "lo"}, {"FI_PROVIDER", "tcp"}});
  std::string mapped;
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       mapped.empty() && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(20ms)) {
    mapped = MappedLibfabric(proc.pid());
  }
  ASSERT_FALSE(mapped.empty()) << "libfabric never showed up in the process's maps";

  const auto [code, out] =
      testing::RunCommand({testing::BinaryPath("bin/efawatch"), "doctor", "--pid",
                           std::to_string(proc.pid()), "--format", "json"},
                          60s);
  EXPECT_EQ(code, 1) << out;  // FAIL: the interface setting
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& c : j["checks"]) by_id[c["id"].get<std::string>()] = c;

  const uint32_t v = fi_version();
  const std::string version = std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
  const auto& lib = by_id["libfabric.library"];
  EXPECT_EQ(lib["status"], "PASS") << lib.dump();
  EXPECT_EQ(lib["evidence"], mapped + " (fi_version " + version + ")");

  const auto& ifname = by_id["settings.nccl_socket_ifname"];
  EXPECT_EQ(ifname["status"], "FAIL") << ifname.dump();
  EXPECT_EQ(ifname["evidence"], "NCCL_SOCKET_IFNAME=lo");
  EXPECT_FALSE(ifname["fix"].get<std::string>().empty());

  const auto& provider = by_id["settings.fi_provider"];
  EXPECT_TRUE(provider["status"] == "WARN" || provider["status"] == "FAIL") << provider.dump();
  EXPECT_EQ(provider["evidence"], "FI_PROVIDER=tcp");
  EXPECT_FALSE(provider["fix"].get<std::string>().empty());

  proc.Signal(SIGKILL);
  proc.Wait(5s);
}

TEST(DoctorPidTest, AMissingProcessIsAnErrorOfItsOwn) {
  const auto [code, out] = testing::RunCommand(
      {testing::BinaryPath("bin/efawatch"), "doctor", "--pid", "999999999"}, 30s);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("no such process"), std::string::npos) << out;
}

}  // namespace
}  // namespace efawatch
