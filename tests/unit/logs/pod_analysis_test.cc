// SPDX-License-Identifier: Apache-2.0
// PodAnalysis fed by blocks of lines (as the tailer hands them over) must reach the same
// verdicts, counts and findings as when fed line by line, whatever wraps the lines.
#include "daemon/logs/pod_analysis.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/logs/checkpoint_codec.h"
#include "daemon/logs/verdict_metrics.h"
#include "lib/common/findings_board.h"
#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"
#include "tests/unit/records/field_count.h"

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
  PodAnalysis pods{PodAnalysisOptions{}, clock, &board};
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

// The agent skips lines by the same scan as `efawatch analyze`, so it must reach the verdict
// the analyzer reaches on every line: including an echoed FI_ setting (no "NCCL" in it) and a
// record the runtime split at "NC|CL", whose last piece holds no needle.
TEST(PodAnalysisTest, AgentReachesTheVerdictOfTheAnalyzerOnEveryLine) {
  for (const std::string fixture :
       {"socket-fallback-plugin-missing-2.19.log", "efa-ofi-healthy-2.21.log"}) {
    SCOPED_TRACE(fixture);
    auto lines = MixedCriLog(fixture);
    lines.push_back(Cri("export FI_PROVIDER=tcp"));
    lines.push_back(Cri("node-c:9:9 [0] NC", 'P'));
    lines.push_back(Cri("CL INFO Using network Socket"));
    const LogSource src = Source();
    Fed f;
    std::string block;
    for (const auto& l : lines) block += l + "\n";
    f.pods.OnLines(src, 1, lines.size(), block);
    f.pods.OnPassComplete();
    nccl::AnalyzerOptions o;
    o.envelope = nccl::Envelope::kCri;
    o.group_by_source = true;
    nccl::Analyzer every_line(o);
    for (size_t i = 0; i < lines.size(); ++i) every_line.Feed(src.path.string(), i + 1, lines[i]);
    const nccl::Report r = every_line.Snapshot();
    bool saw_c = false;
    for (const auto& p : r.processes) saw_c = saw_c || p.host == "node-c";
    EXPECT_TRUE(saw_c);
    const auto v = f.pods.Verdicts();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_TRUE(v[0].nccl == r.summary.verdict) << v[0].nccl.transport << " " << v[0].nccl.network;
    EXPECT_EQ(v[0].nccl_lines, every_line.counters().nccl_lines);
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

// The tailer may free one file's LogSource and build another pod's in the same storage within
// a pass (a Tracked object on the stack for a file rotated while the agent was down, or a freed
// one reused by the allocator): lines must go to the pod the source names, not to the one whose
// source last lived at that address. (Lines moved between pods after every SIGKILL restart.)
TEST(PodAnalysisTest, ASourceBuiltWhereAnotherPodsWasGetsItsOwnLines) {
  Fed f;
  std::optional<LogSource> slot;
  const std::string chatter = Cri("step 1") + "\n" + Cri("step 2") + "\n";
  for (int pod = 0; pod < 3; ++pod) {
    slot.emplace(Source());
    slot->pod = "w-" + std::to_string(pod);
    slot->path = "/var/log/pods/train_w-" + std::to_string(pod) + "_uid/main/0.log";
    for (int k = 0; k <= pod; ++k) f.pods.OnLines(*slot, 1 + 2 * k, 2, chatter);
    slot.reset();
  }
  f.pods.OnPassComplete();
  std::map<std::string, uint64_t> lines;
  for (const auto& v : f.pods.Verdicts()) lines[v.source.pod] = v.lines;
  EXPECT_EQ(lines, (std::map<std::string, uint64_t>{{"w-0", 2}, {"w-1", 4}, {"w-2", 6}}));
}

TEST(PodAnalysisTest, FindingsNameThePodWhoseLogShowedThem) {
  Fed f;
  LogSource a = Source();
  LogSource b = Source();
  b.namespace_name = "team-b";
  b.pod = "b-0";
  b.uid = "uid-b";
  b.path = "/var/log/pods/team-b_b-0_uid-b/main/0.log";
  const auto lines = FixtureLines("pytorch-watchdog-abort-2.18.log");
  for (size_t i = 0; i < lines.size(); ++i) f.pods.OnLine(a, i + 1, Cri(lines[i]));
  const auto healthy = FixtureLines("efa-ofi-healthy-2.21.log");
  for (size_t i = 0; i < healthy.size(); ++i) f.pods.OnLine(b, i + 1, Cri(healthy[i]));
  f.pods.OnPassComplete();
  const auto findings = f.board.Snapshot();
  bool timeout = false;
  for (const auto& x : *findings) {
    EXPECT_EQ(x.namespace_name, "train") << x.kind << ": only the failing pod has findings";
    EXPECT_EQ(x.pod, "w-0") << x.kind;
    timeout = timeout || x.kind == "collective_timeout";
  }
  EXPECT_TRUE(timeout) << "the watchdog fixture shows a collective timeout";
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

// Records the samples of one collection, by metric name.
class RecordingSink final : public common::MetricSink {
 public:
  void Add(metrics::Metric metric, const common::Labels& labels, double value) override {
    samples[std::string(metric.name())].push_back({labels, value});
  }
  void AddHistogram(metrics::Metric, const common::Labels&,
                    const common::HistogramSample&) override {}
  std::map<std::string, std::vector<std::pair<common::Labels, double>>> samples;
};

RecordingSink Scrape(PodAnalysis& pods) {
  RecordingSink sink;
  EXPECT_TRUE(
      logs::VerdictCollector(pods).Collect(std::chrono::steady_clock::now() + 1s, sink).ok());
  return sink;
}

std::string Label(const common::Labels& labels, const std::string& name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return "<absent>";
}

// `count` communicators of one process of host `host`, commIds numbered from `first`, each with
// a NET channel line when `net` is set; after a "Using network" line.
std::string CommBlock(const std::string& host, int pid, int first, int count, bool net,
                      const std::string& network = "Socket") {
  const std::string who = host + ":" + std::to_string(pid) + ":" + std::to_string(pid + 1);
  std::string block = Cri(who + " [0] NCCL INFO Using network " + network) + "\n";
  char line[512];
  for (int i = first; i < first + count; ++i) {
    std::snprintf(line, sizeof line,
                  "%s [0] NCCL INFO comm 0x55ee%08x rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId "
                  "1000 commId 0x%016x - Init START",
                  who.c_str(), i, i);
    block += Cri(line) + "\n";
    if (net) {
      block += Cri(who + " [0] NCCL INFO Channel 00/0 : 15[0] -> 0[0] [receive] via NET/" +
                   network + "/0") +
               "\n";
    }
  }
  return block;
}

uint64_t Lines(const std::string& block) {
  return static_cast<uint64_t>(std::count(block.begin(), block.end(), '\n'));
}

// A container's stack (efawatch_nccl_stack_info): what its run's lines showed; none for a
// container whose lines show none of it.
TEST(PodAnalysisTest, StackSeriesNamesWhatTheLogShowed) {
  Fed f;
  const LogSource src = Source();
  uint64_t n = 0;
  for (const char* l : {"h:1:1 [0] NCCL INFO NCCL version 2.27.5+cuda12.9",
                        "h:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0",
                        "h:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa",
                        "h:1:1 [0] NCCL INFO NCCL_PROTO set by environment to simple",
                        "h:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8388608"}) {
    f.pods.OnLine(src, ++n, Cri(l));
  }
  f.pods.OnPassComplete();
  RecordingSink s = Scrape(f.pods);
  ASSERT_EQ(s.samples["efawatch_nccl_stack_info"].size(), 1u);
  const common::Labels& l = s.samples["efawatch_nccl_stack_info"][0].first;
  EXPECT_EQ(Label(l, "pod"), "w-0");
  EXPECT_EQ(Label(l, "nccl_version"), "2.27.5");
  EXPECT_EQ(Label(l, "net_plugin"), "aws-ofi-nccl");
  EXPECT_EQ(Label(l, "net_plugin_version"), "1.14.0");
  EXPECT_EQ(Label(l, "ofi_provider"), "efa");
  EXPECT_EQ(Label(l, "nccl_proto"), "simple");
  EXPECT_EQ(Label(l, "nccl_algo"), "");
  EXPECT_EQ(Label(l, "fi_efa_use_device_rdma"), "");
  EXPECT_EQ(Label(l, "settings_fingerprint").size(), 8u);

  // An agent restarted after the start lines keeps the stack from its checkpoint, and reading
  // the run's later lines does not lose it.
  Fed r;
  r.pods.Restore(f.pods.Checkpoint());
  r.pods.OnLine(src, ++n, Cri("h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000"));
  r.pods.OnPassComplete();
  ASSERT_EQ(r.pods.Verdicts().size(), 1u);
  EXPECT_EQ(r.pods.Verdicts()[0].stack, f.pods.Verdicts()[0].stack);
  EXPECT_EQ(Scrape(r.pods).samples["efawatch_nccl_stack_info"].size(), 1u);

  Fed g;
  g.pods.OnLine(src, 1, Cri("h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000"));
  g.pods.OnPassComplete();
  s = Scrape(g.pods);
  EXPECT_FALSE(s.samples["efawatch_nccl_info"].empty());
  EXPECT_TRUE(s.samples["efawatch_nccl_stack_info"].empty());
}

TEST(PodAnalysisTest, CommunicatorFloodStaysUnderThePodCap) {
  const LogSource src = Source();
  Fed f;
  // 10,000 communicators of one process, fed in blocks as the tailer would.
  uint64_t line = 1;
  for (int first = 0; first < 10000; first += 500) {
    const std::string block = CommBlock("gpu-a", 300, first, 500, /*net=*/false);
    f.pods.OnLines(src, line, Lines(block), block);
    line += Lines(block);
    f.pods.OnPassComplete();
  }
  const auto v = f.pods.Verdicts();
  ASSERT_EQ(v.size(), 1u);
  const size_t cap = PodAnalysisOptions{}.max_communicators_per_pod;
  EXPECT_EQ(v[0].communicators.size(), cap);
  // The analyzer holds at most max_comms_per_process of them: memory stays bounded.
  EXPECT_LE(v[0].nccl.communicators, nccl::AnalyzerOptions{}.max_comms_per_process);
  // The newest ones are kept.
  EXPECT_EQ(v[0].communicators.back().id, "0x000000000000270f");
  const auto sink = Scrape(f.pods);
  ASSERT_EQ(sink.samples.at("efawatch_nccl_communicator_info").size(), cap);
  const auto& s = sink.samples.at("efawatch_nccl_communicator_info")[0];
  EXPECT_EQ(Label(s.first, "pod"), "w-0");
  EXPECT_EQ(Label(s.first, "nranks"), "16");
  EXPECT_EQ(Label(s.first, "nnodes"), "unknown");
  EXPECT_EQ(Label(s.first, "transport"), "NET/Socket");
  EXPECT_EQ(Label(s.first, "provider"), "none");
  const auto& dropped = sink.samples.at("efawatch_nccl_communicators_dropped_total");
  ASSERT_EQ(dropped.size(), 1u);
  EXPECT_EQ(dropped[0].second, 10000.0 - static_cast<double>(cap));
}

TEST(PodAnalysisTest, PodContainersShareTheCapAndNetCommunicatorsComeFirst) {
  PodAnalysisOptions o;
  o.max_communicators_per_pod = 8;
  common::FakeClock clock;
  common::FindingsBoard board{clock};
  PodAnalysis pods{o, clock, &board};
  LogSource a = Source();
  LogSource b = Source();
  b.container = "sidecar";
  b.path = "/var/log/pods/train_w-0_uid/sidecar/0.log";
  // Container a: 6 communicators over NET after 10 without channel lines; b: 10 more; 26 in
  // all, 8 exported.
  const std::string plain = CommBlock("gpu-a", 300, 0, 10, false);
  const std::string net = CommBlock("gpu-a", 300, 100, 6, true);
  pods.OnLines(a, 1, Lines(plain), plain);
  pods.OnLines(a, 1 + Lines(plain), Lines(net), net);
  const std::string other = CommBlock("gpu-a", 500, 200, 10, false);
  pods.OnLines(b, 1, Lines(other), other);
  pods.OnPassComplete();
  size_t total = 0, over_net = 0;
  for (const auto& v : pods.Verdicts()) {
    total += v.communicators.size();
    for (const auto& c : v.communicators) over_net += c.transport == "NET/Socket" ? 1 : 0;
  }
  EXPECT_EQ(total, 8u);
  const auto sink = Scrape(pods);
  EXPECT_EQ(sink.samples.at("efawatch_nccl_communicator_info").size(), 8u);
  EXPECT_EQ(sink.samples.at("efawatch_nccl_communicators_dropped_total")[0].second, 26.0 - 8.0);
  // Container a's NET communicators are all among the 8 (and a comes first in the pod).
  const auto v = pods.Verdicts();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].source.container, "main");
  EXPECT_EQ(v[0].communicators.size(), 8u);
  EXPECT_EQ(v[1].communicators.size(), 0u);
  EXPECT_EQ(over_net, 8u);
  // The pod goes: its series go with it; the count of dropped ones stays.
  pods.OnSourceGone(a);
  pods.OnSourceGone(b);
  pods.OnPassComplete();
  clock.Advance(301s);
  pods.OnPassComplete();
  const auto after = Scrape(pods);
  EXPECT_FALSE(after.samples.contains("efawatch_nccl_communicator_info"));
  EXPECT_EQ(after.samples.at("efawatch_nccl_communicators_dropped_total")[0].second, 18.0);
}

TEST(PodAnalysisTest, CommunicatorSeriesJoinRanksAndSkipPointersAndAborts) {
  const LogSource src = Source();
  Fed f;
  std::string block;
  // Two ranks of one communicator (one series), an aborted one, one without a commId (NCCL
  // 2.15: only the comm pointer), one over aws-ofi-nccl on efa.
  for (const char* l : {
           "gpu-a:300:301 [0] NCCL INFO Using network Socket",
           "gpu-a:302:303 [1] NCCL INFO Using network Socket",
           "gpu-a:300:301 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 10 "
           "commId 0xaa - Init COMPLETE",
           "gpu-a:302:303 [1] NCCL INFO comm 0x2 rank 1 nranks 4 cudaDev 1 nvmlDev 1 busId 20 "
           "commId 0xaa - Init COMPLETE",
           "gpu-a:302:303 [1] NCCL INFO Channel 00/0 : 3[0] -> 1[1] [receive] via NET/Socket/0",
           "gpu-a:300:301 [0] NCCL INFO comm 0x3 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 10 "
           "commId 0xbb - Init COMPLETE",
           "gpu-a:300:301 [0] NCCL INFO comm 0x3 rank 0 nranks 4 cudaDev 0 busId 10 - Abort "
           "COMPLETE",
           "gpu-a:300:301 [0] NCCL INFO comm 0x4 rank 0 nranks 4 cudaDev 0 busId 10 - Init "
           "COMPLETE",
           "gpu-a:304:305 [2] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 "
           "nics)",
           "gpu-a:304:305 [2] NCCL INFO Using network AWS Libfabric",
           "gpu-a:304:305 [2] NCCL INFO comm 0x5 rank 2 nranks 4 cudaDev 2 nvmlDev 2 busId 30 "
           "commId 0xcc - Init COMPLETE",
       }) {
    block += Cri(l) + "\n";
  }
  f.pods.OnLines(src, 1, Lines(block), block);
  f.pods.OnPassComplete();
  const auto v = f.pods.Verdicts();
  ASSERT_EQ(v.size(), 1u);
  ASSERT_EQ(v[0].communicators.size(), 2u);
  EXPECT_EQ(v[0].communicators[0].id, "0xaa");
  EXPECT_EQ(v[0].communicators[0].nranks, 4);
  EXPECT_EQ(v[0].communicators[0].transport, "NET/Socket");
  EXPECT_EQ(v[0].communicators[0].provider, "none");
  EXPECT_EQ(v[0].communicators[1].id, "0xcc");
  EXPECT_EQ(v[0].communicators[1].transport, "NET/OFI");
  EXPECT_EQ(v[0].communicators[1].provider, "efa");
  // The checkpoint keeps them: a restarted agent exports them again before reading new lines.
  const std::string saved = f.pods.Checkpoint();
  Fed g;
  g.pods.Restore(saved);
  g.pods.OnPassComplete();
  const auto r = g.pods.Verdicts();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].communicators, v[0].communicators);
  EXPECT_EQ(CommunicatorsFromJson(CommunicatorsToJson(v[0].communicators)), v[0].communicators);
  // Its edges: WriteVerdictMetrics (a label each but id) and the checkpoint codec.
  EXPECT_EQ(testing::FieldCount<CommunicatorSeries>(), 5u)
      << "a field added to CommunicatorSeries must reach the metric labels and the checkpoint";
}

}  // namespace
}  // namespace efawatch::logs
