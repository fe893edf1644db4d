// SPDX-License-Identifier: Apache-2.0
// The node-count rules (docs/nccl-findings.md, "Node count"), each shown proving what it proves
// and proving nothing where its condition falls short; then the three severities they give a
// TCP or loopback net.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/report_json.h"

namespace efawatch::nccl {
namespace {

Report Analyze(const std::vector<std::string>& lines) {
  Analyzer a;
  uint64_t n = 0;
  for (const std::string& l : lines) a.Feed("job.log", ++n, l);
  return a.Snapshot();
}

const Finding* FindKind(const Report& r, std::string_view kind) {
  for (const Finding& f : r.findings) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

struct Case {
  const char* name;
  std::vector<std::string> lines;
  const char* evidence;  // "proven_single", "proven_multi", "unknown"
  const char* rule;      // "" when unknown
  uint64_t line;         // the proof's line, 0 when unknown
};

// A Socket net on every case, so the severity rule is exercised too.
const char kSocket[] = "h:1:1 [0] NCCL INFO Using network Socket";

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // one_process: every rank in one process, even when NCCL counts two nodes.
      {"one_process",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0",
        "h:1:3 [1] NCCL INFO comm 0xb rank 1 nRanks 2 nNodes 2 localRanks 1 localRank 0"},
       "proven_single",
       "one_process",
       2},
      {"one_process_from_tests_table",
       {"#  Rank  0 Group  0 Pid  14630 on    box device  0 [0x59] NVIDIA H200",
        "#  Rank  1 Group  0 Pid  14630 on    box device  1 [0x5a] NVIDIA H200",
        "box:14630:14630 [0] NCCL INFO Using network Socket"},
       "proven_single",
       "one_process",
       1},
      // nnodes / nnodes_1.
      {"nnodes",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0"},
       "proven_multi",
       "nnodes",
       2},
      {"nnodes_1",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0"},
       "proven_single",
       "nnodes_1",
       2},
      {"nnodes_1_of_a_smaller_communicator_proves_nothing",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0",
        "h:1:2 [0] NCCL INFO comm 0xb rank 0 nranks 16 cudaDev 0 busId 1000 - Init START"},
       "unknown",
       "",
       0},
      // nranks_gt_local_ranks (a line without nNodes, as some builds print).
      {"nranks_gt_local_ranks",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nRanks 8 localRanks 4 localRank 0"},
       "proven_multi",
       "nranks_gt_local_ranks",
       2},
      {"nranks_eq_local_ranks_proves_nothing",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nRanks 4 localRanks 4 localRank 0",
        "h:1:2 [0] NCCL INFO comm 0xb rank 0 nranks 8 cudaDev 0 busId 1000 - Init START"},
       "unknown",
       "",
       0},
      // nranks_1.
      {"nranks_1",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 1 cudaDev 0 busId 30 - Init START"},
       "proven_single",
       "one_process",  // one rank is also all ranks in one process, the earlier tier
       2},
      {"fewer_ranks_than_nranks_proves_nothing",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 8 cudaDev 0 commId 0x7 - Init START",
        "h:2:2 [1] NCCL INFO comm 0xb rank 1 nranks 8 cudaDev 1 commId 0x7 - Init START",
        "h:3:2 [2] NCCL INFO comm 0xc rank 2 nranks 8 cudaDev 2 commId 0x7 - Init START"},
       "unknown",
       "",
       0},
      // all_ranks_one_host: each local rank logs its own init.
      {"all_ranks_one_host",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 commId 0x7 - Init START",
        "h:2:2 [1] NCCL INFO comm 0xb rank 1 nranks 2 cudaDev 1 commId 0x7 - Init START"},
       "proven_single",
       "all_ranks_one_host",
       2},
      {"all_ranks_one_host_from_tests_table",
       {"#  Rank  0 Group  0 Pid  10 on box device  0 [0x06] Tesla V100",
        "#  Rank  1 Group  0 Pid  11 on box device  1 [0x07] Tesla V100",
        "box:10:10 [0] NCCL INFO Using network Socket"},
       "proven_single",
       "all_ranks_one_host",
       1},
      // on_node_rings: every rank sends on channel 0 over P2P/SHM, none via NET.
      {"on_node_rings",
       {kSocket, "a:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 commId 0x7 - Init START",
        "b:2:2 [1] NCCL INFO comm 0xb rank 1 nranks 2 cudaDev 1 commId 0x7 - Init START",
        "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
        "b:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct"},
       "proven_single",
       "on_node_rings",
       2},
      // No channel has every rank sending, so the rings prove nothing; the P2P edge still joins
      // both ranks (on_node_links below), whatever the two host names say.
      {"incomplete_ring_proves_nothing_but_its_edges",
       {kSocket, "a:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 commId 0x7 - Init START",
        "b:2:2 [1] NCCL INFO comm 0xb rank 1 nranks 2 cudaDev 1 commId 0x7 - Init START",
        "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
        "b:2:2 [1] NCCL INFO Channel 01/0 : 1[1] -> 0[0] via P2P/CUMEM"},
       "proven_single",
       "on_node_links",
       2},
      // on_node_links: P2P/SHM edges join every rank into one set, whoever printed them (rank
      // 2 prints nothing here, so no channel has every rank sending and on_node_rings fails).
      {"on_node_links",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 3 cudaDev 0 commId 0x7 - Init START",
        "h:2:2 [1] NCCL INFO comm 0xb rank 1 nranks 3 cudaDev 1 commId 0x7 - Init START",
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "h:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via SHM/direct/direct"},
       "proven_single",
       "on_node_links",
       2},
      // NCCL 2.4 prints the rings before the communicator line.
      {"on_node_links_of_pre_2_5_rings",
       {kSocket, "h:1:2 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPC",
        "h:1:2 [0] NCCL INFO Ring 01 : 2[2] -> 0[0] via direct shared memory",
        "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 3 cudaDev 0 nvmlDev 0 - Init COMPLETE"},
       "proven_single",
       "on_node_links",
       4},
      {"on_node_links_in_two_sets_prove_nothing",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 4 cudaDev 0 commId 0x7 - Init START",
        "h:3:2 [2] NCCL INFO comm 0xc rank 2 nranks 4 cudaDev 2 commId 0x7 - Init START",
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "h:3:2 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/IPC"},
       "unknown",
       "",
       0},
      {"on_node_links_with_a_collnet_channel_prove_nothing",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 commId 0x7 - Init START",
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "h:1:2 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/SHARP/0"},
       "unknown",
       "",
       0},
      {"on_node_links_of_a_smaller_communicator_prove_nothing",
       {kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 commId 0x7 - Init START",
        "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "h:1:2 [0] NCCL INFO comm 0xb rank 0 nranks 16 cudaDev 0 commId 0x9 - Init START"},
       "unknown",
       "",
       0},
      // Lines without a prefix: one unnamed process, which is no one process and no one host;
      // the edges still join ranks.
      {"prefixless_lines_are_not_one_process",
       {"NCCL INFO Using network Socket",
        "NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE",
        "NCCL INFO comm 0xb rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE"},
       "unknown",
       "",
       0},
      {"prefixless_on_node_links",
       {"NCCL INFO Using network Socket",
        "NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 commId 0x7 - Init START",
        "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"},
       "proven_single",
       "on_node_links",
       2},
      // bootstrap_loopback.
      {"bootstrap_loopback",
       {kSocket, "h:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
        "h:2:1 [1] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>"},
       "proven_single",
       "bootstrap_loopback",
       2},
      {"bootstrap_loopback_with_another_interface_and_no_init_proves_nothing",
       {kSocket, "h:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
        "h:1:2 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:10.244.1.7<0>"},
       "unknown",
       "",
       0},
      {"bootstrap_loopback_with_init_complete",
       {kSocket, "h:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
        "h:1:2 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:10.244.1.7<0>",
        "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE"},
       "proven_single",
       "bootstrap_loopback",
       2},
      {"bootstrap_loopback_of_one_process_proves_nothing",
       {kSocket, "h:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
        "h:2:1 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"},
       "unknown",
       "",
       0},
      // net_channels.
      {"net_channels",
       {kSocket, "h:1:2 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0"},
       "proven_multi",
       "net_channels",
       2},
      {"net_completion_error",
       {kSocket,
        "h:1:2 [0] transport/net_ib.cc:1192 NCCL WARN NET/IB : Got completion from peer "
        "10.9.9.9<1> with error 12, opcode 0, len 0, vendor err 129"},
       "proven_multi",
       "net_channels",
       2},
      // addresses: two processes' own lists, or a peer no process lists.
      {"addresses_of_two_processes",
       {kSocket, "ubuntu:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "ubuntu:2:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>"},
       "proven_multi",
       "addresses",
       2},
      {"address_of_a_peer",
       {kSocket, "ubuntu:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "ubuntu:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
        "10.0.0.2<43215> failed : Connection refused"},
       "proven_multi",
       "addresses",
       2},
      {"one_shared_address_proves_nothing",
       {"a:1:1 [0] NCCL INFO Using network Socket",
        "a:1:1 [0] NCCL INFO Bootstrap : Using docker0:172.17.0.2<0>",
        "a:1:2 [0] NCCL INFO NET/Socket : Using [0]docker0:172.17.0.2<0> [1]eth1:10.5.0.3<0>",
        "a:2:1 [1] NCCL INFO Bootstrap : Using docker0:172.17.0.2<0>",
        // One line, split to fit. NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
        "a:1:3 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.5.0.3<1> "
        "failed : Connection refused"},
       "unknown",
       "",
       0},
      // launcher: Ray prefixes (no ip= on the driver's node), pdsh "host: ".
      {"ray_ip_prefix",
       {"(RayTrainWorker pid=1) w:1:1 [0] NCCL INFO Using network Socket",
        "(RayTrainWorker pid=2, ip=192.168.0.70) w:2:2 [0] NCCL INFO Using network Socket"},
       "proven_multi",
       "launcher",
       1},
      {"ray_two_ips_with_colour_and_dedup",
       {"\x1b[36m(RayTrainWorker pid=1, ip=10.0.1.11)\x1b[0m w:1:1 [0] NCCL INFO Using network "
        "Socket",
        "(RayTrainWorker pid=2, ip=10.0.2.22) w:2:2 [0] NCCL INFO Using network Socket\x1b[2m "
        "[repeated 3x across cluster]\x1b[0m"},
       "proven_multi",
       "launcher",
       1},
      {"ray_one_ip_proves_nothing",
       {"(RayTrainWorker pid=1, ip=192.168.0.70) w:1:1 [0] NCCL INFO Using network Socket",
        "(RayTrainWorker pid=2, ip=192.168.0.70) w:2:2 [0] NCCL INFO Using network Socket"},
       "unknown",
       "",
       0},
      {"pdsh_host_prefix",
       {"node-a: w:1:1 [0] NCCL INFO Using network Socket",
        "node-b: w:2:2 [0] NCCL INFO Using network Socket"},
       "proven_multi",
       "launcher",
       1},
      // connect_timeout.
      {"connect_timeout",
       {kSocket,
        "h:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
        "node9<5> failed : Connection timed out"},
       "proven_multi",
       "connect_timeout",
       2},
      {"connect_refused_proves_nothing",
       {kSocket,
        "h:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
        "h<5> failed : Connection refused"},
       "unknown",
       "",
       0},
      // host_names: the weakest; addresses outrank them.
      {"host_names",
       {"a:1:1 [0] NCCL INFO Using network Socket", "b:2:2 [0] NCCL INFO Using network Socket"},
       "proven_multi",
       "host_names",
       2},
      {"host_names_overruled_by_one_address",
       {"a:1:1 [0] NCCL INFO Using network Socket",
        "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "b:2:2 [0] NCCL INFO Using network Socket",
        "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"},
       "unknown",
       "",
       0},
      {"localhost_peer_names_nothing",
       {kSocket,
        "h:1:2 [0] misc/socket.cc:538 NCCL WARN socketProgress: Connection closed by "
        "remote peer localhost<45612>"},
       "unknown",
       "",
       0},
      {"one_host_name_proves_nothing", {kSocket, kSocket}, "unknown", "", 0},
  };
  return cases;
}

TEST(NodeProofTest, EachRuleProvesWhatItShould) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Report r = Analyze(c.lines);
    const Summary& s = r.summary;
    EXPECT_EQ(NameOf(s.verdict.nodes_evidence), c.evidence);
    EXPECT_EQ(s.nodes_rule, c.rule);
    EXPECT_EQ(s.nodes_proof.line, c.line);
    if (c.line > 0) {
      EXPECT_EQ(s.nodes_proof.source, "job.log");  // text only where the line was kept anyway
    }
    // Every case selects the Socket net: the severity follows the proof.
    const Finding* f = FindKind(r, kTcpFallback);
    if (s.verdict.nodes_evidence == NodesEvidence::kProvenSingle) {
      EXPECT_EQ(f, nullptr);
      EXPECT_EQ(s.headline.rfind("OK:", 0), 0u) << s.headline;
    } else if (s.verdict.nodes_evidence == NodesEvidence::kProvenMulti) {
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->severity, Severity::kCritical);
      EXPECT_EQ(s.headline.rfind("TCP FALLBACK:", 0), 0u) << s.headline;
    } else {
      ASSERT_NE(f, nullptr);
      EXPECT_EQ(f->severity, Severity::kWarning);
      EXPECT_NE(f->message.find("suspected: this log does not show how many nodes the job spans"),
                std::string::npos)
          << f->message;
      EXPECT_EQ(s.headline.rfind("SUSPECTED TCP FALLBACK:", 0), 0u) << s.headline;
    }
  }
}

TEST(NodeProofTest, SplitAnalysisKeepsTheProof) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    Analyzer whole;
    for (size_t i = 0; i < c.lines.size(); ++i) whole.Feed("job.log", i + 1, c.lines[i]);
    const nlohmann::json want = ReportToJson(whole.Snapshot())["summary"];
    for (size_t cut = 0; cut <= c.lines.size(); ++cut) {
      Analyzer first, second;
      for (size_t i = 0; i < cut; ++i) first.Feed("job.log", i + 1, c.lines[i]);
      for (size_t i = cut; i < c.lines.size(); ++i) {
        second.Feed("job.log", i - cut + 1, c.lines[i]);
      }
      first.Merge(std::move(second), cut);
      EXPECT_EQ(ReportToJson(first.Snapshot())["summary"], want) << "cut at " << cut;
    }
  }
}

TEST(NodeProofTest, OfiTcpProviderFollowsTheSameRule) {
  const std::vector<std::string> share = {
      "n1:1:1 [0] NCCL INFO NET/OFI Selected provider is tcp;ofi_rxm, fabric is x (found 1 nics)",
      "n1:1:1 [0] NCCL INFO Using network Libfabric",
  };
  Report suspected = Analyze(share);
  ASSERT_NE(FindKind(suspected, kTcpFallback), nullptr);
  EXPECT_EQ(FindKind(suspected, kTcpFallback)->severity, Severity::kWarning);
  EXPECT_EQ(suspected.MaxSeverity(), Severity::kWarning);
  EXPECT_NE(suspected.summary.headline.rfind("OK", 0), 0u);
  auto multi = share;
  multi.push_back(
      "n1:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0");
  EXPECT_EQ(FindKind(Analyze(multi), kTcpFallback)->severity, Severity::kCritical);
  auto single = share;
  single.push_back(
      "n1:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0");
  EXPECT_EQ(FindKind(Analyze(single), kTcpFallback), nullptr);
}

TEST(NodeProofTest, DeliberateSocketSaysByConfiguration) {
  for (bool multi : {false, true}) {
    std::vector<std::string> lines = {
        kSocket, "h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1."};
    if (multi)
      lines.push_back("h:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0");
    Report r = Analyze(lines);
    const Finding* f = FindKind(r, kTcpFallback);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->severity, Severity::kWarning);
    EXPECT_NE(f->message.find("by configuration"), std::string::npos) << f->message;
    EXPECT_EQ(f->message.find("suspected") != std::string::npos, !multi) << f->message;
    EXPECT_NE(r.summary.headline.rfind("OK", 0), 0u) << r.summary.headline;
  }
}

TEST(NodeProofTest, LoopbackFollowsTheSameRule) {
  // The Socket transport lists lo on a node of unknown count: suspected.
  const std::vector<std::string> lists_lo = {
      kSocket, "h:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:10.0.0.1<0>"};
  Report suspected = Analyze(lists_lo);
  const Finding* f = FindKind(suspected, kLoopbackMisuse);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->message.find("suspected"), std::string::npos) << f->message;
  // Several nodes proven: critical.
  auto multi = lists_lo;
  multi.push_back("h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0");
  EXPECT_EQ(FindKind(Analyze(multi), kLoopbackMisuse)->severity, Severity::kCritical);
  // One node proven: nothing.
  auto single = lists_lo;
  single.push_back(
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0");
  EXPECT_EQ(FindKind(Analyze(single), kLoopbackMisuse), nullptr);
}

TEST(NodeProofTest, JsonCarriesTheProof) {
  nlohmann::json j = ReportToJson(
      Analyze({kSocket, "h:1:2 [0] NCCL INFO comm 0xa rank 0 nRanks 8 nNodes 2 localRanks 4"}));
  EXPECT_EQ(j["summary"]["nodes_evidence"], "proven_multi");
  EXPECT_EQ(j["summary"]["nodes_proof"]["rule"], "nnodes");
  EXPECT_EQ(j["summary"]["nodes_proof"]["file"], "job.log");
  EXPECT_EQ(j["summary"]["nodes_proof"]["line"], 2);
  nlohmann::json u = ReportToJson(Analyze({kSocket}));
  EXPECT_EQ(u["summary"]["nodes_evidence"], "unknown");
  EXPECT_TRUE(u["summary"]["nodes_proof"].is_null());
}

}  // namespace
}  // namespace efawatch::nccl
