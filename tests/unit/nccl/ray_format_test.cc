// SPDX-License-Identifier: Apache-2.0
// Ray Train's output as the analyzer meets it: the driver's forwarded lines (prefix with and
// without ip=, ANSI colours, "[repeated Nx across cluster]") and a worker's own .out file (marker
// lines, no prefix), in every envelope.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/report_json.h"
#include "tests/unit/nccl/nccl_test_util.h"

namespace efawatch::nccl {
namespace {

using testing::AnalyzeFile;
using testing::FixtureDir;
using testing::Wrap;

const Process* FindProc(const Report& r, uint32_t pid) {
  for (const Process& p : r.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST(RayFormatTest, DriverLogWithTwoIpsIsProvenMultiNode) {
  for (Wrap wrap : {Wrap::kPlain, Wrap::kCri, Wrap::kDockerJson}) {
    SCOPED_TRACE(static_cast<int>(wrap));
    Counters c;
    const Report r = AnalyzeFile(FixtureDir() + "/ray-driver-two-nodes-efa-2.29.log", wrap, &c);
    EXPECT_EQ(nccl::NameOf(r.summary.verdict.nodes_evidence), "proven_multi");
    EXPECT_EQ(r.summary.nodes_rule, "launcher") << "only the two ip= values tell the nodes apart";
    EXPECT_EQ(r.summary.verdict.ofi_provider, "efa");
    EXPECT_FALSE(r.summary.verdict.tcp_fallback);
    // 3 + 2 + 2 + 3 + 7: counted, never read as part of a record.
    EXPECT_EQ(c.ray_repeated_lines, 17u);
    EXPECT_EQ(r.summary.ray_repeated_lines, 17u);
    const Process* p = FindProc(r, 2212);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->ofi_provider, "efa") << "the suffix is not part of the provider name";
    ASSERT_EQ(p->communicators.size(), 1u);
    EXPECT_EQ(p->communicators[0].id, "0x3c9f27d1e04b6a55");
    EXPECT_EQ(p->communicators[0].nranks, 8);
    const Process* b = FindProc(r, 3105);
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(b->communicators.size(), 1u);
    EXPECT_TRUE(b->communicators[0].init_complete);
  }
}

TEST(RayFormatTest, FoldedLinesAppearInJsonOnlyWhenRayFoldedSome) {
  const Report ray = AnalyzeFile(FixtureDir() + "/ray-driver-two-nodes-efa-2.29.log");
  EXPECT_EQ(ReportToJson(ray)["summary"].value("ray_repeated_lines", uint64_t{0}), 17u);
  const Report plain = AnalyzeFile(FixtureDir() + "/efa-ofi-healthy-2.21.log");
  EXPECT_FALSE(ReportToJson(plain)["summary"].contains("ray_repeated_lines"));
}

TEST(RayFormatTest, WorkerFileMarkersAreSkippedAndItsOwnLinesProveNodes) {
  Counters c;
  const Report r = AnalyzeFile(FixtureDir() + "/ray-worker-efa-2.29.log", Wrap::kPlain, &c);
  EXPECT_EQ(c.ray_marker_lines, 3u);
  EXPECT_EQ(c.malformed_lines, 0u);
  EXPECT_EQ(c.ray_repeated_lines, 0u);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].host, "rc-efa-gpu-worker-q2m7d");
  EXPECT_EQ(nccl::NameOf(r.summary.verdict.nodes_evidence), "proven_multi");
  EXPECT_EQ(r.summary.nodes_rule, "nnodes");
  EXPECT_EQ(r.summary.verdict.transport, "NET/OFI");
}

TEST(RayFormatTest, PrefixWithoutIpIsTheDriversNodeAndOneNodeProvesNothing) {
  Analyzer a;
  uint64_t n = 0;
  for (const char* line : {"(RayTrainWorker pid=5) w:5:5 [0] NCCL INFO Using network Socket",
                           "(RayTrainWorker pid=6) w:6:6 [1] NCCL INFO Using network Socket "
                           "[repeated 2x across cluster]"}) {
    a.Feed("driver.log", ++n, line);
  }
  const Report r = a.Snapshot();
  EXPECT_EQ(nccl::NameOf(r.summary.verdict.nodes_evidence), "unknown");
  EXPECT_EQ(r.summary.verdict.network, "Socket");
  EXPECT_EQ(a.counters().ray_repeated_lines, 2u);
}

}  // namespace
}  // namespace efawatch::nccl
