// SPDX-License-Identifier: Apache-2.0
// The real efawatchd: a pod whose NCCL Inspector writes 3.2 GB/s AllReduce records of 256 MiB
// into its emptyDir has that busbw on /metrics within 10 s, next to the node's expected
// bandwidth; and the real `efawatch analyze` prints the Inspector's table.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/integration/logs/log_agent.h"
#include "tests/support/subprocess.h"

namespace efawatch::testing {
namespace {

namespace fs = std::filesystem;

std::string InspectorFixture(const std::string& name) {
  return SourceDir() + "/tests/fixtures/inspector/" + name;
}

// The value of the first sample of `metric` whose labels match `labels` (a regex), or -1.
double Sample(const std::string& scrape, const std::string& metric, const std::string& labels) {
  const std::regex re("\\n" + metric + "\\{[^}]*" + labels + "[^}]*\\} ([0-9.e+-]+)");
  std::smatch m;
  return std::regex_search(scrape, m, re) ? std::stod(m[1]) : -1;
}

TEST(InspectorAgentTest, APodsInspectorBusbwIsOnMetricsWithinTenSeconds) {
  TempDir dir;
  const fs::path logs = dir.File("logs"), kubelet = dir.File("kubelet");
  fs::create_directories(logs / "train_job-a-0_uid-a" / "main");
  const fs::path volume = kubelet / "uid-a/volumes/kubernetes.io~empty-dir/ray";
  fs::create_directories(volume);
  LogAgent agent(dir, {"--pod-log-root=" + logs.string(), "--pod-volume-root=" + kubelet.string(),
                       "--instance-type=p4d.24xlarge"});
  ASSERT_GT(agent.port(), 0);
  const std::string selector = R"(comm_id="0x1f2e3d4c5b6a79".*size_bucket="256MiB")";
  EXPECT_LT(Sample(agent.Scrape(), "efawatch_nccl_busbw_bytes_per_second_count", selector), 0);

  // The Inspector's dump directory appears once the job runs, and its file with it.
  const auto start = std::chrono::steady_clock::now();
  fs::create_directories(volume / "nccl-inspector");
  fs::copy_file(InspectorFixture("job-a-0-pid4242.log"), volume / "nccl-inspector/w-4242.log");
  const std::string scrape = agent.WaitFor(
      [&](const std::string& s) {
        return Sample(s, "efawatch_nccl_busbw_bytes_per_second_count", selector) == 3;
      },
      std::chrono::seconds(10));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double count = Sample(scrape, "efawatch_nccl_busbw_bytes_per_second_count", selector);
  const double sum = Sample(scrape, "efawatch_nccl_busbw_bytes_per_second_sum", selector);
  ASSERT_EQ(count, 3) << scrape;
  EXPECT_NEAR(sum / count / 1e9, 3.2, 0.01);
  EXPECT_LT(seconds, 10);
  std::printf("busbw %.2f GB/s on /metrics %.2f s after the file appeared\n", sum / count / 1e9,
              seconds);
  EXPECT_NE(scrape.find(R"(namespace="train",pod="job-a-0",comm_id="0x1f2e3d4c5b6a79")"),
            std::string::npos);
  EXPECT_EQ(
      Value(scrape,
            R"(efawatch_fabric_expected_bandwidth_bytes_per_second{instance_type="p4d.24xlarge"})"),
      50e9);
  EXPECT_EQ(Value(scrape, R"(efawatch_nccl_inspector_files{format="jsonl"})"), 1);
  EXPECT_EQ(Value(scrape, R"(efawatch_collector_success{collector="nccl_inspector"})"), 1);
}

TEST(InspectorAgentTest, AnalyzePrintsTheInspectorTable) {
  const auto [rc, out] = RunCommand({BinaryPath("bin/efawatch"), "analyze", "--instance-type",
                                     "p4d.24xlarge", InspectorFixture("job-a-0-pid4242.log")},
                                    std::chrono::seconds(30));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("# NCCL Inspector: 8 op(s) (+1 of another format version) from 1 file(s), "
                     "1 communicator(s); 3 malformed record(s) skipped"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("# expected: 50.0 GB/s (p4d.24xlarge's network)"), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(AllReduce +256MiB +3 +1 +3\.20 +3\.10 +6\.4%)")))
      << out;
  const auto [rc2, json] = RunCommand({BinaryPath("bin/efawatch"), "analyze", "--format", "json",
                                       InspectorFixture("job-b-0-pid77.log")},
                                      std::chrono::seconds(30));
  EXPECT_EQ(rc2, 0) << json;
  EXPECT_NE(json.find(R"("collective": "AllReduce", "size_bucket": "256MiB", "count": 3)"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace efawatch::testing
