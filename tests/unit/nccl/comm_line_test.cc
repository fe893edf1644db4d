// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/comm_line.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "lib/nccl/record_scanner.h"
#include "tests/unit/nccl/nccl_test_util.h"

namespace efawatch::nccl {
using testing::FixtureDir;
}

namespace efawatch::nccl {
namespace {

void ExpectSame(const CommLine& got, const CommLine& want, std::string_view m) {
  EXPECT_EQ(got.ptr, want.ptr) << m;
  EXPECT_EQ(got.comm_id, want.comm_id) << m;
  EXPECT_EQ(got.bus_id, want.bus_id) << m;
  EXPECT_EQ(got.rank, want.rank) << m;
  EXPECT_EQ(got.nranks, want.nranks) << m;
  EXPECT_EQ(got.nnodes, want.nnodes) << m;
  EXPECT_EQ(got.cuda_dev, want.cuda_dev) << m;
  EXPECT_EQ(got.local_ranks, want.local_ranks) << m;
  EXPECT_EQ(got.start, want.start) << m;
  EXPECT_EQ(got.complete, want.complete) << m;
  EXPECT_EQ(got.abort, want.abort) << m;
}

// Both parsers on `m`, checked against each other; returns the result (views into `m`).
CommLine Parse(std::string_view m) {
  const CommLine got = ParseCommLine(m);
  ExpectSame(got, internal::ParseCommLineByTokens(m), m);
  return got;
}

TEST(CommLineTest, InitLines) {
  CommLine c = Parse(
      "ncclCommInitRank comm 0x55d0c0a1b2c0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 53000 "
      "commId 0x1f2e3d4c5b6a7980 - Init START");
  EXPECT_EQ(c.ptr, "0x55d0c0a1b2c0");
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.nranks, 16);
  EXPECT_EQ(c.cuda_dev, 3);
  EXPECT_EQ(c.bus_id, "53000");
  EXPECT_EQ(c.comm_id, "0x1f2e3d4c5b6a7980");
  EXPECT_TRUE(c.start);
  EXPECT_FALSE(c.complete);

  c = Parse("comm 0x5610a0b1c2d0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0");
  EXPECT_EQ(c.nranks, 16);
  EXPECT_EQ(c.nnodes, 2);
  EXPECT_EQ(c.local_ranks, 8);
  EXPECT_EQ(c.comm_id, "");

  c = Parse("comm 0x560000001000 rank 5 nranks 16 cudaDev 0 busId 7000 - Init COMPLETE");
  EXPECT_TRUE(c.complete);
  EXPECT_FALSE(c.abort);
  c = Parse("comm 0x7f00aa000000 rank 1 nranks 2 - COMPLETE");
  EXPECT_TRUE(c.complete);
  c = Parse("comm 0x5500ff001000 rank 3 nranks 4 cudaDev 3 busId 9b000 - Abort COMPLETE");
  EXPECT_TRUE(c.abort);
  EXPECT_FALSE(c.complete);

  c = Parse("rank 0 nranks 4");  // NCCL 2.3
  EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(c.nranks, 4);
  EXPECT_EQ(c.ptr, "");
}

TEST(CommLineTest, FirstCommAndFirstNumericRankWinLastOtherValue) {
  CommLine c = Parse("comm 0xa rank x rank 7 rank 9 comm 0xb nranks 4 nranks 8\tbusId  1 busId 2");
  EXPECT_EQ(c.ptr, "0xa");
  EXPECT_EQ(c.rank, 7);
  EXPECT_EQ(c.nranks, 8);
  EXPECT_EQ(c.bus_id, "2");
  // A key's value is never read as a status; a status after a spent key is.
  c = Parse("comm START rank 1 nranks 2 comm STARTED");
  EXPECT_EQ(c.ptr, "START");
  EXPECT_TRUE(c.start);
  EXPECT_FALSE(Parse("busId START rank 1").start);
}

// Every communicator line of the fixtures, as the analyzer sees them.
TEST(CommLineTest, AgreesWithTheTokenParserOnTheFixtures) {
  size_t seen = 0;
  std::vector<Record> records;
  for (const auto& e : std::filesystem::directory_iterator(FixtureDir())) {
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      FindRecords(line, &records);
      for (const Record& r : records) {
        const std::string m(r.message);
        if (m.rfind("comm ", 0) == 0 || m.rfind("ncclComm", 0) == 0 || m.rfind("rank ", 0) == 0) {
          Parse(m);
          ++seen;
        }
      }
    }
  }
  EXPECT_GE(seen, 50u);
}

// Random messages from the keys, statuses, numbers and odd tokens of these lines, with single
// and repeated blanks, short and long (past the vector pass's 192 bytes and the 512-byte cut).
TEST(CommLineTest, AgreesWithTheTokenParserOnRandomMessages) {
  const std::vector<std::string> vocab = {
      "comm", "rank", "nranks", "nRanks", "nNodes", "cudaDev", "busId", "commId", "Abort", "Init",
      "-", "localRanks", "localRank", "START", "STARTS", "COMPLETE", "COMPLETED", "0x55d0c0a1b2c0",
      "7", "16", "1e0", "x", "nvmlDev", "MNNVL", "localRanksX", "ncclCommInitRank", "comm0",
      "99999999999",
      // a key's length and first eight bytes, not the key
      "localRankz", "localRan",
      // tokens spanning two and three of the vector pass's 64-byte words
      std::string(70, '7'), "0x" + std::string(140, 'f')};
  std::mt19937 rng(2026);
  for (int round = 0; round < 20000; ++round) {
    std::string m;
    const int tokens = static_cast<int>(rng() % 90);
    for (int t = 0; t < tokens; ++t) {
      const unsigned blanks = rng() % 8 == 0 ? 1 + rng() % 3 : (t == 0 ? 0 : 1);
      for (unsigned b = 0; b < blanks; ++b) m += rng() % 4 == 0 ? '\t' : ' ';
      m += vocab[rng() % vocab.size()];
    }
    if (rng() % 3 == 0) m += ' ';
    Parse(m);
    if (HasFailure()) break;
  }
}

// The shape memory: lines of a few shapes with other numbers, interleaved, more shapes than it
// keeps, some lines with a number replaced by a word or a blank added (same shape text, other
// tokens): every result as the token parser's, and most lines read by a remembered shape.
TEST(CommLineTest, ShapeMemoryAgreesWithTheTokenParser) {
  const std::vector<std::string> templates = {
      "ncclCommInitRank comm # rank # nranks # cudaDev # nvmlDev # busId # commId # - Init START",
      "comm # rank # nranks # cudaDev # nvmlDev # busId # commId # - Init COMPLETE",
      "comm # rank # nRanks # nNodes # localRanks # localRank # MNNVL #",
      "comm # rank # nranks # cudaDev # busId # - Abort COMPLETE",
      "comm # rank # nranks # - COMPLETE",
      "comm # rank # nranks # cudaDev # busId # - Init COMPLETE [repeated #x across cluster]",
      "rank # nranks # comm # rank # busId #",
      "comm (nil) rank # nranks # cudaDev # busId # - Init COMPLETE",
      "comm # rank x rank # nranks # nranks #\tbusId  # - Init START",
      "ncclCommInitRankConfig comm # rank # nranks # busId # commId # - Init START",
      "Init COMPLETE comm # rank # nranks # localRanks # nNodes # cudaDev # busId # commId #"};
  const std::vector<std::string> numbers = {
      "0",     "7",     "16", "1024",        "0x55d0c0a1b2c0",
      "53000", "1a000", "2x", "99999999999", "0x1f2e3d4c5b6a7980",
      "9b000", "3"};
  // A number spanning three of the vector pass's 64-byte words, now and then.
  const std::string long_number = "1" + std::string(130, 'a');
  std::mt19937 rng(7);
  CommLineParser parser;
  for (int round = 0; round < 20000; ++round) {
    // Mostly two shapes at a time, as in a log; now and then any of them.
    const size_t t = rng() % 10 < 8 ? (round / 500) % 2 : rng() % templates.size();
    std::string m;
    for (char ch : templates[t]) {
      if (ch != '#') {
        m += ch;
      } else if (rng() % 50 == 0) {
        m += rng() % 2 == 0 ? "x7" : "7 7";  // not a number / two tokens
      } else {
        m += rng() % 200 == 0 ? long_number : numbers[rng() % numbers.size()];
      }
    }
    if (rng() % 100 == 0) m += ' ';
    ExpectSame(parser.Parse(m), internal::ParseCommLineByTokens(m), m);
    if (HasFailure()) break;
  }
#if defined(__SSE2__)
  EXPECT_GT(parser.hits(), 12000u);
#endif
}

// A line as long as the last one of its shape is compared with it byte for byte: it may differ
// only inside numbers, and not by a blank (which splits a token) or a first byte that is no
// digit (a word, not a number).
TEST(CommLineTest, ShapeMemoryComparesSameLengthLinesByteForByte) {
  CommLineParser parser;
  for (const char* m : {
           "comm 0x7f00aa000000 rank 12 nranks 16 cudaDev 4 busId 1a000 - Init START",
           "comm 0x7f00aa000100 rank 13 nranks 16 cudaDev 5 busId 1b000 - Init START",
           "comm 0x7f00aa000100 rank 13 nranks 16 cudaDev 5 busId 1 000 - Init START",
           "comm 0x7f00aa000100 rank 13 nranks 16 cudaDev 5 busId 1b000 - Init START",
           "comm 0x7f00aa0001 0 rank 13 nranks 16 cudaDev 5 busId 1b000 - Init START",
           "comm 0x7f00aa000100 rank 13 nranks 16 cudaDev 5 busId 1b000 - Init START",
           "comm 0x7f00aa000100 rank x3 nranks 16 cudaDev 5 busId 1b000 - Init START",
           "comm 0x7f00aa000100 rank 14 nranks 16 cudaDev 5 busId 1b000 - Init START",
           "comm 0x7f00aa000100 rank 14 nranks 16 cudaDev 5 busId 1b000 - Init STARX",
           "comm 0x7f00aa000100 rank 15 nranks 16 cudaDev 5 busId 1b000 - Init START",
           "comm 0x7f00aa000100 rank 15 nranks 16 cudaDev 5 busId\t1b000 - Init START",
       }) {
    ExpectSame(parser.Parse(m), internal::ParseCommLineByTokens(m), m);
  }
#if defined(__SSE2__)
  EXPECT_GE(parser.hits(), 3u);
#endif
}

}  // namespace
}  // namespace efawatch::nccl
