// SPDX-License-Identifier: Apache-2.0
// The collective probe's records cross the API (proto/codec/collective) with every field. Each
// record is filled with values unlike its defaults, sent through ToProto and FromProto, and
// compared whole; a field count per record fails when a field is added, so the codec and this
// test are looked at together.

#include <gtest/gtest.h>

#include "proto/codec/collective.h"
#include "tests/unit/records/field_count.h"

namespace efawatch::collective {
namespace {

template <typename Record, typename Proto>
Record RoundTrip(const Record& r) {
  Proto p;
  codec::ToProto(r, &p);
  return codec::FromProto(p);
}

RankResult FullRankResult() {
  RankResult r;
  r.rank = 3;
  r.node_name = "node-3";
  r.timings = {{.size = 1 << 20, .time_us = 12.5, .wrong = 1}, {.size = 4 << 20, .time_us = 40}};
  r.error = "ring neighbour gone";
  NcclObservation o;
  o.log_file = "/var/lib/efawatch/nccl.log";
  // Only the verdict fields the API message has (proto/codec/collective.h).
  o.verdict.nccl_version = "2.28.9";
  o.verdict.network = "Socket";
  o.verdict.transport = "NET/Socket";
  o.verdict.ofi_provider = "none";
  o.verdict.tcp_fallback = true;
  o.verdict.loopback_misuse = true;
  o.findings = {"net_plugin_missing", "tcp_fallback"};
  r.nccl = o;
  r.provider = "tcp;ofi_rxm";
  return r;
}

TEST(CollectiveRecordsTest, FieldCountsMatchTheCodec) {
  // A new field: map it in proto/codec/collective.cc, set it in the test below, then bump here.
  EXPECT_EQ(testing::FieldCount<RunRequest>(), 7u);
  EXPECT_EQ(testing::FieldCount<JoinRequest>(), 9u);
  EXPECT_EQ(testing::FieldCount<JoinResponse>(), 5u);
  EXPECT_EQ(testing::FieldCount<StartRequest>(), 5u);
  EXPECT_EQ(testing::FieldCount<AbortRequest>(), 2u);
  EXPECT_EQ(testing::FieldCount<SizeTiming>(), 3u);
  EXPECT_EQ(testing::FieldCount<NcclObservation>(), 3u);
  EXPECT_EQ(testing::FieldCount<RankResult>(), 6u);
  EXPECT_EQ(testing::FieldCount<Row>(), 6u);
  EXPECT_EQ(testing::FieldCount<Result>(), 9u);
}

TEST(CollectiveRecordsTest, RequestsCrossWithEveryField) {
  const RunRequest run{.participants = {"a:9478", "b:9478"},
                       .op = Op::kReduceScatter,
                       .sizes = {1024, 4096},
                       .backend = Backend::kNccl,
                       .warmup = 3,
                       .iters = 7,
                       .deadline_ms = 1234};
  EXPECT_EQ((RoundTrip<RunRequest, v1::RunCollectiveRequest>(run)), run);
  const JoinRequest join{.session = "s1",
                         .rank = 2,
                         .nranks = 4,
                         .op = Op::kAllGather,
                         .sizes = {8192},
                         .backend = Backend::kHost,
                         .warmup = 1,
                         .iters = 2,
                         .deadline_ms = 999};
  EXPECT_EQ((RoundTrip<JoinRequest, v1::JoinCollectiveRequest>(join)), join);
  const JoinResponse joined{.fabric_address = std::string("\x01\x00\x02", 3),
                            .node_name = "n",
                            .provider = "tcp",
                            .local_ranks = 8,
                            .nccl_unique_id = "id"};
  EXPECT_EQ((RoundTrip<JoinResponse, v1::JoinCollectiveResponse>(joined)), joined);
  const StartRequest start{.session = "s1",
                           .fabric_addresses = {"x", "y"},
                           .nccl_unique_id = "id",
                           .nranks = 16,
                           .rank = 8};
  EXPECT_EQ((RoundTrip<StartRequest, v1::StartCollectiveRequest>(start)), start);
  const AbortRequest abort{.session = "s1", .reason = "rank 2 failed"};
  EXPECT_EQ((RoundTrip<AbortRequest, v1::AbortCollectiveRequest>(abort)), abort);
}

TEST(CollectiveRecordsTest, ResultsCrossWithEveryField) {
  const RankResult rank = FullRankResult();
  EXPECT_EQ((RoundTrip<RankResult, v1::RankResult>(rank)), rank);
  RankResult no_nccl = rank;
  no_nccl.nccl.reset();
  EXPECT_EQ((RoundTrip<RankResult, v1::RankResult>(no_nccl)), no_nccl)
      << "an absent observation stays absent";

  Result r;
  r.op = Op::kAllReduce;
  r.backend = Backend::kHost;
  r.nranks = 4;
  r.nodes = {"n0", "n1"};
  r.rows = {{.size = 1, .count = 2, .time_us = 3, .algbw_gbps = 4, .busbw_gbps = 5, .wrong = 6}};
  r.avg_busbw_gbps = 5;
  r.provider = "tcp";
  r.ranks = {rank, no_nccl};
  r.elapsed_seconds = 1.5;
  EXPECT_EQ((RoundTrip<Result, v1::CollectiveResult>(r)), r);
}

TEST(CollectiveRecordsTest, EveryOpAndBackendCrosses) {
  for (Op op :
       {Op::kUnspecified, Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kBroadcast}) {
    EXPECT_EQ(codec::FromProto(codec::ToProto(op)), op);
  }
  for (Backend b : {Backend::kUnspecified, Backend::kHost, Backend::kNccl}) {
    EXPECT_EQ(codec::FromProto(codec::ToProto(b)), b);
  }
}

}  // namespace
}  // namespace efawatch::collective
