// SPDX-License-Identifier: Apache-2.0
// Runs every real log of the shared corpus (../shared/nccl-logs, never copied into the
// repository) and checks the labels of MANIFEST.tsv, plain, re-wrapped as CRI and docker
// json-file records, and inside the envelopes of testing::AllWraps(). Skips when the corpus is
// absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tests/unit/nccl/nccl_test_util.h"

namespace efawatch::nccl {
namespace {

using testing::AnalyzeFile;
using testing::ReadTsv;
using testing::SharedDir;
using testing::Wrap;

// Labels this analyzer disagrees with, each because nothing in the excerpt supports the label
// (the MANIFEST notes describe the issue, not always the excerpt). The analyzer is still checked
// on these rows: against the value written here. Remove an entry when the manifest is fixed or
// when a rule that holds for every log supports the label.
struct Dispute {
  const char* file_prefix;
  const char* column;
  const char* ours;
  const char* why;
};
// Most of these rows are labelled single node, or with the transport of the cluster,
// where the excerpt proves neither one node nor several under the node-count rules
// (docs/nccl-findings.md, "Node count"): one host name is weak evidence, and fewer ranks in a
// log than nranks proves nothing (a node may run one pod per GPU). Where such an excerpt shows
// a TCP net selected, the analyzer reports a suspected fallback.
constexpr Dispute kDisputes[] = {
    {"014-", "tcp_fallback", "yes",
     "'Using network Socket' (line 9) with nothing that proves one node: NCCL 2.3.7 prints no "
     "nNodes; the only communicator line is 'rank 0 nranks 4' (line 11) of process 32632, and "
     "the second process (32633, lines 12-18) prints no rank; no channel line; both use the host "
     "name ml3, which is weak evidence. Two of four ranks seen in a log is not proof of one node, "
     "so the Socket net is a suspected fallback"},
    {"014-", "inter_node_transport", "unknown",
     "same excerpt: no nNodes, no channel line, ranks 1-3 of 'nranks 4' (line 11) never print a "
     "communicator line; the node count is unknown"},
    {"076-", "tcp_fallback", "yes",
     "'Using network Socket' (lines 1, 4, 7) and 'NET/Socket : Using [0]enp1s0f0' (lines 3, 6) "
     "from four processes (pids 5019-5022, devices 0-3) on host name axon; the excerpt has no "
     "communicator line at all (no nranks, no nNodes), no channel line and no bootstrap line. "
     "Four GPUs under one host name do not show that no other node takes part, so the Socket "
     "net is a suspected fallback"},
    {"076-", "inter_node_transport", "unknown",
     "same excerpt: no nranks, nNodes or channel line proves one node"},
    {"082-", "tcp_fallback", "yes",
     "'NET/Socket : Using [0]eno1:192.168.0.100<0>' (line 6) after 'Failed to open "
     "libibverbs.so[.1]' (line 5): the Socket net; one process (7436) drives GPUs 0 and 1 "
     "(lines 9, 10), but no communicator line gives nranks or nNodes and no channel line "
     "follows, so the excerpt does not show that these two GPUs are the whole job"},
    {"082-", "inter_node_transport", "unknown",
     "same excerpt: no nranks, nNodes or channel line proves one node"},
    {"038-", "inter_node_transport", "unknown",
     "one NCCL process (gpu-dev006:25486, lines 7-10) with 'Using network IB' (line 10); the "
     "'distributed init (rank 0..3)' lines 3-6 are the training script's own prints and give no "
     "rank count; no communicator, nNodes or channel line, so one host name is all there is"},
    {"044-", "inter_node_transport", "unknown",
     "six lines of NCCL's tuning table from one process (pid 1, lines 1-6): no communicator, "
     "network, bootstrap or channel line, nothing about nodes"},
    {"029-", "inter_node_transport", "unknown",
     "'rank 0 nranks 8' (line 12) and three processes on learnfair0536 (46393, 46394, 46395, "
     "devices 0-2); no channel, nNodes or connect line. Ranks missing from a log are not proof "
     "of another node (a DGX-1 holds all 8); the two DGX-1 machines are the issue's, not the "
     "excerpt's"},
    {"071-", "inter_node_transport", "unknown",
     "one process (hostname1:25668) with 'rank 0 nranks 16' (line 4) and 'Using network IB' "
     "(line 3); no channel, nNodes or localRanks line. Fifteen ranks missing from the log are "
     "not proof of another node"},
};

const Dispute* FindDispute(const std::string& file, const std::string& column) {
  for (const Dispute& d : kDisputes) {
    if (file.rfind(d.file_prefix, 0) == 0 && column == d.column) return &d;
  }
  return nullptr;
}

std::string FamilyLabel(const std::string& label) {
  if (label.rfind("other", 0) == 0) return "other";
  return label;
}

bool FileContains(const std::string& path, const std::string& needle) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str().find(needle) != std::string::npos;
}

class NcclCorpusTest : public ::testing::TestWithParam<Wrap> {};

TEST_P(NcclCorpusTest, MatchesManifestLabels) {
  const std::string dir = SharedDir() + "/nccl-logs";
  if (!std::filesystem::exists(dir + "/MANIFEST.tsv")) {
    GTEST_SKIP() << "shared NCCL corpus not found at " << dir
                 << " (set EFAWATCH_SHARED_DIR to the folder holding nccl-logs/)";
  }
  auto rows = ReadTsv(dir + "/MANIFEST.tsv");
  ASSERT_GT(rows.size(), 1u);
  std::map<std::string, size_t> col;
  for (size_t c = 0; c < rows[0].size(); ++c) col[rows[0][c]] = c;
  for (size_t i = 1; i < rows.size(); ++i) {
    auto cell = [&](const std::string& name) {
      return col.count(name) && col[name] < rows[i].size() ? rows[i][col[name]] : std::string();
    };
    const std::string file = cell("file");
    const std::string path = dir + "/" + file;
    SCOPED_TRACE(file);
    Counters counters;
    Report r = AnalyzeFile(path, GetParam(), &counters);
    const Summary& s = r.summary;
    auto label = [&](const std::string& column) {
      const Dispute* d = FindDispute(file, column);
      return d != nullptr ? std::string(d->ours) : cell(column);
    };
    auto yes_no = [&](const std::string& column, bool got) {
      std::string want = label(column);
      if (want == "yes" || want == "no") {
        EXPECT_EQ(got, want == "yes") << column;
      }
    };
    yes_no("tcp_fallback", s.verdict.tcp_fallback);
    yes_no("loopback_misuse", s.verdict.loopback_misuse);
    if (std::string fam = FamilyLabel(label("net_plugin")); fam != "unknown") {
      EXPECT_EQ(NameOf(s.verdict.family), fam) << "net_plugin";
    }
    if (std::string p = label("ofi_provider"); p != "unknown") {
      EXPECT_EQ(s.verdict.ofi_provider, p) << "ofi_provider";
    }
    if (std::string t = label("inter_node_transport"); t != "unknown") {
      EXPECT_EQ(s.verdict.transport, t) << "inter_node_transport";
    }
    if (std::string g = label("gdr"); g == "yes" || g == "no") {
      EXPECT_EQ(NameOf(s.verdict.gdr), g == "yes" ? "on" : "off") << "gdr";
    } else {
      EXPECT_EQ(NameOf(s.verdict.gdr), "unknown") << "gdr";
    }
    // Some versions are labelled from the issue text; the excerpt must then hold no banner.
    std::string version = label("nccl_version");
    version = version.substr(0, version.find(' '));
    if (version != "unknown") {
      if (s.verdict.nccl_version.empty()) {
        EXPECT_FALSE(FileContains(path, "NCCL version")) << "banner present but not found";
      } else {
        EXPECT_EQ(s.verdict.nccl_version, version);
      }
    }
    EXPECT_EQ(std::to_string(counters.warn_records), cell("warn_count")) << "warn_count";
    EXPECT_EQ(counters.malformed_lines, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Wraps, NcclCorpusTest, ::testing::ValuesIn([] {
                           std::vector<Wrap> wraps;
                           for (const auto& w : testing::AllWraps()) wraps.push_back(w.first);
                           return wraps;
                         }()),
                         [](const ::testing::TestParamInfo<Wrap>& param_info) {
                           for (const auto& [wrap, name] : testing::AllWraps()) {
                             if (wrap == param_info.param) return std::string(name);
                           }
                           return std::string("Unknown");
                         });

}  // namespace
}  // namespace efawatch::nccl
