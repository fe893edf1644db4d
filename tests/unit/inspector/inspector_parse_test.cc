// SPDX-License-Identifier: Apache-2.0
// The NCCL Inspector's two formats as this reader takes them: JSON Lines records of format v4.0
// (and the fields it knows of other versions), Prometheus-mode textfiles, the message-size
// buckets, the bounded communicator table, and the bandwidth each instance type should give.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lib/common/instance_types.h"
#include "lib/common/number.h"
#include "lib/inspector/record.h"
#include "lib/inspector/start_lines.h"
#include "lib/inspector/stats.h"
#include "tests/support/subprocess.h"

namespace efawatch::inspector {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(testing::SourceDir() + "/tests/fixtures/inspector/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

constexpr char kRecord[] =
    R"({"header":{"id":"0x7F8C496AE9F661","rank":2,"n_ranks":8,"nnodes":1},)"
    R"("metadata":{"inspector_output_format_version":"v4.0","git_rev":"","rec_mechanism":)"
    R"("profiler_plugin","dump_timestamp_us":1748030377748202,"hostname":"w-0","pid":1639},)"
    R"("coll_perf":{"coll":"AllReduce","coll_sn":1407,"coll_msg_size_bytes":17179869184,)"
    R"("coll_exec_time_us":61974,"coll_algobw_gbs":277.210914,"coll_busbw_gbs":485.119099}})";

TEST(InspectorParseTest, ReadsAV4CollectiveRecord) {
  InspectorOp op;
  ASSERT_EQ(ParseJsonLine(kRecord, &op), LineKind::kOp);
  EXPECT_EQ(op.comm_id, "0x7f8c496ae9f661") << "lower case, as NCCL prints its commId";
  EXPECT_EQ(op.rank, 2);
  EXPECT_EQ(op.n_ranks, 8);
  EXPECT_EQ(op.nnodes, 1);
  EXPECT_EQ(op.kind, OpKind::kCollective);
  EXPECT_EQ(op.op, "AllReduce");
  EXPECT_EQ(op.msg_size_bytes, 17179869184u);
  EXPECT_DOUBLE_EQ(op.exec_time_us, 61974);
  EXPECT_DOUBLE_EQ(op.busbw_gbs, 485.119099);
  EXPECT_EQ(op.sn, 1407);
  EXPECT_EQ(op.hostname, "w-0");
  EXPECT_EQ(op.pid, 1639);
  EXPECT_TRUE(LooksLikeInspectorJson(kRecord));
}

// What the plugin's own JSON writer produces (ext-profiler/inspector/json.cc): doubles as
// "%lf", NaN as the string "nan", '/' escaped, the verbose event traces nested in coll_perf, and
// an id of at most 14 hex digits ("0x%lx" into 17 bytes).
TEST(InspectorParseTest, ReadsThePluginsOwnFormatting) {
  constexpr char kVerbose[] =
      R"({"header":{"id":"0x1f2e3d4c5b6a79","rank":0,"n_ranks":16,"nnodes":2},)"
      R"("metadata":{"inspector_output_format_version":"v4.0","git_rev":"v2.28.9-1\/inspector",)"
      R"("rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":1764900000000001,)"
      R"("hostname":"job-a-0","pid":4242},"coll_perf":{"coll":"AllReduce","coll_sn":12,)"
      R"("coll_msg_size_bytes":268435456,"coll_exec_time_us":155344,"coll_timing_source":)"
      R"("kernel_gpu","coll_algobw_gbs":1.728000,"coll_busbw_gbs":3.240000,)"
      R"("event_trace_sn":{"coll_start_sn":1,"coll_stop_sn":9,"kernel_events":[{"channel_id":0,)"
      R"("kernel_start_sn":2,"kernel_stop_sn":7,"kernel_record_sn":8}]},"event_trace_ts":)"
      R"({"coll_start_ts":1,"coll_stop_ts":2,"kernel_events":[]}}})";
  InspectorOp op;
  ASSERT_EQ(ParseJsonLine(kVerbose, &op), LineKind::kOp);
  EXPECT_EQ(op.comm_id, "0x1f2e3d4c5b6a79");
  EXPECT_DOUBLE_EQ(op.busbw_gbs, 3.24);
  EXPECT_EQ(op.sn, 12);

  // A NaN bandwidth (the writer's "nan") is computed from size and time instead.
  std::string nan = kVerbose;
  nan.replace(nan.find("1.728000"), 8, R"("nan")");
  nan.replace(nan.find("3.240000"), 8, R"("nan")");
  ASSERT_EQ(ParseJsonLine(nan, &op), LineKind::kOp);
  EXPECT_NEAR(op.busbw_gbs, 268435456 / 155344e-6 / 1e9 * 2 * 15 / 16, 1e-6);

  // Neither bandwidth nor a time: no figure to count, so malformed (counted), not a zero.
  nan.replace(nan.find("155344"), 6, "0");
  EXPECT_EQ(ParseJsonLine(nan, &op), LineKind::kMalformed);
}

TEST(InspectorParseTest, EveryLineOfTheFixtureIsCountedOnce) {
  const std::string text = Fixture("job-a-0-pid4242.log");
  ASSERT_FALSE(text.empty());
  int ops = 0, other = 0, malformed = 0, blank = 0, p2p = 0;
  std::istringstream in(text);
  std::string line;
  double allreduce_256m_sum = 0;
  int allreduce_256m = 0;
  while (std::getline(in, line)) {
    InspectorOp op;
    switch (ParseJsonLine(line, &op)) {
      case LineKind::kOp:
        ++ops;
        break;
      case LineKind::kOpOtherVersion:
        ++other;
        break;
      case LineKind::kMalformed:
        ++malformed;
        continue;
      case LineKind::kBlank:
        ++blank;
        continue;
    }
    p2p += op.kind == OpKind::kP2p ? 1 : 0;
    if (op.op == "AllReduce" && SizeBucket(op.msg_size_bytes) == 7) {
      allreduce_256m_sum += op.busbw_gbs;
      ++allreduce_256m;
    }
    if (op.op == "Broadcast") {
      EXPECT_DOUBLE_EQ(op.busbw_gbs, 2.0) << "busbw from algbw, Broadcast's factor is 1";
    }
  }
  EXPECT_EQ(ops, 8);  // 3 + AllGather + small AllReduce + Send + verbose + Broadcast
  EXPECT_EQ(other, 1);
  EXPECT_EQ(malformed, 3) << "a cut record, a line of text, the partial last line";
  EXPECT_EQ(blank, 1);
  EXPECT_EQ(p2p, 1);
  EXPECT_EQ(allreduce_256m, 3);
  EXPECT_NEAR(allreduce_256m_sum / allreduce_256m, 3.2, 1e-9);
}

TEST(InspectorParseTest, MalformedRecordsAreRefusedWithoutThrowing) {
  for (
      const std::string bad : {
          "[1,2]",
          "{",
          "{}",
          R"({"header":1,"metadata":{}})",
          R"({"header":{"id":"zz"},"metadata":{},"coll_perf":{"coll":"AllReduce"}})",
          R"({"header":{"id":"0x1"},"metadata":{},"coll_perf":{"coll":"AllReduce"}})",
          R"({"header":{"id":"0x1"},"metadata":{},"coll_perf":{"coll":"AllReduce",)"
          R"("coll_msg_size_bytes":-5,"coll_busbw_gbs":1}})",
          R"({"header":{"id":"0x1"},"metadata":{},"coll_perf":{"coll":7,"coll_msg_size_bytes":1}})",
          R"({"header":{"id":"0x1"},"metadata":{},"coll_perf":{"coll":"AllReduce",)"
          R"("coll_msg_size_bytes":1e300,"coll_busbw_gbs":1}})",
          R"({"header":{"id":"0x123456789012345678901"},"metadata":{},"coll_perf":{"coll":"X",)"
          R"("coll_msg_size_bytes":1,"coll_busbw_gbs":1}})",
          "NCCL INFO comm 0x55ee rank 1 nranks 16 commId 0x7a - Init START",
      }) {
    SCOPED_TRACE(bad);
    InspectorOp op;
    EXPECT_EQ(ParseJsonLine(bad, &op), LineKind::kMalformed);
    EXPECT_FALSE(LooksLikeInspectorJson(bad));
  }
  InspectorOp op;
  EXPECT_EQ(ParseJsonLine("   ", &op), LineKind::kBlank);
}

TEST(InspectorParseTest, BusBwFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBwFactor("AllReduce", 16), 30.0 / 16);
  EXPECT_DOUBLE_EQ(BusBwFactor("AllGather", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBwFactor("ReduceScatter", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBwFactor("Broadcast", 8), 1);
  EXPECT_DOUBLE_EQ(BusBwFactor("Send", 2), 1);
  EXPECT_DOUBLE_EQ(BusBwFactor("AllReduce", -1), 1) << "unknown rank count: algbw as is";
}

TEST(InspectorParseTest, SizeBucketsArePowersOfFourFrom64KiB) {
  EXPECT_EQ(SizeBucketLabel(SizeBucket(0)), "<64KiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket((64 << 10) - 1)), "<64KiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(64 << 10)), "64KiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket((256 << 10) - 1)), "64KiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(1 << 20)), "1MiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(64ull << 20)), "64MiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(256ull << 20)), "256MiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(1ull << 30)), "1GiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(1ull << 40)), "1GiB") << "capped";
  EXPECT_EQ(SizeBucket(64ull << 20), kFirstLargeBucket);
}

TEST(InspectorParseTest, CommTableIsBoundedAndForgetsSilentCommunicators) {
  CommTable t(CommTable::Limits{.max_comms = 2, .max_keys_per_comm = 2});
  InspectorOp op;
  op.op = "AllReduce";
  op.msg_size_bytes = 256 << 20;
  op.busbw_gbs = 3.2;
  op.exec_time_us = 1000;
  for (const char* id : {"0x1", "0x2", "0x3"}) {
    op.comm_id = id;
    EXPECT_EQ(t.Add(op, 10), std::string(id) != "0x3");
  }
  op.comm_id = "0x1";
  op.msg_size_bytes = 1 << 20;
  EXPECT_TRUE(t.Add(op, 20));
  op.msg_size_bytes = 4 << 20;
  EXPECT_FALSE(t.Add(op, 20)) << "a third (collective, size) of one communicator";
  EXPECT_EQ(t.dropped(), 2u);
  const OpStats& s = t.comms().at("0x2").ops.at(OpKey{"AllReduce", 7});
  EXPECT_EQ(s.count, 1u);
  EXPECT_DOUBLE_EQ(s.busbw_sum_bytes_per_second, 3.2e9);
  EXPECT_DOUBLE_EQ(s.exec_seconds_sum, 1e-3);
  EXPECT_EQ(s.buckets[3], 1u) << "3.2 GB/s is in the (2, 4] GB/s bucket";
  t.DropSeenBefore(15);
  EXPECT_EQ(t.comms().size(), 1u);
  EXPECT_TRUE(t.comms().contains("0x1"));
}

TEST(InspectorParseTest, PromModeFileGivesOneOpPerBandwidthSample) {
  const PromFile f = ParsePromText(
      Fixture("nccl_inspector_metrics_GPU-0a1b2c3d-0000-1111-2222-333344445555.prom"));
  ASSERT_EQ(f.ops.size(), 2u);
  EXPECT_EQ(f.malformed, 1u);
  const InspectorOp& ar = f.ops[0];
  EXPECT_EQ(ar.comm_id, "0xabcdef01234567");
  EXPECT_EQ(ar.op, "AllReduce");
  EXPECT_EQ(ar.msg_size_bytes, 256ull << 20);
  EXPECT_DOUBLE_EQ(ar.busbw_gbs, 45.5);
  EXPECT_DOUBLE_EQ(ar.exec_time_us, 11062);
  EXPECT_EQ(ar.sn, 100);
  EXPECT_EQ(ar.n_ranks, 16);
  EXPECT_EQ(ar.hostname, "job-c-0");
  EXPECT_EQ(f.ops[1].op, "AllGather");
  EXPECT_DOUBLE_EQ(f.ops[1].exec_time_us, 0) << "no exec time sample for it";
  EXPECT_TRUE(ParsePromText("").ops.empty());
  EXPECT_EQ(ParsePromText("nccl_bus_bandwidth_gbs{comm_id=\"0x1\"} nan\n").malformed, 1u);
}

TEST(InspectorParseTest, MessageSizesInBinaryUnits) {
  EXPECT_EQ(ParseMessageSize("2.00GB"), 2ull << 30);
  EXPECT_EQ(ParseMessageSize("512.00KB"), 512u << 10);
  EXPECT_EQ(ParseMessageSize("1.5 MB"), 3u << 19);
  EXPECT_EQ(ParseMessageSize("8192"), 8192u);
  EXPECT_EQ(ParseMessageSize("lots"), 0u);
  EXPECT_EQ(ParseMessageSize("3 parsecs"), 0u);
}

TEST(InspectorParseTest, ExpectedBandwidthIsEfaCountTimesDeviceRate) {
  EXPECT_DOUBLE_EQ(common::ExpectedNetworkBytesPerSecond("p4d.24xlarge"), 50e9);    // 4 x 100 Gb/s
  EXPECT_DOUBLE_EQ(common::ExpectedNetworkBytesPerSecond("p5.48xlarge"), 400e9);    // 32 x 100
  EXPECT_DOUBLE_EQ(common::ExpectedNetworkBytesPerSecond("p5en.48xlarge"), 400e9);  // 16 x 200
  EXPECT_DOUBLE_EQ(common::ExpectedNetworkBytesPerSecond("g6.12xlarge"), 5e9);      // 1 x 40
  EXPECT_DOUBLE_EQ(common::ExpectedNetworkBytesPerSecond("m5.large"), 0);
  // Every type with an EFA count has a rate, and none without.
  for (const char* type :
       {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
        "p6-b200.48xlarge", "g6.12xlarge", "g6.48xlarge", "g6e.12xlarge", "g6e.24xlarge",
        "g6e.48xlarge", "trn1.32xlarge", "trn1n.32xlarge", "g5.8xlarge", "g5.48xlarge",
        "g6e.16xlarge", "trn2.48xlarge", "trn2u.48xlarge"}) {
    SCOPED_TRACE(type);
    EXPECT_GT(common::ExpectedEfaDevices(type), 0u);
    EXPECT_GT(common::ExpectedNetworkBytesPerSecond(type), 0);
  }
}

// NCCL >= 2.30.3 writes one aggregate per dump interval and (comm_name, collective or
// p2p_operation, size class, algo_proto): no comm_id, rank or op serial (docs/inspector.md).
TEST(InspectorParseTest, ReadsTheV51AggregatesOfNccl230) {
  const PromFile f =
      ParsePromText(Fixture("nccl_inspector_metrics_5e6f7a8b-1111-2222-3333-444455556666.prom"));
  EXPECT_EQ(f.malformed, 0u);
  EXPECT_EQ(f.empty, 1u) << "the Recv sample of bandwidth 0: an interval without a timed op";
  ASSERT_EQ(f.ops.size(), 6u);
  const InspectorOp& ar = f.ops[0];
  EXPECT_TRUE(ar.aggregated);
  EXPECT_EQ(ar.comm_id, "");
  EXPECT_EQ(ar.comm_name, "unknown");
  EXPECT_EQ(ar.op, "AllReduce");
  EXPECT_EQ(ar.kind, OpKind::kCollective);
  EXPECT_EQ(ar.msg_size_bytes, 256ull << 20) << "256-257MB: the class's lower bound";
  EXPECT_EQ(ar.algo_proto, "RING_SIMPLE");
  EXPECT_EQ(ar.gpu, "GPU0");
  EXPECT_EQ(ar.hostname, "raycluster-fsdp-worker-0") << "the node label: the pod's host name";
  EXPECT_EQ(ar.n_ranks, 16);
  EXPECT_EQ(ar.nnodes, 2);
  EXPECT_EQ(ar.sn, -1);
  EXPECT_DOUBLE_EQ(ar.busbw_gbs, 42.1875);
  EXPECT_DOUBLE_EQ(ar.exec_time_us, 11930.5);
  EXPECT_EQ(f.ops[1].algo_proto, "TREE_SIMPLE") << "same class, another algorithm: its own sample";
  EXPECT_DOUBLE_EQ(f.ops[1].exec_time_us, 13070) << "paired by all labels, algo_proto included";
  EXPECT_EQ(f.ops[3].msg_size_bytes, 1ull << 30);
  EXPECT_EQ(f.ops[4].comm_name, "tp");
  const InspectorOp& send = f.ops[5];
  EXPECT_EQ(send.kind, OpKind::kP2p);
  EXPECT_EQ(send.op, "Send") << "from p2p_operation";
  EXPECT_EQ(send.msg_size_bytes, 8ull << 20);
  EXPECT_DOUBLE_EQ(send.exec_time_us, 409.25);
  // Both generations at once (a node with jobs on 2.29 and 2.30): each read by its own labels.
  const PromFile both = ParsePromText(
      Fixture("nccl_inspector_metrics_5e6f7a8b-1111-2222-3333-444455556666.prom") +
      Fixture("nccl_inspector_metrics_GPU-0a1b2c3d-0000-1111-2222-333344445555.prom"));
  EXPECT_EQ(both.ops.size(), 8u);
  EXPECT_EQ(both.malformed, 1u) << "only the 2.29 fixture's deliberately cut line";
}

TEST(InspectorParseTest, V51SizeClassesAreTheirLowerBound) {
  EXPECT_EQ(ParseMessageSize("32-33MB"), 32ull << 20);
  EXPECT_EQ(ParseMessageSize("4-5GB"), 4ull << 30);
  EXPECT_EQ(ParseMessageSize("1-2KB"), 1u << 10);
  EXPECT_EQ(ParseMessageSize("1023-1024B"), 1023u);
  EXPECT_EQ(ParseMessageSize("1-2TB"), 1ull << 40);
  EXPECT_EQ(ParseMessageSize("0B"), 0u);
  EXPECT_EQ(ParseMessageSize("33-32MB"), 0u) << "an upper bound below the lower is no class";
  EXPECT_EQ(ParseMessageSize("32-MB"), 0u);
  EXPECT_EQ(ParseMessageSize("32-33XB"), 0u);
  // The classes land in the buckets the 2.29 sizes do.
  EXPECT_EQ(SizeBucketLabel(SizeBucket(ParseMessageSize("256-257MB"))), "256MiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(ParseMessageSize("256.00MB"))), "256MiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(ParseMessageSize("64-65KB"))), "64KiB");
  EXPECT_EQ(SizeBucketLabel(SizeBucket(ParseMessageSize("63-64KB"))), "<64KiB");
}

// Every number a file gives is range-checked before it becomes an integer: NaN, infinities,
// 1e300, -1 and 2^63 are refused, never converted (UBSan stopped CI on "pid": 4.5e43).
TEST(InspectorParseTest, NumbersOutOfRangeAreRefusedBeforeAnyConversion) {
  const double kHostile[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             1e300,
                             -1,
                             9223372036854775808.0,
                             4.55556e43};
  for (const double d : kHostile) {
    SCOPED_TRACE(d);
    EXPECT_FALSE(common::CheckedInt(d, 0, int64_t{1} << 53).has_value());
  }
  EXPECT_EQ(common::CheckedInt(1639, 0, int64_t{1} << 53), 1639);
  EXPECT_FALSE(common::ParseInt("9223372036854775808", 0, INT64_MAX).has_value());
  EXPECT_FALSE(common::ParseInt("-1", 0, 10).has_value());
  EXPECT_FALSE(common::ParseInt("12abc", 0, 100).has_value());
  EXPECT_EQ(common::ParseInt("-1", -1, 10), -1);
  // Each integer field of a record, with each hostile value: the record is read or refused,
  // and a field that is read is in range.
  for (const char* field : {"pid", "dump_timestamp_us", "rank", "n_ranks", "nnodes", "coll_sn",
                            "coll_msg_size_bytes"}) {
    for (const char* value : {"1e300", "-1", "9223372036854775808", "4.55556e43", "-1e300"}) {
      SCOPED_TRACE(std::string(field) + "=" + value);
      std::string record = kRecord;
      const std::string key = "\"" + std::string(field) + "\":";
      const size_t at = record.find(key);
      ASSERT_NE(at, std::string::npos);
      const size_t end = record.find_first_of(",}", at);
      record.replace(at + key.size(), end - at - key.size(), value);
      InspectorOp op;
      const LineKind kind = ParseJsonLine(record, &op);
      if (std::string(field) == "coll_msg_size_bytes") {
        EXPECT_EQ(kind, LineKind::kMalformed) << "an op without a size is no op";
        continue;
      }
      ASSERT_EQ(kind, LineKind::kOp);
      EXPECT_GE(op.pid, -1);
      EXPECT_LE(op.pid, int64_t{1} << 53);
      EXPECT_GE(op.sn, -1);
      EXPECT_LE(op.sn, int64_t{1} << 53);
      EXPECT_LE(op.dump_timestamp_us, int64_t{1} << 53);
      EXPECT_GE(op.rank, -1);
      EXPECT_GE(op.n_ranks, -1);
    }
  }
  // Labels of the Prometheus files, the same way.
  const PromFile f = ParsePromText(
      "nccl_bus_bandwidth_gbs{comm_id=\"0xab\",collective=\"AllReduce\",coll_sn=\""
      "99999999999999999999\",nranks=\"4294967296\",message_size=\"1e300GB\"} 5\n"
      "nccl_bus_bandwidth_gbs{version=\"v5.1\",comm_name=\"x\",collective=\"AllReduce\","
      "message_size=\"99999999999999999999-1e400TB\"} 7\n");
  ASSERT_EQ(f.ops.size(), 2u);
  EXPECT_EQ(f.ops[0].sn, -1);
  EXPECT_EQ(f.ops[0].n_ranks, -1);
  EXPECT_EQ(f.ops[0].msg_size_bytes, 0u);
  EXPECT_EQ(f.ops[1].msg_size_bytes, 0u);
}

// The same ops, written as JSON Lines records and as v5.1 interval aggregates, give the same
// median busbw per (collective, size class): within what a geometric mean differs from the
// values it summarises (the spread of one interval's ops, here +-20 %).
TEST(InspectorParseTest, JsonAndV51OfTheSameOpsAgreeOnTheMedian) {
  std::mt19937 rng(7);
  struct Key {
    const char* coll;
    uint64_t bytes;
    double center_gbs;
  };
  const Key kKeys[] = {{"AllReduce", 256ull << 20, 44},
                       {"AllGather", 64ull << 20, 38},
                       {"ReduceScatter", 4ull << 20, 12}};
  std::string json, prom;
  std::map<std::string, std::vector<double>> per_op, per_interval;
  for (int interval = 0; interval < 40; ++interval) {
    for (const Key& k : kKeys) {
      std::uniform_real_distribution<double> spread(0.8, 1.2);
      const double drift = spread(rng);  // intervals differ as a job's phases do
      double log_sum = 0;
      double exec_sum = 0;
      const int n = 5 + interval % 7;
      for (int i = 0; i < n; ++i) {
        const double bw = k.center_gbs * drift * spread(rng);
        log_sum += std::log(bw);
        exec_sum += 100;
        json +=
            "{\"header\":{\"id\":\"0xa1\",\"rank\":0,\"n_ranks\":16,\"nnodes\":2},"
            "\"metadata\":{\"inspector_output_format_version\":\"v4.0\","
            "\"dump_timestamp_us\":1,\"hostname\":\"h\",\"pid\":1},\"coll_perf\":{"
            "\"coll\":\"" +
            std::string(k.coll) + "\",\"coll_sn\":" + std::to_string(interval * 100 + i) +
            ",\"coll_msg_size_bytes\":" + std::to_string(k.bytes) +
            ",\"coll_exec_time_us\":100,\"coll_busbw_gbs\":" + std::to_string(bw) + "}}\n";
      }
      const uint64_t unit = k.bytes >= (1ull << 30) ? 30 : k.bytes >= (1ull << 20) ? 20 : 10;
      const std::string size = std::to_string(k.bytes >> unit) + "-" +
                               std::to_string((k.bytes >> unit) + 1) +
                               (unit == 30   ? "GB"
                                : unit == 20 ? "MB"
                                             : "KB");
      const std::string labels =
          "{version=\"v5.1\",slurm_job_id=\"unknown\",node=\"h\",gpu=\""
          "GPU0\",comm_name=\"unknown\",n_nodes=\"2\",nranks=\"16\","
          "collective=\"" +
          std::string(k.coll) + "\",message_size=\"" + size + "\",algo_proto=\"RING_SIMPLE\"}";
      char value[64];
      std::snprintf(value, sizeof(value), "%.6g", std::exp(log_sum / n));
      prom += "nccl_bus_bandwidth_gbs" + labels + " " + value + "\n";
      std::snprintf(value, sizeof(value), "%.6g", exec_sum / n);
      prom += "nccl_collective_exec_time_microseconds" + labels + " " + value + "\n";
    }
  }
  for (size_t start = 0; start < json.size();) {
    const size_t nl = json.find('\n', start);
    InspectorOp op;
    ASSERT_EQ(ParseJsonLine(std::string_view(json).substr(start, nl - start), &op), LineKind::kOp);
    per_op[op.op + "/" + std::string(SizeBucketLabel(SizeBucket(op.msg_size_bytes)))].push_back(
        op.busbw_gbs);
    start = nl + 1;
  }
  const PromFile f = ParsePromText(prom);
  ASSERT_EQ(f.malformed, 0u);
  for (const InspectorOp& op : f.ops) {
    per_interval[op.op + "/" + std::string(SizeBucketLabel(SizeBucket(op.msg_size_bytes)))]
        .push_back(op.busbw_gbs);
  }
  ASSERT_EQ(per_op.size(), 3u);
  for (auto& [key, ops] : per_op) {
    SCOPED_TRACE(key);
    auto& intervals = per_interval[key];
    ASSERT_EQ(intervals.size(), 40u);
    std::sort(ops.begin(), ops.end());
    std::sort(intervals.begin(), intervals.end());
    const double a = ops[ops.size() / 2], b = intervals[intervals.size() / 2];
    // A geometric mean of values within +-20 % of their centre lies within about 2 % of their
    // arithmetic mean; medians of such means and of the values agree within the spread's tenth.
    EXPECT_NEAR(b / a, 1.0, 0.05);
  }
}

TEST(InspectorStartTest, ReadsTheInspectorsStartLinesInAnyEnvelope) {
  InspectorStart s;
  const char* kLines[] = {
      "NCCL Inspector Plugin - Version: v2.30.3-1-inspector",
      "NCCL Inspector Environment Variables:",
      "  NCCL_INSPECTOR_ENABLE = 1",
      "2026-12-05T10:00:00.1Z stderr F   NCCL_INSPECTOR_DUMP_DIR = /tmp/ray/inspector",
      R"({"log":"  NCCL_INSPECTOR_PROM_DUMP = 1\n","stream":"stderr","time":"2026-12-05T10:00:00Z"})",
      "  NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS = 1000000",
      "  NCCL_INSPECTOR_DUMP_VERBOSE = (not set), default=0",
  };
  for (const char* line : kLines) EXPECT_TRUE(FeedStartLine(line, &s)) << line;
  EXPECT_FALSE(FeedStartLine("export NCCL_INSPECTOR_ENABLE=1", &s)) << "a shell's echo";
  EXPECT_FALSE(FeedStartLine("host:1:1 [0] NCCL INFO NET/OFI Selected provider is efa", &s));
  EXPECT_TRUE(s.loaded);
  EXPECT_EQ(s.version, "v2.30.3-1-inspector");
  EXPECT_TRUE(s.Enabled());
  EXPECT_TRUE(s.Prometheus());
  EXPECT_EQ(s.ModeName(), "Prometheus textfiles");
  EXPECT_EQ(s.DumpDir(), "/tmp/ray/inspector");
  EXPECT_EQ(s.IntervalUs(), 1000000);
  EXPECT_EQ(s.EffectiveIntervalUs(), kPromMinIntervalUs) << "Prometheus mode raises it to 30 s";
  EXPECT_EQ(s.settings.at("NCCL_INSPECTOR_DUMP_VERBOSE"), "0");
  EXPECT_TRUE(s.defaulted.at("NCCL_INSPECTOR_DUMP_VERBOSE"));

  InspectorStart d;  // NCCL >= 2.30's defaults: written only at teardown, directory generated
  FeedStartLine("  NCCL_INSPECTOR_ENABLE = 1", &d);
  FeedStartLine("  NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS = (not set), default=-1", &d);
  FeedStartLine("  NCCL_INSPECTOR_DUMP_DIR = (not set), default=(auto-generated)", &d);
  EXPECT_EQ(d.IntervalUs(), -1);
  EXPECT_EQ(d.EffectiveIntervalUs(), -1);
  EXPECT_EQ(d.DumpDir(), "");
  EXPECT_FALSE(d.Prometheus());
}

}  // namespace
}  // namespace efawatch::inspector
