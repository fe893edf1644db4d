// SPDX-License-Identifier: Apache-2.0
// The scheduled collective probe across three real efawatchd on 127.0.0.1 (tcp provider): one
// agent probes the two others every 3 s; its /metrics shows the run's success and busbw, and
// once a peer is SIGKILLed, the failure within a few runs. The others, without the flag, export
// nothing of it (off by default).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <regex>

#include "tests/support/agent_process.h"

namespace efawatch {
namespace {

using testing::AgentProcess;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace std::chrono_literals;

// The value of the first sample of /metrics whose line starts with `series`, or -1.
double Sample(int port, const std::string& series) {
  const std::string text = testing::HttpGet(port, "/metrics").second;
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(CollectiveProbeTest, ScheduledProbeExportsItsResultAndFailsWhenAPeerDies) {
  auto b = std::make_unique<AgentProcess>();
  auto c = std::make_unique<AgentProcess>();
  if (!b->ok() || !c->ok()) GTEST_SKIP() << "agent did not start (no tcp provider?)";
  AgentProcess a("tcp", "lo",
                 {"--collective-probe-interval-ms=3000",
                  "--collective-probe-peers=" + b->grpc_address() + "," + c->grpc_address(),
                  "--collective-probe-sizes=64K,1M", "--collective-probe-iters=2",
                  "--collective-probe-deadline-ms=2500"});
  ASSERT_TRUE(a.ok()) << a.proc().Stderr();

  // The first run comes within the first interval (jittered), the next ones every 3 s +- 10%.
  ASSERT_TRUE(
      testing::WaitForMetrics(a.metrics_port(), "\nefawatch_collective_probe_success 1", 30s))
      << testing::HttpGet(a.metrics_port(), "/metrics").second << a.proc().Stderr();
  EXPECT_GE(Sample(a.metrics_port(), R"(efawatch_collective_probe_runs_total{result="ok"})"), 1);
  EXPECT_EQ(Sample(a.metrics_port(), R"(efawatch_collective_probe_runs_total{result="failed"})"),
            0);
  for (const char* size : {"65536", "1048576"}) {
    const double bw =
        Sample(a.metrics_port(), std::string("efawatch_collective_probe_busbw_bytes_per_second{"
                                             "size=\"") +
                                     size + "\"}");
    EXPECT_GT(bw, 1e6) << size;   // tcp over loopback on any machine: above 1 MB/s ...
    EXPECT_LT(bw, 1e12) << size;  // ... below 1 TB/s
  }
  EXPECT_GT(Sample(a.metrics_port(), "efawatch_collective_probe_duration_seconds"), 0);
  EXPECT_GT(Sample(a.metrics_port(), "efawatch_collective_probe_last_success_timestamp_seconds"),
            1.7e9);
  EXPECT_THAT(testing::HttpGet(b->metrics_port(), "/metrics").second,
              Not(HasSubstr("efawatch_collective_probe_")));

  c->proc().Signal(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      testing::WaitForMetrics(a.metrics_port(), "\nefawatch_collective_probe_success 0", 20s))
      << testing::HttpGet(a.metrics_port(), "/metrics").second;
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 20s);
  EXPECT_GE(Sample(a.metrics_port(), R"(efawatch_collective_probe_runs_total{result="failed"})"),
            1);
  EXPECT_GE(Sample(a.metrics_port(), "efawatch_collective_probe_consecutive_failures"), 1);
  // The last good run's numbers stay, with their time, for the dashboard.
  EXPECT_GT(Sample(a.metrics_port(), "efawatch_collective_probe_last_success_timestamp_seconds"),
            1.7e9);
  EXPECT_THAT(a.proc().Stderr() + a.proc().Stdout(), HasSubstr("scheduled collective probe with"));
  // The agent stays up and stops promptly.
  a.proc().Signal(SIGTERM);
  EXPECT_EQ(a.proc().Wait(5s), 0);
}

}  // namespace
}  // namespace efawatch
