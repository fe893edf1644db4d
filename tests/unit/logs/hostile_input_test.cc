// SPDX-License-Identifier: Apache-2.0
// What a tenant's pod can print must not knock the agent over: invalid UTF-8 reaches no edge
// (checkpoint JSON, label values, findings), a checkpoint of the wrong shape is refused whole,
// findings restored for a pod deleted while the agent was down expire, and label values drawn
// from log text stay within small vocabularies.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "daemon/logs/pod_analysis.h"
#include "daemon/logs/verdict_metrics.h"
#include "lib/common/findings_board.h"
#include "lib/common/utf8.h"
#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::logs {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::vector<std::string> FixtureLines(const std::string& name) {
  std::ifstream in(testing::SourceDir() + "/tests/fixtures/nccl/" + name);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string Cri(const std::string& text) {
  return "2026-12-02T10:00:00.000000001Z stdout F " + text;
}

struct Fed {
  common::FakeClock clock;
  common::FindingsBoard board{clock};
  PodAnalysis pods{PodAnalysisOptions{}, clock, &board};
};

// A source whose container directory exists (restores check it).
LogSource SourceIn(const fs::path& root, const std::string& pod = "w-0") {
  LogSource s;
  s.path = root / ("train_" + pod + "_uid") / "main" / "0.log";
  fs::create_directories(s.path.parent_path());
  std::ofstream(s.path).put('\n');
  s.format = Format::kCri;
  s.namespace_name = "train";
  s.pod = pod;
  s.uid = "uid";
  s.container = "main";
  return s;
}

class RecordingSink final : public common::MetricSink {
 public:
  void Add(metrics::Metric metric, const common::Labels& labels, double value) override {
    samples.push_back({std::string(metric.name()), labels, value});
  }
  void AddHistogram(metrics::Metric, const common::Labels&,
                    const common::HistogramSample&) override {}
  struct Sample {
    std::string name;
    common::Labels labels;
    double value;
  };
  std::vector<Sample> samples;
};

RecordingSink Scrape(PodAnalysis& pods) {
  RecordingSink sink;
  EXPECT_TRUE(
      logs::VerdictCollector(pods).Collect(std::chrono::steady_clock::now() + 1s, sink).ok());
  return sink;
}

std::string Label(const RecordingSink& s, const std::string& metric, const std::string& name) {
  for (const auto& sample : s.samples) {
    if (sample.name != metric) continue;
    for (const auto& [k, v] : sample.labels) {
      if (k == name) return v;
    }
  }
  return "<absent>";
}

void ExpectAllValid(const std::vector<common::Finding>& findings) {
  for (const auto& f : findings) {
    EXPECT_TRUE(common::IsValidUtf8(f.subject));
    EXPECT_TRUE(common::IsValidUtf8(f.message)) << f.message;
    EXPECT_TRUE(common::IsValidUtf8(f.evidence.text)) << f.evidence.text;
  }
}

TEST(Utf8Test, ValidTextPassesAndInvalidBytesBecomeReplacementCharacters) {
  EXPECT_TRUE(common::IsValidUtf8("plain ascii"));
  EXPECT_TRUE(common::IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_FALSE(common::IsValidUtf8("bad \xff\xfe byte"));
  EXPECT_FALSE(common::IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(common::IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(common::IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(common::IsValidUtf8("cut \xE2\x82"));
  EXPECT_EQ(common::ToValidUtf8("bad \xff\xfe byte"), "bad \xEF\xBF\xBD\xEF\xBF\xBD byte");
  std::string s = "ok";
  EXPECT_FALSE(common::MakeValidUtf8(&s));
  s = "x\x80y";
  EXPECT_TRUE(common::MakeValidUtf8(&s));
  EXPECT_EQ(s, "x\xEF\xBF\xBDy");
  // A cut never ends inside a character.
  EXPECT_EQ(common::Utf8Prefix("ab\xE2\x82\xAC", 4), "ab");
  EXPECT_EQ(common::Utf8Prefix("ab\xE2\x82\xAC", 5), "ab\xE2\x82\xAC");
  EXPECT_EQ(common::Utf8Prefix("abc", 2), "ab");
}

TEST(HostileInputTest, InvalidUtf8LineReachesNoEdgeAsInvalidText) {
  testing::TempDir dir;
  const LogSource src = SourceIn(dir.path());
  Fed f;
  std::vector<std::string> lines;
  for (const auto& l : FixtureLines("socket-fallback-plugin-missing-2.19.log")) lines.push_back(l);
  lines.push_back("host:1:1 [0] misc/x.cc:1 NCCL WARN bad \xff\xfe byte");
  lines.push_back("host:1:1 [0] NCCL INFO Using network Sock\xff\xfe");
  lines.push_back("host:1:1 [0] NCCL INFO NET/OFI Selected provider is ef\xc3");
  // Evidence is cut at 512 bytes: put a 3-byte character across the cut.
  std::string euros;
  for (int i = 0; i < 8; ++i) euros += "\xE2\x82\xAC";
  lines.push_back("host:1:1 [0] misc/y.cc:2 NCCL WARN " + std::string(476, 'a') + euros);
  for (size_t i = 0; i < lines.size(); ++i) f.pods.OnLine(src, i + 1, Cri(lines[i]));
  f.pods.OnPassComplete();

  ExpectAllValid(*f.board.Snapshot());
  for (const auto& v : f.pods.Verdicts()) {
    EXPECT_TRUE(common::IsValidUtf8(v.nccl.network)) << v.nccl.network;
    EXPECT_TRUE(common::IsValidUtf8(v.nccl.ofi_provider)) << v.nccl.ofi_provider;
  }
  for (const auto& s : Scrape(f.pods).samples) {
    for (const auto& [k, v] : s.labels) EXPECT_TRUE(common::IsValidUtf8(v)) << s.name << " " << k;
  }
  // The checkpoint is written on the tailer's thread: an exception there ended the agent.
  std::string saved;
  ASSERT_NO_THROW(saved = f.pods.Checkpoint());
  EXPECT_TRUE(common::IsValidUtf8(saved));
  EXPECT_TRUE(f.pods.CheckpointValid(saved));
  Fed g;
  g.pods.Restore(saved);
  g.pods.OnPassComplete();
  ASSERT_EQ(g.pods.Verdicts().size(), 1u);
  EXPECT_EQ(g.board.Snapshot()->size(), f.board.Snapshot()->size());
}

// After an agent restart the lines before it are not read again: facts the run printed once
// (the version banner, the OFI provider) must survive later lines, whether those are plain
// chatter or a new communicator of their own. (The crash soak saw ofi_provider efa turn into
// "none" at the next line, and nccl_version turn empty at the next communicator.)
TEST(HostileInputTest, FactsPrintedOnceSurviveARestartAndTheLinesAfterIt) {
  testing::TempDir dir;
  const LogSource src = SourceIn(dir.path());
  const auto efa = FixtureLines("efa-ofi-healthy-2.21.log");
  Fed f;
  for (size_t i = 0; i < efa.size(); ++i) f.pods.OnLine(src, i + 1, Cri(efa[i]));
  f.pods.OnPassComplete();
  ASSERT_EQ(f.pods.Verdicts().size(), 1u);
  const nccl::Verdict before = f.pods.Verdicts()[0].nccl;
  ASSERT_EQ(before.ofi_provider, "efa");
  ASSERT_FALSE(before.nccl_version.empty());
  const std::string saved = f.pods.Checkpoint();

  Fed g;
  g.pods.Restore(saved);
  uint64_t line = efa.size();
  g.pods.OnLine(src, ++line, Cri("step 1 loss 0.25"));
  g.pods.OnPassComplete();
  ASSERT_EQ(g.pods.Verdicts().size(), 1u);
  EXPECT_EQ(g.pods.Verdicts()[0].nccl.ofi_provider, "efa") << "after a plain line";
  EXPECT_EQ(g.pods.Verdicts()[0].nccl.nccl_version, before.nccl_version);

  for (const char* l :
       {"p5-node-a:4101:4290 [0] NCCL INFO ncclCommInitRank comm 0x55d0c0a1b9c0 rank 0 nranks 16 "
        "cudaDev 0 nvmlDev 0 busId 53000 commId 0x1f2e3d4c5b6a7999 - Init START",
        "p5-node-a:4101:4290 [0] NCCL INFO Channel 01/0 : 0[0] -> 8[0] [send] via "
        "NET/Libfabric/0/GDRDMA"}) {
    g.pods.OnLine(src, ++line, Cri(l));
  }
  g.pods.OnPassComplete();
  const nccl::Verdict after = g.pods.Verdicts()[0].nccl;
  EXPECT_EQ(after.nccl_version, before.nccl_version) << "after a new communicator";
  EXPECT_EQ(after.ofi_provider, "efa");
  EXPECT_EQ(after.network, before.network);
  EXPECT_FALSE(after.tcp_fallback);
}

TEST(HostileInputTest, SinkStateOfTheWrongShapeIsRefusedAndRestoresNothing) {
  Fed f;
  for (const char* bad : {"[1,\"x\",null]", "{\"files\":[1]}", "[{\"lines\":\"many\"}]",
                          "[{\"key\":\"k\",\"findings\":[1]}]", "[{\"findings\":\"x\"}]",
                          "[{\"key\":\"k\",\"findings\":[{\"severity\":\"high\"}]}]", "{",
                          "[{\"communicator_series\":{}}]"}) {
    EXPECT_FALSE(f.pods.CheckpointValid(bad)) << bad;
    ASSERT_NO_THROW(f.pods.Restore(bad)) << bad;
  }
  f.pods.OnPassComplete();
  EXPECT_TRUE(f.pods.Verdicts().empty());
  EXPECT_TRUE(f.pods.CheckpointValid(""));
  EXPECT_TRUE(f.pods.CheckpointValid("[]"));
}

TEST(HostileInputTest, RestoredFindingsOfAPodDeletedWhileDownExpire) {
  testing::TempDir dir;
  const LogSource kept = SourceIn(dir.path(), "kept");
  const LogSource deleted = SourceIn(dir.path(), "deleted");
  Fed f;
  const auto lines = FixtureLines("socket-fallback-plugin-missing-2.19.log");
  for (size_t i = 0; i < lines.size(); ++i) {
    f.pods.OnLine(kept, i + 1, Cri(lines[i]));
    f.pods.OnLine(deleted, i + 1, Cri(lines[i]));
  }
  f.pods.OnPassComplete();
  const size_t per_pod = f.board.Snapshot()->size() / 2;
  ASSERT_GT(per_pod, 0u);
  const std::string saved = f.pods.Checkpoint();

  // The agent is down; the pod is deleted, its log directory with it.
  fs::remove_all(deleted.path.parent_path().parent_path());
  Fed g;
  g.pods.Restore(saved);
  g.pods.OnPassComplete();
  EXPECT_EQ(g.board.Snapshot()->size(), per_pod) << "only the live pod's findings stand";
  for (const auto& finding : *g.board.Snapshot()) {
    EXPECT_EQ(finding.subject.find("deleted"), std::string::npos) << finding.subject;
  }
  g.clock.Advance(301s);
  g.pods.OnPassComplete();
  const auto v = g.pods.Verdicts();
  ASSERT_EQ(v.size(), 1u) << "the deleted pod's state expires after the grace period";
  EXPECT_EQ(v[0].source.pod, "kept");
  EXPECT_EQ(g.board.Snapshot()->size(), per_pod);
}

TEST(HostileInputTest, LabelValuesFromLogsStayInSmallVocabularies) {
  testing::TempDir dir;
  const LogSource src = SourceIn(dir.path());
  Fed f;
  std::set<std::string> networks, providers, versions, transports;
  // A pod that prints a new net, provider and version every few lines: each would be a new
  // series for every Prometheus that scrapes the node.
  uint64_t n = 0;
  for (int i = 0; i < 50; ++i) {
    const std::string who = "host:" + std::to_string(100 + i) + ":1 [0] NCCL INFO ";
    for (const std::string& l :
         {who + "NCCL version 2.21." + std::to_string(i) + "-junk" + std::to_string(i),
          who + "Using network Net" + std::to_string(i),
          who + "NET/OFI Selected provider is prov" + std::to_string(i) + ", fabric is x",
          who + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Fancy" + std::to_string(i) + "/0",
          who + "comm 0x55ee rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0xzz" +
              std::to_string(i) + " - Init START"}) {
      f.pods.OnLine(src, ++n, Cri(l));
    }
    f.pods.OnPassComplete();
    const RecordingSink s = Scrape(f.pods);
    networks.insert(Label(s, "efawatch_nccl_info", "network"));
    providers.insert(Label(s, "efawatch_nccl_info", "ofi_provider"));
    versions.insert(Label(s, "efawatch_nccl_info", "nccl_version"));
    transports.insert(Label(s, "efawatch_nccl_info", "transport"));
    for (const auto& sample : s.samples) {
      EXPECT_NE(sample.name, "efawatch_nccl_communicator_info") << "commId 0xzz.. is no id";
    }
  }
  EXPECT_LE(networks.size(), 2u) << *networks.rbegin();
  EXPECT_LE(providers.size(), 2u) << *providers.rbegin();
  EXPECT_LE(versions.size(), 2u) << *versions.rbegin();
  EXPECT_LE(transports.size(), 3u) << *transports.rbegin();
  EXPECT_TRUE(networks.contains("other"));
}

// The stack's labels (efawatch_nccl_stack_info) come from the same kind of lines: a plugin
// version, a setting's value, each new on every line, stay in their vocabularies.
TEST(HostileInputTest, StackLabelValuesStayInSmallVocabularies) {
  testing::TempDir dir;
  const LogSource src = SourceIn(dir.path());
  Fed f;
  std::set<std::string> plugins, versions, algos;
  uint64_t n = 0;
  for (int i = 0; i < 50; ++i) {
    const std::string who = "host:" + std::to_string(100 + i) + ":1 [0] NCCL INFO ";
    for (const std::string& l :
         {who + "NET/OFI Initializing aws-ofi-nccl X" + std::to_string(i) + "\x01!",
          who + "NET/Plugin: Loaded net plugin Fancy" + std::to_string(i) + " (v8)",
          who + "NCCL_ALGO set by environment to {" + std::string(40, 'a') + std::to_string(i)}) {
      f.pods.OnLine(src, ++n, Cri(l));
    }
    f.pods.OnPassComplete();
    const RecordingSink s = Scrape(f.pods);
    plugins.insert(Label(s, "efawatch_nccl_stack_info", "net_plugin"));
    versions.insert(Label(s, "efawatch_nccl_stack_info", "net_plugin_version"));
    algos.insert(Label(s, "efawatch_nccl_stack_info", "nccl_algo"));
  }
  EXPECT_LE(plugins.size(), 2u) << *plugins.rbegin();
  EXPECT_LE(versions.size(), 2u) << *versions.rbegin();
  EXPECT_LE(algos.size(), 2u) << *algos.rbegin();
  EXPECT_TRUE(algos.contains("other"));
}

}  // namespace
}  // namespace efawatch::logs
