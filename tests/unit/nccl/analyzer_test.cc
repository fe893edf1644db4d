// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/analyzer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/common/utf8.h"
#include "lib/nccl/report_json.h"

namespace efawatch::nccl {
namespace {

Report Analyze(const std::vector<std::string>& lines, AnalyzerOptions options = {},
               Counters* counters = nullptr) {
  Analyzer a(options);
  uint64_t n = 0;
  for (const std::string& l : lines) a.Feed("test.log", ++n, l);
  if (counters != nullptr) *counters = a.counters();
  return a.Snapshot();
}

const Finding* FindKind(const Report& r, std::string_view kind) {
  for (const Finding& f : r.findings) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

const Process* FindProc(const Report& r, const std::string& host, uint32_t pid) {
  for (const Process& p : r.processes) {
    if (p.host == host && p.pid == pid) return &p;
  }
  return nullptr;
}

// Two nodes over NCCL's Socket transport (the canonical TCP fallback).
const std::vector<std::string> kTwoNodeSocket = {
    "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
    "a:1:1 [0] NCCL INFO Using network Socket",
    "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
    "b:2:2 [0] NCCL INFO Using network Socket",
    "a:1:3 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0",
};

TEST(AnalyzerTest, ExtractsVersionFromBareAndInfoBanner) {
  Report r = Analyze(
      {"h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>", "NCCL version 2.19.3+cuda12.3"});
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].nccl_version, "2.19.3");
  EXPECT_EQ(r.processes[0].cuda_version, "12.3");
  r = Analyze({"h:1:1 [0] NCCL INFO NCCL version 2.27.6+cuda13.0"});
  EXPECT_EQ(r.summary.verdict.nccl_version, "2.27.6");
  EXPECT_EQ(r.processes[0].cuda_version, "13.0");
}

// A fuzzed log once made the version-range check overflow (minor * 1000 with minor saturated at
// 1e9); the sanitizer build of this test fails on such undefined behaviour.
TEST(AnalyzerTest, AbsurdVersionNumbersAreComparedWithoutOverflow) {
  Report r = Analyze({"h:1:1 [0] NCCL INFO NCCL version 2.99999999999.99999999999+cuda12.3",
                      "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"});
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].nccl_version, "2.99999999999.99999999999");
}

TEST(AnalyzerTest, ExtractsOfiPluginProviderFabricAndNics) {
  Report r = Analyze({
      "h:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0",
      "h:1:1 [0] NCCL INFO NET/OFI Running on p5en.48xlarge platform, topology file x.xml",
      "h:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)",
      "h:1:1 [0] NCCL INFO NET/OFI Setting FI_EFA_FORK_SAFE environment variable to 1",
      "h:1:1 [0] NCCL INFO Using network Libfabric",
  });
  const Process& p = r.processes.at(0);
  EXPECT_EQ(p.net_plugin, "aws-ofi-nccl 1.14.0");
  EXPECT_EQ(p.net_plugin_state, "loaded");
  EXPECT_EQ(p.ofi_provider, "efa");
  EXPECT_EQ(p.ofi_fabric, "efa-direct");
  EXPECT_EQ(p.ofi_nics, 16);
  EXPECT_EQ(p.instance_type, "p5en.48xlarge");
  EXPECT_EQ(p.network, "Libfabric");
  EXPECT_EQ(p.network_family, "OFI");
  ASSERT_EQ(p.settings.size(), 1u);
  EXPECT_EQ(p.settings[0].first, "FI_EFA_FORK_SAFE");
  EXPECT_EQ(r.summary.verdict.ofi_provider, "efa");
}

TEST(AnalyzerTest, ExtractsOldProviderFormats) {
  Report r = Analyze({"h:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)",
                      "h:2:2 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm"});
  EXPECT_EQ(FindProc(r, "h", 1)->ofi_nics, 4);
  EXPECT_EQ(FindProc(r, "h", 2)->ofi_provider, "tcp;ofi_rxm");
}

TEST(AnalyzerTest, ExtractsPluginStates) {
  Report r = Analyze({
      "a:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).",
      "b:1:1 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v7 symbol.",
      "c:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin IBext_v8 (v8)",
      // Adjacent literals are one long log line. NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
      "d:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network "
      "plugin.",
      "e:1:1 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so",
      "e:1:1 [0] NCCL INFO P2P plugin IBext",
      "f:1:1 [0] NCCL INFO Failed to initialize NET plugin GPUDirectTCPX",
  });
  EXPECT_EQ(FindProc(r, "a", 1)->net_plugin_state, "not_found");
  EXPECT_EQ(FindProc(r, "a", 1)->net_plugin, "none");
  EXPECT_EQ(FindProc(r, "b", 1)->net_plugin_state, "abi_mismatch");
  EXPECT_EQ(FindProc(r, "c", 1)->net_plugin, "IBext_v8");
  EXPECT_EQ(FindProc(r, "d", 1)->net_plugin_state, "not_found");
  EXPECT_EQ(FindProc(r, "e", 1)->net_plugin, "IBext");
  EXPECT_EQ(FindProc(r, "f", 1)->net_plugin_state, "init_failed");
}

// NCCL 2.29.2 on a host without IB still prints its IB net's "Using" line, the device list empty
// but for the relaxed-ordering flag, then gives up on it: the job is not on IB.
TEST(AnalyzerTest, AnEmptyIbDeviceListAndAFailedPluginAreNotTheNet) {
  for (const char* using_line : {"a:1:2 [0] NCCL INFO NET/IB : Using [RO]; OOB eth0:10.0.0.1<0>",
                                 "a:1:2 [0] NCCL INFO NET/IB : Using ; OOB eth0:10.0.0.1<0>"}) {
    SCOPED_TRACE(using_line);
    Report r = Analyze({"a:1:1 [0] NCCL INFO NCCL version 2.29.2+cuda13.0",
                        "a:1:2 [0] NCCL INFO NET/IB : No device found.", using_line,
                        "a:1:2 [0] NCCL INFO Failed to initialize NET plugin IB"});
    ASSERT_EQ(r.processes.size(), 1u);
    EXPECT_NE(r.processes[0].network_family, "IB");
    EXPECT_NE(r.processes[0].network, "IB");
  }
  // A real device list is IB.
  Report ib =
      Analyze({"a:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.1.0.1<0>"});
  EXPECT_EQ(ib.processes[0].network, "IB");
  // aws-ofi-nccl said its piece, then NCCL gave up on it: not OFI.
  Report ofi = Analyze({"a:1:2 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0",
                        "a:1:2 [0] NCCL INFO Failed to initialize NET plugin Libfabric"});
  EXPECT_NE(ofi.processes[0].network_family, "OFI");
}

// A level word NCCL may add after 2.29 ("NCCL DEBUG ..." here): its line is read like an INFO
// line, not dropped; NCCL's own CALL traces are not messages.
TEST(AnalyzerTest, AnUnknownLevelWordIsReadLikeItsNeighbours) {
  Report r = Analyze({"a:1:1 [0] NCCL INFO NCCL version 2.32.1+cuda13.0",
                      "a:1:2 [0] NCCL NOTICE Using network Socket",
                      "a:1:2 NCCL CALL ncclCommInitRank(0x1,16,0x2,3)"});
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].network, "Socket");
  EXPECT_EQ(r.processes[0].nccl_version, "2.32.1");
}

TEST(AnalyzerTest, ExtractsBootstrapInAllFormats) {
  Report r = Analyze({
      "a:1:1 [0] NCCL INFO NET : Using interface ib0:12.12.12.102<0>",
      "b:1:1 [0] NCCL INFO Bootstrap : Using [0]eth0:172.17.0.2<0> [1]lo:127.0.0.1<0>",
      "c:1:1 [0] NCCL INFO Bootstrap : Using enp179s0f0:198.18.2.2<0>",
      "d:1:1 [0] NCCL INFO Bootstrap: Using enp9s0np0:10.99.0.2<0>",
      "e:1:1 [0] NCCL INFO Bootstrap : Using [0]ip6tnl0:fe80::e866:19ff:fe1e:a688%ip6tnl0<0>",
  });
  EXPECT_EQ(FindProc(r, "a", 1)->bootstrap_interface, "ib0");
  EXPECT_EQ(FindProc(r, "a", 1)->bootstrap_address, "12.12.12.102");
  EXPECT_EQ(FindProc(r, "b", 1)->bootstrap_interface, "eth0");
  EXPECT_EQ(FindProc(r, "c", 1)->bootstrap_address, "198.18.2.2");
  EXPECT_EQ(FindProc(r, "d", 1)->bootstrap_interface, "enp9s0np0");
  EXPECT_EQ(FindProc(r, "e", 1)->bootstrap_address, "fe80::e866:19ff:fe1e:a688%ip6tnl0");
}

TEST(AnalyzerTest, TracksCommunicatorsAndTransports) {
  Report r = Analyze({
      // Adjacent literals are one long log line. NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
      "h:1:9 [0] NCCL INFO ncclCommInitRank comm 0x55aa rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId "
      "9b000 commId 0x1234 - Init START",
      "h:1:9 [0] NCCL INFO comm 0x55aa rank 3 nRanks 8 nNodes 2 localRanks 4 localRank 3 MNNVL 0",
      "h:1:9 [0] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via NET/IBext_v8/0/GDRDMA",
      "h:1:9 [0] NCCL INFO Channel 01/0 : 3[3] -> 4[0] [send] via NET/IBext_v8/1/GDRDMA",
      "h:1:9 [0] NCCL INFO Channel 00/0 : 3[3] -> 2[2] via P2P/CUMEM/read",
      "h:1:9 [0] NCCL INFO Channel 00 : 3[3] -> 2[2] via SHM/direct/direct",
      "h:1:9 [0] NCCL INFO Channel 02/0 : 3[3] -> 4[0] [send] via NET/AWS Libfabric/0/GDRDMA",
      "h:1:9 [0] NCCL INFO ncclCommInitRank comm 0x55aa rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId "
      "9b000 commId 0x1234 - Init COMPLETE",
  });
  const Process& p = r.processes.at(0);
  ASSERT_EQ(p.communicators.size(), 1u);
  const Communicator& c = p.communicators[0];
  EXPECT_EQ(c.id, "0x1234");
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.nranks, 8);
  EXPECT_EQ(c.nnodes, 2);
  EXPECT_EQ(c.cuda_dev, 3);
  EXPECT_EQ(c.bus_id, "9b000");
  EXPECT_TRUE(c.init_complete);
  std::map<std::string, uint64_t> t(c.transports.begin(), c.transports.end());
  EXPECT_EQ(t["NET/IBext_v8/GDRDMA"], 2u);
  EXPECT_EQ(t["P2P/CUMEM"], 1u);
  EXPECT_EQ(t["SHM"], 1u);
  EXPECT_EQ(t["NET/AWS Libfabric/GDRDMA"], 1u);
  EXPECT_EQ(p.gdr, "on");
}

TEST(AnalyzerTest, AttachesEarlierChannelLinesToTheCompletedComm) {
  Report r = Analyze({
      "h:1:9 [0] NCCL INFO Ring 00 : 1 -> 0 [receive] via NET/Socket/0",
      "h:1:9 [0] NCCL INFO Ring 00 : 26[2] -> 30[6] via P2P/IPC",
      "h:1:9 [0] NCCL INFO comm 0x7efe rank 15 nranks 64 cudaDev 0 nvmlDev 0 - Init COMPLETE",
  });
  const Communicator& c = r.processes.at(0).communicators.at(0);
  EXPECT_EQ(c.nranks, 64);
  ASSERT_EQ(c.transports.size(), 2u);
  EXPECT_EQ(c.transports[0].first, "NET/Socket");
}

// The CLI's text output asks for no communicators: everything else is the same report.
TEST(AnalyzerTest, SnapshotWithoutCommunicatorsKeepsTheRest) {
  Analyzer a;
  uint64_t n = 0;
  for (const std::string& l : kTwoNodeSocket) a.Feed("test.log", ++n, l);
  a.Feed("test.log", ++n, "a:1:1 [0] NCCL INFO comm 0x7efe rank 0 nranks 2 - Init COMPLETE");
  a.Feed("test.log", ++n, "b:2:2 [0] NCCL INFO comm 0x7eff rank 1 nranks 2 - Init COMPLETE");
  const Report full = a.Snapshot();
  const Report lean = a.Snapshot({.communicators = false});
  ASSERT_EQ(full.processes.size(), 2u);
  EXPECT_EQ(full.processes[0].communicators.size(), 1u);
  nlohmann::json want = ReportToJson(full);
  for (auto& p : want["processes"]) p["communicators"] = nlohmann::json::array();
  EXPECT_EQ(ReportToJson(lean), want);
  EXPECT_FALSE(lean.findings.empty());
}

TEST(AnalyzerTest, TcpFallbackWhenTwoNodesUseSocket) {
  Report r = Analyze(kTwoNodeSocket);
  const Finding* f = FindKind(r, kTcpFallback);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(f->evidence.source, "test.log");
  EXPECT_GT(f->evidence.line, 0u);
  EXPECT_FALSE(f->evidence.text.empty());
  EXPECT_TRUE(r.summary.verdict.tcp_fallback);
  EXPECT_EQ(r.summary.verdict.transport, "NET/Socket");
  EXPECT_EQ(r.summary.headline.rfind("TCP FALLBACK:", 0), 0u);
}

TEST(AnalyzerTest, NoTcpFallbackOnSingleNodeSocket) {
  Report r = Analyze({
      "h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
      "h:1:1 [0] NCCL INFO Using network Socket",
      "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 30 - Init COMPLETE",
  });
  EXPECT_EQ(FindKind(r, kTcpFallback), nullptr);
  EXPECT_EQ(r.summary.verdict.transport, "none(single node)");
}

TEST(AnalyzerTest, NoTcpFallbackForIbJobBootstrappingOverTcp) {
  Report r = Analyze({
      "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
      "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
      "a:1:1 [0] NCCL INFO Using network IB",
      "b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
      "a:1:3 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0/GDRDMA",
  });
  EXPECT_FALSE(r.summary.verdict.tcp_fallback);
  EXPECT_EQ(r.summary.verdict.transport, "NET/IB");
  EXPECT_EQ(r.summary.headline.rfind("OK:", 0), 0u) << r.summary.headline;
}

// Pasted excerpts and some log shippers cut the "host:pid:tid [dev]" prefix: the lines are one
// unnamed process, and their net, provider and channels count as any process's.
TEST(AnalyzerTest, ReadsLinesWithoutPrefixAsOneUnnamedProcess) {
  Counters counters;
  Report r = Analyze(
      {
          "NCCL INFO NET/OFI Selected Provider is efa",
          "NCCL INFO Using network AWS Libfabric",
          "NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/AWS Libfabric/0/GDRDMA",
          "NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive] via NET/AWS Libfabric/0/GDRDMA",
      },
      {}, &counters);
  EXPECT_TRUE(r.HasNcclOutput());
  EXPECT_EQ(counters.records, 4u);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].host, "");
  EXPECT_EQ(r.processes[0].pid, 0u);
  EXPECT_EQ(r.processes[0].network, "AWS Libfabric");
  EXPECT_EQ(r.processes[0].ofi_provider, "efa");
  const Verdict& v = r.summary.verdict;
  EXPECT_EQ(v.family, NetFamily::kOFI);
  EXPECT_EQ(v.transport, "NET/OFI");
  EXPECT_EQ(v.gdr, Gdr::kOn);
  EXPECT_EQ(r.summary.nodes_rule, "net_channels");
  EXPECT_EQ(r.summary.headline.rfind("OK:", 0), 0u) << r.summary.headline;
}

TEST(AnalyzerTest, LinesWithoutPrefixOnASocketNetAreASuspectedFallback) {
  Report r = Analyze({
      "  NCCL INFO Using network Socket",
      "NCCL WARN NET/Socket : peer 10.0.0.2<4> message truncated",
  });
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].warnings, 1u);
  const Finding* f = FindKind(r, kTcpFallback);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->suspected);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

// NCCL 2.4 prints the NET/Socket interface list in every process before "NET/IB : Using": a
// process whose IB line the excerpt lost is no Socket net where another process of the job
// shows the list next to its IB selection.
const std::vector<std::string> kIbJobOneIbLineLost = {
    "a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    "a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
    "b:2:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>",
    "a:1:3 [0] NCCL INFO Ring 00 : 1 -> 0 [receive] via NET/IB/0",
};

TEST(AnalyzerTest, SocketListAloneIsNoSocketNetWhereTheJobSelectsIb) {
  Report r = Analyze(kIbJobOneIbLineLost);
  EXPECT_EQ(FindKind(r, kTcpFallback), nullptr);
  EXPECT_FALSE(r.summary.verdict.tcp_fallback);
  EXPECT_EQ(r.summary.verdict.transport, "NET/IB");
  const Process* b = FindProc(r, "b", 2);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->network_family, "");
  EXPECT_EQ(r.summary.verdict.nodes_evidence, NodesEvidence::kProvenMulti);
}

TEST(AnalyzerTest, SocketListStaysASocketNetWithoutAWitnessOrWithIbFailing) {
  // The IB process prints no list: nothing shows that this NCCL prints it whatever it selects.
  std::vector<std::string> no_witness = kIbJobOneIbLineLost;
  no_witness.erase(no_witness.begin());
  Report r = Analyze(no_witness);
  const Finding* f = FindKind(r, kTcpFallback);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->host, "b");
  EXPECT_EQ(f->severity, Severity::kCritical);

  // IB failed on b: its list is the Socket net's.
  std::vector<std::string> ib_failed = kIbJobOneIbLineLost;
  ib_failed.insert(ib_failed.begin() + 2, "b:2:2 [0] NCCL INFO NET/IB : No device found.");
  r = Analyze(ib_failed);
  f = FindKind(r, kTcpFallback);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->host, "b");

  // b asked for sockets.
  std::vector<std::string> asked = kIbJobOneIbLineLost;
  asked.push_back("b:2:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.");
  r = Analyze(asked);
  f = FindKind(r, kTcpFallback);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->host, "b");
  EXPECT_TRUE(f->by_configuration);

  // "Using network Socket" is a selection whatever the other processes print.
  std::vector<std::string> selected = kIbJobOneIbLineLost;
  selected.push_back("b:2:2 [0] NCCL INFO Using network Socket");
  r = Analyze(selected);
  ASSERT_NE(FindKind(r, kTcpFallback), nullptr);
}

TEST(AnalyzerTest, SocketListIsJudgedPerSourceWhenGroupedBySource) {
  AnalyzerOptions o;
  o.group_by_source = true;
  Analyzer a(o);
  a.Feed("node-a.log", 1, kIbJobOneIbLineLost[0]);
  a.Feed("node-a.log", 2, kIbJobOneIbLineLost[1]);
  a.Feed("node-b.log", 1, kIbJobOneIbLineLost[2]);
  Report r = a.Snapshot();
  // node-b.log alone shows nothing but the list: a suspected Socket net, as before.
  const Finding* f = FindKind(r, kTcpFallback);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->host, "b");
  EXPECT_TRUE(f->suspected);
}

TEST(AnalyzerTest, DeliberateSocketIsAWarning) {
  auto lines = kTwoNodeSocket;
  lines.push_back("a:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.");
  Report r = Analyze(lines);
  const Finding* f = FindKind(r, kTcpFallback);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_TRUE(r.summary.verdict.tcp_fallback);
  EXPECT_TRUE(r.summary.verdict.tcp_deliberate);
  // The same job without the setting is a fallback, not a choice.
  EXPECT_FALSE(Analyze(kTwoNodeSocket).summary.verdict.tcp_deliberate);
}

TEST(AnalyzerTest, TcpFallbackOnOfiTcpProvider) {
  Report r = Analyze({
      "a:1:1 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm",
      "a:1:1 [0] NCCL INFO Using network AWS Libfabric",
      "b:2:2 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm",
      "a:1:3 [0] NCCL INFO Ring 00 : 7 -> 8 [receive] via NET/AWS Libfabric/0",
  });
  ASSERT_NE(FindKind(r, kTcpFallback), nullptr);
  EXPECT_EQ(r.summary.verdict.ofi_provider, "tcp;ofi_rxm");
  Report ok = Analyze({
      "a:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa",
      "a:1:3 [0] NCCL INFO Ring 00 : 7 -> 8 [receive] via NET/AWS Libfabric/0/GDRDMA",
  });
  EXPECT_EQ(FindKind(ok, kTcpFallback), nullptr);
}

TEST(AnalyzerTest, MultiNodeEvidenceFromNcclTestsHeader) {
  Report r = Analyze({
      "#  Rank  0 Group  0 Pid  22 on worker-0 device  0 [0x00] Tesla V100-SXM2-16GB",
      "#  Rank  1 Group  0 Pid  21 on worker-1 device  0 [0x00] Tesla V100-SXM2-16GB",
      "worker-0:22:28 [0] NCCL INFO Using network Socket",
  });
  EXPECT_TRUE(r.summary.verdict.tcp_fallback);
  EXPECT_EQ(r.summary.verdict.nodes, 2);
}

TEST(AnalyzerTest, SingleHostTableOverridesNNodes) {
  Report r = Analyze({
      "#  Rank  0 Group  0 Pid  14630 on    8h200-2 device  0 [0x59] NVIDIA H200",
      "#  Rank  1 Group  0 Pid  14630 on    8h200-2 device  1 [0x5a] NVIDIA H200",
      "8h200-2:14630:14687 [1] NCCL INFO comm 0x58 rank 1 nRanks 2 nNodes 2 localRanks 1 "
      "localRank 0 MNNVL 0",
      "8h200-2:14630:14695 [1] NCCL INFO Channel 07/0 : 1[1] -> 0[0] [send] via NET/AWS "
      "Libfabric/1/GDRDMA",
  });
  EXPECT_EQ(r.summary.verdict.transport, "none(single node)");
  EXPECT_EQ(nccl::NameOf(r.summary.verdict.gdr), "on");
}

TEST(AnalyzerTest, RemoteConnectTimeoutMeansMultiNode) {
  Report r = Analyze({
      "h:1:1 [0] INFO Using internal Network Socket",
      "h:1:2 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out",
  });
  EXPECT_TRUE(r.summary.verdict.tcp_fallback);
  ASSERT_NE(FindKind(r, kConnectionFailure), nullptr);
}

TEST(AnalyzerTest, LoopbackBootstrapInMultiNodeJobIsCritical) {
  Report r = Analyze({
      "a:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
      "b:2:2 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
      "a:1:1 [0] NCCL INFO Using network IB",
      "a:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0",
  });
  const Finding* f = FindKind(r, kLoopbackMisuse);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
}

// Host names are weak evidence: two names do not outweigh a bootstrap on loopback, which only
// one node can use.
TEST(AnalyzerTest, LoopbackBootstrapOutweighsHostNames) {
  Report r = Analyze({
      "a:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
      "b:2:2 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>",
      "a:1:1 [0] NCCL INFO Using network IB",
  });
  EXPECT_EQ(FindKind(r, kLoopbackMisuse), nullptr);
  EXPECT_EQ(nccl::NameOf(r.summary.verdict.nodes_evidence), "proven_single");
  EXPECT_EQ(r.summary.nodes_rule, "bootstrap_loopback");
}

TEST(AnalyzerTest, AutomaticLoopbackOnSingleNodeIsFine) {
  Report r = Analyze({
      "[1,0]<stdout>:c1:10:10 [0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>",
      "[1,1]<stdout>:c1:11:11 [1] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>",
      "[1,1]<stdout>:c1:11:11 [1] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>",
  });
  EXPECT_EQ(FindKind(r, kLoopbackMisuse), nullptr);
  EXPECT_FALSE(r.summary.verdict.loopback_misuse);
  EXPECT_EQ(r.summary.verdict.transport, "none(single node)");
}

TEST(AnalyzerTest, IfnameLoopbackIsAWarningFromEchoOrLauncher) {
  for (const char* line : {
           "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lo",
           "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set to =lo",
           "export NCCL_SOCKET_IFNAME=lo",
           "mpirun -x NCCL_SOCKET_IFNAME=lo -np 2 ./all_reduce_perf",
           "NCCL_SOCKET_IFNAME='lo' python train.py",
       }) {
    Report r = Analyze({line});
    const Finding* f = FindKind(r, kLoopbackMisuse);
    ASSERT_NE(f, nullptr) << line;
    EXPECT_EQ(f->severity, Severity::kWarning) << line;
    EXPECT_TRUE(r.summary.verdict.loopback_misuse) << line;
  }
  for (const char* line : {
           "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker0,lo",
           "export NCCL_SOCKET_IFNAME=eth0",
           "export XNCCL_SOCKET_IFNAME=lo",
           "h:1:1 [0] NCCL INFO RAS client listening socket at ::1<28028>",
           "h:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to lowpan0",
       }) {
    Report r = Analyze({line});
    EXPECT_EQ(FindKind(r, kLoopbackMisuse), nullptr) << line;
  }
}

TEST(AnalyzerTest, PluginMissingIsNormalOnIb) {
  Report r = Analyze({
      "a:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal "
      "implementation",
      "a:1:1 [0] NCCL INFO Using network IB",
  });
  const Finding* f = FindKind(r, kNetPluginMissing);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_FALSE(r.summary.verdict.net_plugin_missing);
}

TEST(AnalyzerTest, PluginMissingWarnsWhenItCausesTcpFallback) {
  auto lines = kTwoNodeSocket;
  lines.push_back("a:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.");
  Report r = Analyze(lines);
  EXPECT_TRUE(r.summary.verdict.net_plugin_missing);
}

TEST(AnalyzerTest, OfiInitFailureWarns) {
  Report r = Analyze({
      "h:81:2552 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa (found 4 nics)",
      "h:81:2552 [0] nccl_net_ofi_create_plugin:335 NCCL WARN NET/OFI aws-ofi-nccl initialization "
      "failed",
  });
  const Finding* f = FindKind(r, kNetPluginMissing);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(r.processes.at(0).net_plugin_state, "init_failed");
  EXPECT_EQ(nccl::NameOf(r.summary.verdict.family), "OFI");
}

TEST(AnalyzerTest, GdrDisabledOnRdmaButNotOnSocket) {
  Report r = Analyze({
      "a:1:1 [0] NCCL INFO Using network IB",
      "a:1:1 [0] NCCL INFO Channel 00 : 3[51000] -> 0[cb000] [receive] via NET/IB/0",
  });
  ASSERT_NE(FindKind(r, kGdrDisabled), nullptr);
  EXPECT_TRUE(r.summary.verdict.gdr_disabled);
  EXPECT_EQ(nccl::NameOf(r.summary.verdict.gdr), "off");
  Report s = Analyze({"a:1:1 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'",
                      "a:1:1 [0] NCCL INFO Using network Socket"});
  EXPECT_EQ(FindKind(s, kGdrDisabled), nullptr);
  Report w =
      Analyze({"h:1:1 [0] platform_config_endpoint:626 NCCL WARN NET/OFI GDR disabled on "
               "GDR-supported instance type p4d.24xlarge"});
  EXPECT_TRUE(w.summary.verdict.gdr_disabled);
  EXPECT_EQ(w.processes.at(0).instance_type, "p4d.24xlarge");
}

TEST(AnalyzerTest, EfaWithoutRdmaIsOnlyInfo) {
  Report r = Analyze({
      "algo-1:462:462 [0] NCCL INFO NET/OFI Selected Provider is efa",
      "libfabric:462:1673041636:efa:core:rxr_info_to_rxr():506<warn> FI_HMEM capability requires "
      "RDMA, which this device does not support.",
  });
  const Finding* f = FindKind(r, kGdrDisabled);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(nccl::NameOf(r.summary.verdict.gdr), "off");
}

TEST(AnalyzerTest, CountsWarningsErrorsAbortsTimeouts) {
  Counters counters;
  Report r = Analyze(
      {
          "",
          // Adjacent literals are one long log line.
          // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
          "h:1:2 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.9<1> "
          "failed : Connection refused",
          "h:1:2 [0] NCCL INFO misc/socket.cc:564 -> 2",
          "h:1:2 [0] NCCL INFO group.cc:65 -> 2 [Async thread]",
          "h:1:2 [0] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 10.2.2.2<5> with "
          "status=12 opcode=0 len=0 vendor err 129 (Recv)",
          "h:1:2 [0] NCCL INFO comm 0x7f rank 1 nranks 2 cudaDev 0 busId 84000 - Abort COMPLETE",
          "[rank2]:[E424 01:11:21.160832730 ProcessGroupNCCL.cpp:629] [Rank 2] Watchdog caught "
          "collective operation timeout: WorkNCCL(SeqNum=4, OpTy",
          "pe=BROADCAST, NumelIn=112, NumelOut=112, Timeout(ms)=1800000) ran for 1800010 ms",
          "vm1: Test NCCL failure common.cu:499 'unhandled system error'",
      },
      {}, &counters);
  EXPECT_EQ(counters.warn_records, 2u);
  const Finding* w = FindKind(r, kNcclWarning);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->count, 2u);
  EXPECT_EQ(w->evidence.line, 2u);
  int chains = 0;
  for (const Finding& f : r.findings) {
    if (f.kind == kNcclError && f.host == "h") {
      EXPECT_EQ(f.count, 2u);
      ++chains;
    }
  }
  EXPECT_EQ(chains, 1);
  EXPECT_NE(FindKind(r, kCommAbort), nullptr);
  EXPECT_NE(FindKind(r, kNetCompletionError), nullptr);
  EXPECT_NE(FindKind(r, kConnectionFailure), nullptr);
  const Finding* t = FindKind(r, kCollectiveTimeout);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->severity, Severity::kCritical);
  EXPECT_EQ(t->count, 1u);
  EXPECT_EQ(r.MaxSeverity(), Severity::kCritical);
}

TEST(AnalyzerTest, ErrorChainNeedsFileLineArrowCode) {
  Report r = Analyze({"h:1:1 [0] NCCL INFO /sys/devices/pci0000:00/0000:00:1f.6 -> 0/0/0/0",
                      "h:1:1 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1"});
  EXPECT_EQ(FindKind(r, kNcclError), nullptr);
}

TEST(AnalyzerTest, BoundsProcessesAndComms) {
  AnalyzerOptions o;
  o.max_processes = 8;
  o.max_comms_per_process = 2;
  std::vector<std::string> lines;
  lines.reserve(25);
  for (int i = 0; i < 20; ++i) {
    lines.push_back("h" + std::to_string(i) + ":1:1 [0] NCCL INFO Using network IB");
  }
  for (int i = 0; i < 5; ++i) {
    lines.push_back("h19:1:1 [0] NCCL INFO comm 0x" + std::to_string(i + 10) +
                    " rank 0 nranks 2 cudaDev 0 busId 1 - Init COMPLETE");
  }
  Counters c;
  Report r = Analyze(lines, o, &c);
  EXPECT_EQ(r.processes.size(), 8u);
  EXPECT_EQ(c.evicted_processes, 12u);
  EXPECT_EQ(c.evicted_comms, 3u);
  EXPECT_EQ(FindProc(r, "h19", 1)->communicators.size(), 2u);
}

// A communicator is found again by its address: the one in progress, one made before it, and
// one whose address is longer than the 32 bytes kept.
TEST(AnalyzerTest, FindsEachCommunicatorAgainByAddress) {
  const std::string long_ptr = "0x" + std::string(40, 'a');
  Counters counters;
  Report r = Analyze(
      {
          "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0xa rank 0 nranks 2 - Init START",
          "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0xb rank 1 nranks 4 - Init START",
          "h:1:1 [0] NCCL INFO comm 0xa rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0",
          "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0xb rank 1 nranks 4 - Init COMPLETE",
          "h:1:1 [0] NCCL INFO comm " + long_ptr + " rank 5 nranks 8 - Init START",
          "h:1:1 [0] NCCL INFO comm " + long_ptr + " rank 5 nranks 8 - Init COMPLETE",
      },
      {}, &counters);
  const Process& p = r.processes.at(0);
  ASSERT_EQ(p.communicators.size(), 3u);
  EXPECT_EQ(p.communicators[0].nnodes, 2);
  EXPECT_FALSE(p.communicators[0].init_complete);
  EXPECT_EQ(p.communicators[1].nranks, 4);
  EXPECT_TRUE(p.communicators[1].init_complete);
  EXPECT_EQ(p.communicators[2].rank, 5);
  EXPECT_TRUE(p.communicators[2].init_complete);
  EXPECT_EQ(counters.evicted_comms, 0u);
}

TEST(AnalyzerTest, TruncatesLongLinesAndSkipsBinaryJunk) {
  AnalyzerOptions o;
  o.max_line_bytes = 1024;
  Counters c;
  std::string junk("ab\0cd NCCL INFO", 15);
  Report r = Analyze({std::string(5000, 'x'), junk, "\xff\xfe\x80 NCCL WARN \x01\x02"}, o, &c);
  EXPECT_EQ(c.truncated_lines, 1u);
  EXPECT_EQ(c.malformed_lines, 1u);
  EXPECT_EQ(c.lines, 3u);
}

// A file's envelope is decided by its first line (issue #33): a CRI log's lines and a docker
// json-file log's records, each file on its own; in a CRI or plain file a '{' line is text.
TEST(AnalyzerTest, JoinsCriPartialsAndDecodesDockerJson) {
  Analyzer a;
  a.Feed("cri.log", 1, "2025-03-04T05:06:07.1Z stdout P a:1:1 [0] NCCL INFO Using net");
  a.Feed("cri.log", 2, "2025-03-04T05:06:07.2Z stdout F work Socket");
  a.Feed(
      "docker.log", 1,
      R"({"log":"b:2:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2\u003c0\u003e\n","stream":"stdout","time":"t"})");
  const Report r = a.Snapshot();
  EXPECT_EQ(FindProc(r, "a", 1)->network, "Socket");
  ASSERT_NE(FindProc(r, "b", 2), nullptr);
  EXPECT_EQ(FindProc(r, "b", 2)->bootstrap_address, "10.0.0.2");
  EXPECT_EQ(a.counters().nccl_lines, 2u);
}

TEST(AnalyzerTest, ABraceLineInAFileThatStartedAsTextIsNotAJsonRecord) {
  Analyzer a;
  a.Feed("train.log", 1, "{'loss': 1.25, 'epoch': 0.1}");
  a.Feed("train.log", 2,
         R"({"log":"c:3:3 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3\u003c0\u003e\n"})");
  const Report r = a.Snapshot();
  EXPECT_EQ(FindProc(r, "c", 3), nullptr) << "not decoded as a docker record";
}

// The agent knows a docker json-file log by its name and declares it: its records are decoded
// whatever its first line, and a file declared plain keeps a record-shaped line as text.
TEST(AnalyzerTest, ADeclaredEnvelopeWinsOverTheFirstLine) {
  const std::string record =
      R"({"log":"c:3:3 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3\u003c0\u003e\n"})";
  Analyzer a;
  a.DeclareSource("c-json.log", true);
  a.Feed("c-json.log", 1, "{'loss': 1.25, 'epoch': 0.1}");  // a cut first record, say
  a.Feed("c-json.log", 2, record);
  ASSERT_NE(FindProc(a.Snapshot(), "c", 3), nullptr) << "decoded though the first line is not";
  EXPECT_EQ(FindProc(a.Snapshot(), "c", 3)->bootstrap_address, "10.0.0.3");
  Analyzer plain;
  plain.DeclareSource("train.log", false);
  plain.Feed("train.log", 1, record);
  EXPECT_EQ(FindProc(plain.Snapshot(), "c", 3), nullptr) << "declared plain: not a docker record";
}

// One feed rule for the agent and `analyze`: bytes that are not UTF-8 are replaced before a line
// is parsed, so what the report keeps is valid text.
TEST(AnalyzerTest, InvalidUtf8IsReplacedBeforeParsing) {
  Analyzer a;
  a.Feed("x", 1, "h\xff:7:7 [0] NCCL INFO Bootstrap : Using et\xc3h0:10.0.0.7<0>");
  a.FeedLines("x", 2, "h\xff:7:7 [0] NCCL INFO Using network Soc\xe2\x82ket\n");
  const Report r = a.Snapshot();
  ASSERT_EQ(r.processes.size(), 1u);
  const Process& p = r.processes[0];
  EXPECT_EQ(p.host, "h\uFFFD");
  EXPECT_EQ(p.network, "Soc\uFFFD\uFFFDket") << "each byte of a cut sequence is replaced";
  EXPECT_EQ(p.bootstrap_interface, "et\uFFFDh0");
  for (const std::string* s : {&p.host, &p.network, &p.bootstrap_interface}) {
    EXPECT_TRUE(common::IsValidUtf8(*s)) << *s;
  }
}

// The line limit applies to the bytes as read: a line at the limit whose invalid bytes grow
// into three-byte replacements is not a truncated line (the fuzzed differential found a block
// that fed such a line inside a run of NCCL lines, and a line-by-line feed that did not).
TEST(AnalyzerTest, ReplacedBytesDoNotMakeALineTruncated) {
  AnalyzerOptions o;
  o.max_line_bytes = 256;  // the least the analyzer takes
  Analyzer a(o);
  std::string line = "h:7:7 [0] NCCL INFO Using network Socket ";
  line += std::string(256 - line.size(), '\xff');
  ASSERT_EQ(line.size(), 256u);
  a.Feed("x", 1, line);
  EXPECT_EQ(a.counters().truncated_lines, 0u);
  a.Feed("x", 2, line + "z");
  EXPECT_EQ(a.counters().truncated_lines, 1u);
}

TEST(AnalyzerTest, ForcedEnvelopeRejectsOtherLines) {
  AnalyzerOptions o;
  o.envelope = Envelope::kCri;
  Counters c;
  Analyze({"a:1:1 [0] NCCL INFO Using network Socket"}, o, &c);
  EXPECT_EQ(c.malformed_lines, 1u);
}

TEST(AnalyzerTest, GroupBySourceKeepsHostsApart) {
  AnalyzerOptions o;
  o.group_by_source = true;
  Analyzer a(o);
  a.Feed("pod-a.log", 1, "a:1:1 [0] NCCL INFO Using network Socket");
  a.Feed("pod-b.log", 1, "b:2:2 [0] NCCL INFO Using network Socket");
  // Each pod alone shows one host: the Socket net is a suspected fallback, not a certain one.
  Report apart = a.Snapshot();
  EXPECT_TRUE(apart.summary.verdict.tcp_fallback);
  EXPECT_EQ(nccl::NameOf(apart.summary.verdict.nodes_evidence), "unknown");
  EXPECT_EQ(apart.MaxSeverity(), Severity::kWarning);
  Analyzer joined;
  joined.Feed("pod-a.log", 1, "a:1:1 [0] NCCL INFO Using network Socket");
  joined.Feed("pod-b.log", 1, "b:2:2 [0] NCCL INFO Using network Socket");
  Report together = joined.Snapshot();
  EXPECT_TRUE(together.summary.verdict.tcp_fallback);
  EXPECT_EQ(nccl::NameOf(together.summary.verdict.nodes_evidence), "proven_multi");
  EXPECT_EQ(together.MaxSeverity(), Severity::kCritical);
}

TEST(AnalyzerTest, SnapshotCanBeTakenWhileFeeding) {
  Analyzer a;
  a.Feed("x", 1, "a:1:1 [0] NCCL INFO Using network Socket");
  EXPECT_EQ(a.Snapshot().MaxSeverity(), Severity::kWarning);  // suspected: one host so far
  a.Feed("x", 2, "b:2:2 [0] NCCL INFO Using network Socket");
  EXPECT_EQ(a.Snapshot().MaxSeverity(), Severity::kCritical);
}

TEST(AnalyzerTest, RendersJson) {
  nlohmann::json j = ReportToJson(Analyze(kTwoNodeSocket));
  ASSERT_TRUE(j.contains("processes"));
  ASSERT_TRUE(j.contains("findings"));
  ASSERT_TRUE(j.contains("summary"));
  const auto& p = j["processes"][0];
  for (const char* k : {"host", "pid", "nccl_version", "net_plugin", "network", "ofi_provider",
                        "bootstrap_interface", "gdr", "communicators"}) {
    EXPECT_TRUE(p.contains(k)) << k;
  }
  const auto& comm = j["processes"][0]["communicators"][0];
  for (const char* k : {"id", "rank", "nranks", "nnodes", "transports"}) {
    EXPECT_TRUE(comm.contains(k)) << k;
  }
  const auto& f = j["findings"][0];
  for (const char* k : {"kind", "severity", "host", "pid", "evidence"}) EXPECT_TRUE(f.contains(k));
  EXPECT_EQ(f["evidence"]["file"], "test.log");
  const auto& s = j["summary"];
  EXPECT_EQ(s["tcp_fallback"], true);
  for (const char* k : {"loopback_misuse", "net_plugin_missing", "gdr_disabled", "network",
                        "ofi_provider", "nccl_version", "lines", "nccl_lines", "malformed_lines"}) {
    EXPECT_TRUE(s.contains(k)) << k;
  }
  EXPECT_EQ(s["lines"], 5);
}

TEST(AnalyzerTest, JsonSurvivesInvalidUtf8) {
  Report r = Analyze(
      {"h\xff:1:2 [0] misc/x.cc:1 NCCL WARN bad \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 end"});
  std::string out = ReportToJson(r).dump();
  EXPECT_NE(out.find("bad \xEF\xBF\xBD("), std::string::npos) << out;
}

}  // namespace
}  // namespace efawatch::nccl
