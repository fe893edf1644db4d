// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/ops.h"

#include <gtest/gtest.h>

#include "probes/collective/coordinator.h"
#include "probes/collective/nccl_backend.h"
#include "tests/support/subprocess.h"

namespace efawatch::collective {
namespace {

TEST(OpsTest, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(FindOp("all_reduce")->BusFactor(4), 2.0 * 3 / 4);
  EXPECT_DOUBLE_EQ(FindOp("all_gather")->BusFactor(4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(FindOp("reduce_scatter")->BusFactor(8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(FindOp("broadcast")->BusFactor(8), 1.0);
  EXPECT_DOUBLE_EQ(FindOp(Op::kAllReduce)->BusFactor(1), 0.0);
  EXPECT_EQ(FindOp("alltoall"), nullptr);
}

TEST(OpsTest, CountIsPerRankLikeNcclTests) {
  EXPECT_EQ(FindOp("all_reduce")->Count(1 << 20, 4), (1u << 20) / 4);
  EXPECT_EQ(FindOp("all_gather")->Count(1 << 20, 4), (1u << 20) / 4 / 4);
  EXPECT_EQ(RoundSize(1000, 3, *FindOp("all_gather")), 996u);  // whole floats per rank
  EXPECT_EQ(RoundSize(1000, 3, *FindOp("all_reduce")), 1000u);
  EXPECT_EQ(RoundSize(5, 3, *FindOp("all_gather")), 12u);  // at least one element each
}

TEST(OpsTest, ParseSizes) {
  EXPECT_EQ(*ParseSizes("1M:8M"), (std::vector<uint64_t>{1 << 20, 2 << 20, 4 << 20, 8 << 20}));
  EXPECT_EQ(*ParseSizes("1K:64K:4"), (std::vector<uint64_t>{1024, 4096, 16384, 65536}));
  EXPECT_EQ(*ParseSizes("4K, 1G,100"), (std::vector<uint64_t>{4096, 1ull << 30, 100}));
  for (const char* bad : {"", "0", "1X", "8M:1M", "1M:2M:1", "1M:2M:3:4", "-1"}) {
    EXPECT_FALSE(ParseSizes(bad).ok()) << bad;
  }
}

TEST(NormalizeTest, DefaultsAndLimits) {
  RunRequest r;
  r.participants.push_back("a:1");
  r.participants.push_back("b:1");
  r.participants.push_back("c:1");
  r.op = Op::kAllGather;
  r.sizes.push_back(1000);
  auto n = Normalize(r, {});
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->backend, Backend::kHost);
  EXPECT_EQ(n->sizes[0], 996u);
  EXPECT_EQ(n->iters, 10u);
  EXPECT_EQ(n->deadline_ms, 60000u);

  auto expect_invalid = [](const RunRequest& req, const std::string& words) {
    auto got = Normalize(req, {});
    ASSERT_FALSE(got.ok()) << words;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(words), absl::string_view::npos) << got.status();
  };
  RunRequest none = r;
  none.participants.clear();
  expect_invalid(none, "participants");
  RunRequest twice = r;
  twice.participants.push_back("a:1");
  expect_invalid(twice, "repeated");
  RunRequest no_op = r;
  no_op.op = Op::kUnspecified;
  expect_invalid(no_op, "op must be one of");
  RunRequest bcast = r;
  bcast.op = Op::kBroadcast;
  expect_invalid(bcast, "not broadcast");
  RunRequest huge = r;
  huge.sizes.assign({0, 1ull << 40});
  expect_invalid(huge, "out of range");
  RunRequest long_deadline = r;
  long_deadline.deadline_ms = 10'000'000;
  expect_invalid(long_deadline, "deadline");
  RunRequest many_iters = r;
  many_iters.iters = 100000;
  expect_invalid(many_iters, "iters");
}

// The NCCL probe's own log, analyzed: uses a committed fixture (written from the format
// reference), from an offset as a probe would (the earlier part belongs to an earlier probe).
TEST(NcclObservationTest, AnalyzesTheProbesOwnLogFromItsOffset) {
  const std::string fixture =
      testing::SourceDir() + "/tests/fixtures/nccl/socket-fallback-plugin-missing-2.19.log";
  const std::string healthy =
      testing::SourceDir() + "/tests/fixtures/nccl/efa-ofi-healthy-2.21.log";
  testing::TempDir dir;
  const std::string before = testing::ReadFileOrEmpty(healthy);
  ASSERT_FALSE(before.empty());
  testing::WriteFile(dir.File("probe.log"), before + testing::ReadFileOrEmpty(fixture));
  const NcclObservation o = ObserveNcclLog(dir.File("probe.log"), before.size());
  EXPECT_TRUE(o.verdict.tcp_fallback);
  EXPECT_EQ(o.verdict.network, "Socket");
  EXPECT_EQ(o.verdict.nccl_version, "2.19.3");
  EXPECT_EQ(o.log_file, dir.File("probe.log"));
  bool has = false;
  for (const auto& k : o.findings) has = has || k == "tcp_fallback";
  EXPECT_TRUE(has);

  const NcclObservation whole = ObserveNcclLog(healthy, 0);
  EXPECT_FALSE(whole.verdict.tcp_fallback);
  EXPECT_EQ(whole.verdict.network, "Libfabric");
  EXPECT_EQ(whole.verdict.ofi_provider, "efa");
}

TEST(NcclObservationTest, MissingLogIsEmptyNotACrash) {
  const NcclObservation o = ObserveNcclLog("/nonexistent/nccl.log", 0);
  EXPECT_TRUE(o.verdict.network.empty());
  EXPECT_FALSE(o.verdict.tcp_fallback);
}

}  // namespace
}  // namespace efawatch::collective
