// PodAnalysis fed by blocks of lines (as the tailer hands them over) must reach the same
// verdicts, counts and findings as when fed line by line, whatever wraps the lines.
#include "daemon/logs/pod_analysis.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "lib/common/findings_board.h"
#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::logs {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> FixtureLines(const std::string& name) {
  std::ifstream in(testing::SourceDir() + "/tests/fixtures/nccl/" + name);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string Cri(const std::string& text, char tag = 'F') {
  return std::string("2026-12-02T10:00:00.000000001Z stdout ") + tag + " " + text;
}

// Training chatter around the NCCL lines of a fixture, a record split by the runtime into CRI
// partial pieces of which only the last holds an NCCL token, and a line that looks like a
// partial piece but is not one.
std::vector<std::string> MixedCriLog(const std::string& fixture) {
  std::vector<std::string> out;
  int step = 0;
  for (const auto& l : FixtureLines(fixture)) {
    out.push_back(Cri("step " + std::to_string(step++) + " loss 0.1234"));
    out.push_back(Cri(l));
  }
  out.push_back(Cri("node-b:7:7 [1] ", 'P'));
  out.push_back(Cri("Using net", 'P'));
  out.push_back(Cri("work Socket NCCL"));
  out.push_back(Cri("epoch 3 P 0.5 done"));
  return out;
}

struct Fed {
  common::FakeClock clock;
  common::FindingsBoard board{clock};
  PodAnalysis pods{PodAnalysisOptions{}, clock, &board, nullptr};
};

LogSource Source() {
  LogSource s;
  s.path = "/var/log/pods/train_w-0_uid/main/0.log";
  s.format = Format::kCri;
  s.namespace_name = "train";
  s.pod = "w-0";
  s.uid = "uid";
  s.container = "main";
  return s;
}

void ExpectSame(const Fed& a, const Fed& b) {
  const auto va = a.pods.Verdicts();
  const auto vb = b.pods.Verdicts();
  ASSERT_EQ(va.size(), 1u);
  ASSERT_EQ(vb.size(), 1u);
  EXPECT_EQ(va[0].lines, vb[0].lines);
  EXPECT_EQ(va[0].nccl_lines, vb[0].nccl_lines);
  EXPECT_EQ(va[0].malformed_lines, vb[0].malformed_lines);
  EXPECT_EQ(va[0].nccl.tcp_fallback, vb[0].nccl.tcp_fallback);
  EXPECT_EQ(va[0].nccl.net_plugin_missing, vb[0].nccl.net_plugin_missing);
  EXPECT_EQ(va[0].nccl.network, vb[0].nccl.network);
  EXPECT_EQ(va[0].nccl.transport, vb[0].nccl.transport);
  EXPECT_EQ(va[0].nccl.processes, vb[0].nccl.processes);
  EXPECT_EQ(va[0].nccl.communicators, vb[0].nccl.communicators);
  EXPECT_EQ(va[0].nccl.warnings, vb[0].nccl.warnings);
  const auto fa = a.board.Snapshot();
  const auto fb = b.board.Snapshot();
  ASSERT_EQ(fa->size(), fb->size());
  for (size_t i = 0; i < fa->size(); ++i) {
    EXPECT_EQ((*fa)[i].kind, (*fb)[i].kind);
    EXPECT_EQ((*fa)[i].evidence.line, (*fb)[i].evidence.line) << (*fa)[i].kind;
    EXPECT_EQ((*fa)[i].evidence.text, (*fb)[i].evidence.text);
  }
}

TEST(PodAnalysisTest, BlocksGiveTheSameVerdictAsSingleLines) {
  for (const std::string fixture : {"socket-fallback-plugin-missing-2.19.log",
                                    "efa-ofi-healthy-2.21.log", "wrappers-mixed-efa-2.14.log"}) {
    SCOPED_TRACE(fixture);
    const auto lines = MixedCriLog(fixture);
    const LogSource src = Source();
    Fed by_line, by_block;
    for (size_t i = 0; i < lines.size(); ++i) by_line.pods.OnLine(src, i + 1, lines[i]);
    // Blocks of 1, 2, 3, ... lines.
    size_t i = 0;
    for (size_t n = 1; i < lines.size(); ++n) {
      std::string block;
      const size_t count = std::min(n, lines.size() - i);
      for (size_t k = 0; k < count; ++k) block += lines[i + k] + "\n";
      by_block.pods.OnLines(src, i + 1, count, block);
      i += count;
    }
    by_line.pods.OnPassComplete();
    by_block.pods.OnPassComplete();
    ExpectSame(by_line, by_block);
    const auto v = by_block.pods.Verdicts();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].lines, lines.size());
    EXPECT_GT(v[0].nccl_lines, 0u);
  }
}

TEST(PodAnalysisTest, LinesWithoutNcclOnlyMoveTheLineCount) {
  const LogSource src = Source();
  Fed f;
  const auto lines = MixedCriLog("socket-fallback-plugin-missing-2.19.log");
  std::string block;
  for (const auto& l : lines) block += l + "\n";
  f.pods.OnLines(src, 1, lines.size(), block);
  f.pods.OnPassComplete();
  const auto before = f.pods.Verdicts();
  ASSERT_EQ(before.size(), 1u);
  EXPECT_TRUE(before[0].nccl.tcp_fallback);
  const size_t findings_before = f.board.Snapshot()->size();
  ASSERT_GT(findings_before, 0u);
  const std::string chatter = Cri("step 9 loss 0.1") + "\n" + Cri("step 10 loss 0.1") + "\n";
  f.pods.OnLines(src, lines.size() + 1, 2, chatter);
  f.pods.OnPassComplete();
  const auto after = f.pods.Verdicts();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].lines, before[0].lines + 2);
  EXPECT_EQ(after[0].nccl_lines, before[0].nccl_lines);
  EXPECT_TRUE(after[0].nccl.tcp_fallback);
  EXPECT_EQ(f.board.Snapshot()->size(), findings_before);
}

TEST(PodAnalysisTest, GoneContainerComesBackWhenWrittenAgain) {
  const LogSource src = Source();
  Fed f;
  const auto lines = MixedCriLog("socket-fallback-plugin-missing-2.19.log");
  for (size_t i = 0; i < lines.size(); ++i) f.pods.OnLine(src, i + 1, lines[i]);
  f.pods.OnPassComplete();
  const size_t findings = f.board.Snapshot()->size();
  ASSERT_GT(findings, 0u);
  f.pods.OnSourceGone(src);
  f.pods.OnPassComplete();
  EXPECT_TRUE(f.pods.Verdicts()[0].gone);
  EXPECT_EQ(f.board.Snapshot()->size(), 0u) << "a gone container's findings are withdrawn";
  f.pods.OnLines(src, lines.size() + 1, 1, Cri("step 1") + "\n");
  f.pods.OnPassComplete();
  EXPECT_FALSE(f.pods.Verdicts()[0].gone);
  EXPECT_EQ(f.board.Snapshot()->size(), findings);
  f.clock.Advance(301s);
  f.pods.OnSourceGone(src);
  f.pods.OnPassComplete();
  f.clock.Advance(301s);
  f.pods.OnPassComplete();
  EXPECT_TRUE(f.pods.Verdicts().empty()) << "removed after the grace period";
}

}  // namespace
}  // namespace efawatch::logs
