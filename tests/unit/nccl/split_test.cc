// SPDX-License-Identifier: Apache-2.0
// Cuts every log that shows two or more hosts (the shared corpus and the fixtures) into one
// piece per host, the share a node's agent sees in a DaemonSet, and checks that each piece's
// report agrees with the whole log's: where the whole is a TCP fallback, every piece that shows
// a TCP net is flagged (warning or critical) and its verdict does not start with OK; no piece of
// a log proven to run on one node is flagged.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "lib/nccl/text_util.h"
#include "tests/unit/nccl/nccl_test_util.h"
#include "tests/unit/nccl/split_by_host.h"

namespace efawatch::nccl {
namespace {

using testing::FixtureDir;
using testing::ReadLines;
using testing::SharedDir;
using testing::SplitByHost;

Report AnalyzeLines(const std::string& name, const std::vector<std::string>& lines) {
  Analyzer a;
  uint64_t n = 0;
  for (const std::string& l : lines) a.Feed(name, ++n, l);
  return a.Snapshot();
}

bool ShowsTcpNet(const Report& r) {
  for (const Process& p : r.processes) {
    if (p.network_family == "Socket") return true;
    if (p.network_family == "OFI" && internal::IsTcpProvider(p.ofi_provider)) return true;
  }
  return false;
}

const Finding* Worst(const Report& r, std::string_view kind) {
  const Finding* worst = nullptr;
  for (const Finding& f : r.findings) {
    if (f.kind == kind && (worst == nullptr || f.severity > worst->severity)) worst = &f;
  }
  return worst;
}

// Returns the number of pieces checked (0 when the log shows fewer than two hosts).
size_t CheckPieces(const std::string& path) {
  SCOPED_TRACE(path);
  const std::vector<std::string> lines = ReadLines(path);
  auto pieces = SplitByHost(lines);
  if (pieces.size() < 2) return 0;
  const Report whole = AnalyzeLines(path, lines);
  for (const auto& [host, piece] : pieces) {
    SCOPED_TRACE("piece " + host);
    const Report r = AnalyzeLines(path + "@" + host, piece);
    if (whole.summary.verdict.tcp_fallback && ShowsTcpNet(r)) {
      const Finding* f = Worst(r, kTcpFallback);
      EXPECT_TRUE(f != nullptr && f->severity != Severity::kInfo) << r.summary.headline;
      EXPECT_NE(r.summary.headline.rfind("OK", 0), 0u) << r.summary.headline;
      EXPECT_NE(nccl::NameOf(r.summary.verdict.nodes_evidence), "proven_single");
    }
    if (nccl::NameOf(whole.summary.verdict.nodes_evidence) == "proven_single") {
      EXPECT_EQ(Worst(r, kTcpFallback), nullptr) << r.summary.headline;
      const Finding* lo = Worst(r, kLoopbackMisuse);
      const Finding* whole_lo = Worst(whole, kLoopbackMisuse);
      if (lo != nullptr) {
        EXPECT_TRUE(whole_lo != nullptr && lo->severity <= whole_lo->severity) << lo->message;
      }
    }
    // A piece never proves more than the whole: several nodes in a piece are several in the job.
    if (nccl::NameOf(r.summary.verdict.nodes_evidence) == "proven_multi") {
      EXPECT_EQ(nccl::NameOf(whole.summary.verdict.nodes_evidence), "proven_multi");
    }
  }
  return pieces.size();
}

TEST(SplitByHostTest, CutsByRecordHostAndSharesTheRest) {
  auto pieces = SplitByHost({
      "NCCL version 2.19.3+cuda12.3",
      "#  Rank  1 Group  0 Pid  21 on worker-1 device  0 [0x00] Tesla V100",
      "worker-0:22:22 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
      "2025-03-04T05:06:07.1Z stdout F worker-1:21:21 [0] NCCL INFO Using network Socket",
      "(RayTrainWorker pid=7, ip=10.0.0.9) worker-2:7:7 [0] NCCL INFO Using network Socket",
  });
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces["worker-0"].size(), 2u);  // the banner and its own record
  ASSERT_EQ(pieces["worker-1"].size(), 3u);
  EXPECT_EQ(pieces["worker-1"][1].find("#  Rank  1"), 0u);
  EXPECT_EQ(pieces["worker-2"].size(), 2u);
}

TEST(SplitByHostTest, PiecesOfFixturesAgreeWithTheWhole) {
  size_t cut = 0;
  for (const auto& e : std::filesystem::directory_iterator(FixtureDir())) {
    if (e.path().extension() == ".log") cut += CheckPieces(e.path().string()) > 0 ? 1 : 0;
  }
  EXPECT_GE(cut, 5u);
}

TEST(SplitByHostTest, PiecesOfCorpusLogsAgreeWithTheWhole) {
  const std::string dir = SharedDir() + "/nccl-logs";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared NCCL corpus not found at " << dir;
  size_t cut = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".log") cut += CheckPieces(e.path().string()) > 0 ? 1 : 0;
  }
  EXPECT_GE(cut, 10u);
}

}  // namespace
}  // namespace efawatch::nccl
