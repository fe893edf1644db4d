// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/record_scanner.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace efawatch::nccl {
namespace {

std::vector<Record> Scan(std::string_view line) {
  std::vector<Record> out;
  FindRecords(line, &out);
  return out;
}

TEST(RecordScannerTest, ParsesInfoPrefix) {
  auto r = Scan("ip-10-0-0-1:4101:4190 [3] NCCL INFO Using network Socket");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].host, "ip-10-0-0-1");
  EXPECT_EQ(r[0].proc_key, "ip-10-0-0-1:4101");
  EXPECT_EQ(r[0].pid, 4101u);
  EXPECT_EQ(r[0].dev, 3);
  EXPECT_EQ(r[0].level, Level::kInfo);
  EXPECT_FALSE(r[0].legacy);
  EXPECT_EQ(r[0].message, "Using network Socket");
}

TEST(RecordScannerTest, ParsesWarnWithFileLocation) {
  auto r = Scan("vm2:15364:15376 [0] transport/net_ib.cc:1192 NCCL WARN NET/IB : Got completion");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].level, Level::kWarn);
  EXPECT_EQ(r[0].host, "vm2");
  EXPECT_EQ(r[0].location, "transport/net_ib.cc:1192");
  EXPECT_EQ(r[0].message, "NET/IB : Got completion");
}

TEST(RecordScannerTest, ParsesWarnWithCxxSignatureAndNoHost) {
  auto r = Scan("[0] tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN rx ctrl timeout");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].host.empty());
  EXPECT_EQ(r[0].location, "tcpxResult_t tcpxCommProgress(tcpxComm*):1231");
  auto bare = Scan("tcpxResult_t tcpxCommProgress(tcpxComm*):1231 NCCL WARN rx ctrl timeout");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(bare[0].location, "tcpxResult_t tcpxCommProgress(tcpxComm*):1231");
}

TEST(RecordScannerTest, ReadsRecordsWhosePrefixIsGone) {
  const std::string_view line =
      "NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/AWS Libfabric/0/GDRDMA";
  auto r = Scan(line);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].host.empty());
  EXPECT_TRUE(r[0].proc_key.empty());
  EXPECT_EQ(r[0].pid, 0u);
  EXPECT_EQ(r[0].dev, -1);
  EXPECT_EQ(r[0].level, Level::kInfo);
  EXPECT_EQ(r[0].message, "Channel 00/0 : 0[0] -> 1[1] [send] via NET/AWS Libfabric/0/GDRDMA");
  EXPECT_EQ(r[0].full, line);

  auto indented = Scan("  NCCL INFO NET/OFI Selected Provider is efa ");
  ASSERT_EQ(indented.size(), 1u);
  EXPECT_EQ(indented[0].message, "NET/OFI Selected Provider is efa");
  EXPECT_EQ(indented[0].full, "NCCL INFO NET/OFI Selected Provider is efa");

  auto warn = Scan("NCCL WARN NET/Socket : peer 10.0.0.2<4> message truncated");
  ASSERT_EQ(warn.size(), 1u);
  EXPECT_EQ(warn[0].level, Level::kWarn);
  EXPECT_TRUE(warn[0].location.empty());
  EXPECT_EQ(warn[0].message, "NET/Socket : peer 10.0.0.2<4> message truncated");

  // A prefixed record after it on the same line (a terminal copy) ends it.
  auto two = Scan("NCCL INFO Using network Socket h:1:2 [0] NCCL INFO Using network IB");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].message, "Using network Socket");
  EXPECT_EQ(two[1].host, "h");

  // Only at the start of a line: elsewhere the words are text about NCCL.
  EXPECT_TRUE(Scan("see the NCCL INFO lines below").empty());
  EXPECT_TRUE(Scan("NCCL INFOS").empty());
}

TEST(RecordScannerTest, ParsesWarnWithTimestampAndFunction) {
  auto r = Scan(
      "[2025-10-16 22:16:08] ip-172-31-3-90:1929:1937 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN "
      "NET/OFI something");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].host, "ip-172-31-3-90");
  EXPECT_EQ(r[0].location, "nccl_net_ofi_rdma_init:7978");
  auto head = Scan("host:1:2 [0] init.cc:10 (ncclCommInitRank) NCCL WARN boom");
  ASSERT_EQ(head.size(), 1u);
  EXPECT_EQ(head[0].location, "init.cc:10 (ncclCommInitRank)");
}

TEST(RecordScannerTest, FindsRecordsAfterLauncherPrefixes) {
  for (const char* line : {
           "[1,23]<stdout>:gpu6:1408:1597 [1] NCCL INFO x",
           "(RayTrainWorker pid=83498) gpu6:1408:1597 [1] NCCL INFO x",
           "(pid=21775, ip=10.221.0.5) gpu6:1408:1597 [1] NCCL INFO x",
           "[0] gpu6:1408:1597 [1] NCCL INFO x",
           "[rank0]: gpu6:1408:1597 [1] NCCL INFO x",
           "[trainer0|0]:gpu6:1408:1597 [1] NCCL INFO x",
           "gpu6: gpu6:1408:1597 [1] NCCL INFO x",
           "451 gpu6:1408:1597 [1] NCCL INFO x",
           "        gpu6:1408:1597 [1] NCCL INFO x",
       }) {
    auto r = Scan(line);
    ASSERT_EQ(r.size(), 1u) << line;
    EXPECT_EQ(r[0].host, "gpu6") << line;
    EXPECT_EQ(r[0].pid, 1408u) << line;
    EXPECT_EQ(r[0].message, "x") << line;
  }
}

TEST(RecordScannerTest, KeepsOddHostNames) {
  auto r = Scan("<cluster_name>:924:924 [5] NCCL INFO cudaDriverVersion 12010");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].host, "<cluster_name>");
  r = Scan("5873af64cf59:1:1245 [0] NCCL INFO y");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].host, "5873af64cf59");
}

TEST(RecordScannerTest, FindsSeveralRecordsOnOneLine) {
  auto r = Scan(
      "via NET/IBext/6/GDRDMA      VM-1:11985:12554 [7] NCCL INFO Channel 01/0 : 7[7] -> 15[7] "
      "[send] via NET/IBext/7/GDRDMA          VM-1:11979:12555 [1] NCCL INFO Chan");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].message, "Channel 01/0 : 7[7] -> 15[7] [send] via NET/IBext/7/GDRDMA");
  EXPECT_EQ(r[1].pid, 11979u);
  EXPECT_EQ(r[1].message, "Chan");
}

TEST(RecordScannerTest, DropsConsoleDuplicates) {
  auto r = Scan(
      "h:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0> | h:79:79 [0] NCCL INFO "
      "Bootstrap : Using eth0:10.0.0.1<0>");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].message, "Bootstrap : Using eth0:10.0.0.1<0>");
}

TEST(RecordScannerTest, ParsesLegacyRecordsWithoutNcclToken) {
  auto r = Scan("gpu-bql:18553:18553 [0] INFO NET : Using interface enp3s0:192.168.144.103<0>");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].legacy);
  EXPECT_EQ(r[0].message, "NET : Using interface enp3s0:192.168.144.103<0>");
  r = Scan("gpu-bql:18553:18611 [0] include/socket.h:360 WARN Call to connect failed");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].level, Level::kWarn);
  EXPECT_EQ(r[0].location, "include/socket.h:360");
}

TEST(RecordScannerTest, IgnoresLookalikes) {
  EXPECT_TRUE(Scan("2019-02-11 09:47:49,051 46393 INFO     Wrapping distributed manually").empty());
  EXPECT_TRUE(Scan("grep 'NCCL INFO' job.log | wc -l").empty());
  EXPECT_TRUE(Scan("NCCL version 2.19.3+cuda12.3").empty());
  EXPECT_TRUE(Scan("").empty());
  EXPECT_TRUE(Scan("NCCL ").empty());
  EXPECT_TRUE(Scan("] INFO ").empty());
  EXPECT_TRUE(Scan(":1:2 [0] NCCL INFO").size() <= 1);
}

TEST(RecordScannerTest, FindsVersionBanner) {
  std::string_view v, cuda;
  ASSERT_TRUE(FindVersionBanner("[1,0]<stdout>:NCCL version 2.5.6+cuda10.2", &v, &cuda));
  EXPECT_EQ(v, "2.5.6");
  EXPECT_EQ(cuda, "10.2");
  ASSERT_TRUE(FindVersionBanner("NCCL version 2.5.7+cudaCUDA_MAJOR.CUDA_MINOR", &v, &cuda));
  EXPECT_EQ(v, "2.5.7");
  EXPECT_EQ(cuda, "CUDA_MAJOR.CUDA_MINOR");
  EXPECT_FALSE(FindVersionBanner("NCCL error in: x, NCCL version 2.14.3", &v, &cuda));
  EXPECT_FALSE(FindVersionBanner("NCCL version x", &v, &cuda));
}

// The forward prefix parser reads host names eight bytes at a time: every length around the
// word size, and each byte that ends a host name, must give the same record as a byte loop.
TEST(RecordScannerTest, HostNamesOfEveryLengthAroundTheWordSize) {
  for (size_t len = 1; len <= 40; ++len) {
    std::string host;
    for (size_t i = 0; i < len; ++i) host += static_cast<char>('a' + i % 26);
    const std::string line = host + ":1234567:89 [7] NCCL INFO Using network IB";
    auto r = Scan(line);
    ASSERT_EQ(r.size(), 1u) << line;
    EXPECT_EQ(r[0].host, host);
    EXPECT_EQ(r[0].proc_key, host + ":1234567");
    EXPECT_EQ(r[0].pid, 1234567u);
    EXPECT_EQ(r[0].dev, 7);
    EXPECT_EQ(r[0].message, "Using network IB");
  }
  // A blank or '|' inside what would be the host name: the record starts after it.
  for (const char stop : {' ', '\t', '|'}) {
    const std::string line =
        std::string("wrapper") + stop + "node-1:42:43 [0] NCCL INFO Using network IB";
    auto r = Scan(line);
    ASSERT_EQ(r.size(), 1u) << line;
    EXPECT_EQ(r[0].host, "node-1");
    EXPECT_EQ(r[0].pid, 42u);
  }
}

// pid, tid (checked, not kept) and [dev] of every length: the eight-bytes-at-once digit
// parser and its byte-loop fallback (eight digits or more, or a line ending within eight bytes)
// must agree.
TEST(RecordScannerTest, PrefixNumbersOfEveryLength) {
  const std::string digits = "9876543210";
  for (size_t pl = 1; pl <= 9; ++pl) {
    for (size_t dl = 1; dl <= 7; ++dl) {
      const std::string pid = digits.substr(0, pl);
      const std::string tid = digits.substr(10 - pl);
      const std::string dev = std::string("1234567").substr(0, dl);
      for (const std::string tail : {" NCCL INFO Using network IB", " NCCL INFO"}) {
        const std::string line = "node-7:" + pid + ":" + tid + " [" + dev + "]" + tail;
        auto r = Scan(line);
        ASSERT_EQ(r.size(), 1u) << line;
        EXPECT_EQ(r[0].pid, std::stoul(pid)) << line;
        EXPECT_EQ(r[0].dev, std::stoi(dev)) << line;
        EXPECT_EQ(r[0].proc_key, "node-7:" + pid);
      }
    }
  }
  // Ten digits fit a pid only up to 4294967295.
  auto r = Scan("h:4294967295:1 [0] NCCL INFO x");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].pid, 4294967295u);
}

// A second record on the line is found wherever it starts relative to the 16-byte steps of the
// marker search, past look-alikes ("NCCL_", "NxxL ", "NCCLX").
TEST(RecordScannerTest, FindsTheNextRecordAtEveryOffset) {
  for (size_t pad = 0; pad <= 48; ++pad) {
    const std::string first = "h:1:2 [0] NCCL INFO NCCL_X=1 NxxL NCCLX " + std::string(pad, 'x');
    const std::string line = first + " node-b:3:4 [1] NCCL INFO Using network IB";
    auto r = Scan(line);
    ASSERT_EQ(r.size(), 2u) << line;
    EXPECT_EQ(r[0].pid, 1u);
    EXPECT_EQ(r[1].pid, 3u);
    EXPECT_EQ(r[1].host, "node-b");
    EXPECT_EQ(r[1].message, "Using network IB");
  }
}

}  // namespace
}  // namespace efawatch::nccl

namespace efawatch::nccl {
namespace {

// The fast prefix parser's SSE2 pass (lines of 48 bytes or more) answers as the scalar parser
// does: the same message start and fields, or the same refusal. Prefixes are built from host
// names of every length around the 48-byte span, numbers of 0-12 digits and the bytes that end
// or break a field.
TEST(RecordScannerTest, VectorPrefixParserAgreesWithScalar) {
  std::mt19937 rng(48);
  const std::string host_bytes = "abz-.09:| \t";
  const std::vector<std::string> after_dev = {"] NCCL INFO ",  "] NCCL INFO",  "] NCCL WARN ",
                                              "]  NCCL INFO ", "] NCCL INFOx", ") NCCL INFO "};
  auto digits = [&](size_t n) {
    std::string d;
    for (size_t i = 0; i < n; ++i) d += static_cast<char>('0' + rng() % 10);
    return d;
  };
  size_t accepted = 0;
  for (int round = 0; round < 50000; ++round) {
    std::string line;
    const size_t host_len = rng() % 50;
    for (size_t i = 0; i < host_len; ++i) {
      // Mostly name bytes, now and then a byte that ends a host name.
      line += host_bytes[rng() % 8 == 0 ? rng() % host_bytes.size() : rng() % 7];
    }
    line += rng() % 16 == 0 ? ";" : ":";
    line += digits(rng() % 4 == 0 ? rng() % 13 : 1 + rng() % 8);
    line += rng() % 16 == 0 ? " " : ":";
    line += digits(rng() % 4 == 0 ? rng() % 13 : 1 + rng() % 8);
    line += rng() % 16 == 0 ? "[" : " [";
    line += digits(rng() % 4 == 0 ? rng() % 10 : 1 + rng() % 2);
    line += after_dev[rng() % 8 < 5 ? 0 : rng() % after_dev.size()];
    line += std::string(rng() % 40, 'm');
    Record vec, scalar;
    const size_t a = internal::ParseInfoPrefix(line, &vec, true);
    const size_t b = internal::ParseInfoPrefix(line, &scalar, false);
    ASSERT_EQ(a, b) << line;
    if (a == std::string_view::npos) continue;
    ++accepted;
    ASSERT_EQ(vec.host, scalar.host) << line;
    ASSERT_EQ(vec.proc_key, scalar.proc_key) << line;
    ASSERT_EQ(vec.pid, scalar.pid) << line;
    ASSERT_EQ(vec.dev, scalar.dev) << line;
  }
  EXPECT_GT(accepted, 5000u);
}

TEST(RecordScannerTest, VectorPrefixParserReadsLongNumbers) {
  Record r;
  const std::string line = "h:12345678:99999999 [7] NCCL INFO " + std::string(40, 'x');
  ASSERT_NE(internal::ParseInfoPrefix(line, &r, true), std::string_view::npos);
  EXPECT_EQ(r.pid, 12345678u);
  EXPECT_EQ(r.dev, 7);
  // Nine and ten digits go to the scalar parser; eleven are refused.
  const std::string ten = "h:123456789:4294967295 [0] NCCL INFO " + std::string(40, 'x');
  ASSERT_NE(internal::ParseInfoPrefix(ten, &r, true), std::string_view::npos);
  EXPECT_EQ(r.pid, 123456789u);
  EXPECT_EQ(
      internal::ParseInfoPrefix("h:12345678901:1 [0] NCCL INFO " + std::string(40, 'x'), &r, true),
      std::string_view::npos);
  // The thread id is not kept, but a line whose tid is no number of at most ten digits is no
  // record prefix.
  EXPECT_EQ(
      internal::ParseInfoPrefix("h:1:12345678901 [0] NCCL INFO " + std::string(40, 'x'), &r, true),
      std::string_view::npos);
  EXPECT_EQ(internal::ParseInfoPrefix("h:1: [0] NCCL INFO " + std::string(40, 'x'), &r, true),
            std::string_view::npos);
}

}  // namespace
}  // namespace efawatch::nccl
