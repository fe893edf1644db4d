// SPDX-License-Identifier: Apache-2.0
// The design that keeps `efawatch analyze` near grep speed, held deterministically: on every log
// shape bench/analyze.sh times (bench/gen_shapes.py), the lines FeedLines() hands to the per-line
// path are the NCCL-bearing ones plus a small bounded slack. A change that widens the slow path
// (a needle that matches ordinary chatter, an envelope whose every line looks like a candidate)
// fails here whatever the machine's speed; the benchmark measures what it costs.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "lib/nccl/analyzer.h"

namespace efawatch::nccl {
namespace {

// Lines each of the NCCL lines below is followed by: one line in fifty is NCCL's.
constexpr int kChatterPerRecord = 49;
constexpr int kRecords = 120;
// What the scan may hand over besides the NCCL lines: the line after one whose record was cut
// (none here), a first line. Not a share of the chatter.
constexpr uint64_t kSlack = 4;

// Its own constant: joined literals inside the array below read as a missing comma.
constexpr const char* kInitComplete =
    "comm 0x55d0a1b2c3d0 rank 3 nranks 16 cudaDev 3 nvmlDev 3 busId 101c0 commId "
    "0x1234abcd5678ef90 - Init COMPLETE";

std::string Record(int i) {
  static const char* const kMessages[] = {
      "Bootstrap : Using ens32:10.1.0.11<0>",
      "NET/OFI Selected Provider is efa (found 4 nics)",
      "Channel 00/0 : 0[0] -> 1[0] [send] via NET/AWS Libfabric/0/GDRDMA",
      kInitComplete,
      "Using network AWS Libfabric",
  };
  char buf[320];
  std::snprintf(buf, sizeof(buf), "gpu-node-%03d:%d:%d [%d] NCCL INFO %s", i % 2, 10000 + i % 16,
                10040 + i % 16, i % 8, kMessages[i % 5]);
  return buf;
}

std::string Plain(int n, int k) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "step %d loss 0.%04d lr 3e-4 tokens/s 181234 mem 61.2GiB", n, k);
  return buf;
}

std::string Trainer(int n, int k) {
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                "{'loss': 1.%04d, 'grad_norm': 0.%d, 'learning_rate': 3e-05, 'epoch': %d.%02d}", k,
                n % 1000, n % 7, k);
  return buf;
}

std::string Time(size_t n) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "2025-03-04T05:06:07.%09zuZ", n % 1000000000);
  return buf;
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

using Envelope = std::function<std::string(const std::string&, size_t)>;

struct Shape {
  const char* name;
  bool trainer = false;     // Trainer's dicts as the chatter
  bool dict_first = false;  // the first line is a dict, not the NCCL line
  bool all_nccl = false;    // no chatter
  Envelope wrap;            // around every line (the line, its 0-based index)
};

std::vector<Shape> Shapes() {
  auto same = [](const std::string& l, size_t) { return l; };
  return {
      {"all-nccl", false, false, true, same},
      {"chatty", false, false, false, same},
      {"trainer", true, false, false, same},
      {"trainer-dict", true, true, false, same},
      {"cri", false, false, false,
       [](const std::string& l, size_t n) { return Time(n) + " stdout F " + l; }},
      {"docker-json", false, false, false,
       [](const std::string& l, size_t n) {
         return "{\"log\":\"" + JsonEscape(l) + "\\n\",\"stream\":\"stdout\",\"time\":\"" +
                Time(n) + "\"}";
       }},
      {"kubectl-ts", false, false, false,
       [](const std::string& l, size_t n) { return Time(n) + " " + l; }},
      {"kubectl-prefix", false, false, false,
       [](const std::string& l, size_t) { return "[pod/train-worker-0/ray-worker] " + l; }},
      {"ray", false, false, false,
       [](const std::string& l, size_t) { return "(RayTrainWorker pid=4242, ip=10.0.0.5) " + l; }},
      {"mpi", false, false, false,
       [](const std::string& l, size_t n) {
         return "[1," + std::to_string(n % 2) + "]<stdout>:" + l;
       }},
      {"crlf", false, false, false, [](const std::string& l, size_t) { return l + "\r"; }},
      {"ansi", false, false, false,
       [](const std::string& l, size_t) { return "\x1b[36m" + l + "\x1b[0m"; }},
      {"compose", false, false, false,
       [](const std::string& l, size_t) { return "worker-1  | " + l; }},
      {"syslog", false, false, false,
       [](const std::string& l, size_t) { return "Dec  5 04:00:00 node1 python[123]: " + l; }},
      {"stern", false, false, false,
       [](const std::string& l, size_t) { return "train-worker-0 ray-worker " + l; }},
      {"pylog", false, false, false,
       [](const std::string& l, size_t) { return "2025-03-04 05:06:07,123 - INFO - " + l; }},
      {"tab", false, false, false, [](const std::string& l, size_t) { return "\t" + l; }},
      {"bom", false, false, false,
       [](const std::string& l, size_t n) { return n == 0 ? "\xEF\xBB\xBF" + l : l; }},
  };
}

// The shape's log and how many of its lines hold an NCCL record.
std::string Generate(const Shape& s, uint64_t* nccl_lines) {
  std::vector<std::string> lines;
  for (int i = 0; i < kRecords; ++i) {
    if (!s.dict_first) lines.push_back(Record(i));
    for (int k = 0; !s.all_nccl && k < kChatterPerRecord; ++k) {
      lines.push_back(s.trainer ? Trainer(i, k) : Plain(i, k));
    }
    if (s.dict_first) lines.push_back(Record(i));
  }
  std::string text;
  for (size_t n = 0; n < lines.size(); ++n) text += s.wrap(lines[n], n) + "\n";
  *nccl_lines = kRecords;
  return text;
}

TEST(SlowPathTest, HandsOnlyNcclLinesToTheParserOnEveryBenchShape) {
  for (const Shape& s : Shapes()) {
    SCOPED_TRACE(s.name);
    uint64_t nccl = 0;
    const std::string text = Generate(s, &nccl);
    Analyzer a;
    // Blocks of 256 KiB at line starts, as `efawatch analyze` feeds a mapped file.
    uint64_t line_no = 0;
    for (size_t start = 0; start < text.size();) {
      size_t end = std::min(text.size(), start + (256u << 10));
      end = text.rfind('\n', end - 1) + 1;
      line_no +=
          a.FeedLines(s.name, line_no + 1, std::string_view(text).substr(start, end - start));
      start = end;
    }
    const Counters& c = a.counters();
    EXPECT_EQ(c.lines, line_no);
    EXPECT_EQ(c.nccl_lines, nccl);  // every NCCL line still found
    EXPECT_GE(c.slow_path_lines, nccl);
    EXPECT_LE(c.slow_path_lines, nccl + kSlack)
        << "the block scan hands " << c.slow_path_lines - nccl << " lines of chatter to the parser";
  }
}

}  // namespace
}  // namespace efawatch::nccl
