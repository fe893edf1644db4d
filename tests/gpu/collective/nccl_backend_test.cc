// SPDX-License-Identifier: Apache-2.0
// The NCCL backend on this machine's GPUs, in process: one agent, one rank per GPU. Skips with
// the reason when there is no GPU (no driver, no device). tests/gpu/run.sh runs it on a GPU
// machine together with the CLI against a real agent.
#include "probes/collective/nccl_backend.h"

#include <gtest/gtest.h>

#include <future>

#include "probes/collective/participant.h"
#include "tests/support/subprocess.h"

namespace efawatch::collective {
namespace {

class NcclBackendTest : public ::testing::TestWithParam<Op> {};

TEST_P(NcclBackendTest, RunsChecksAndAnalyzesItsOwnLog) {
  ASSERT_TRUE(NcclBackendBuilt()) << "this test is only built with CUDA and NCCL";
  testing::TempDir dir;
  Participant p("gpu-node", CollectiveLimits{}, nullptr,
                NcclBackendFactory({.log_dir = dir.path()}), common::SystemClock::Get());
  JoinRequest j;
  j.session = "gpu-test";
  j.rank = 0;
  j.nranks = 1;
  j.op = GetParam();
  j.backend = Backend::kNccl;
  for (uint64_t s : {1ull << 20, 64ull << 20}) j.sizes.push_back(s);
  j.warmup = 2;
  j.iters = 10;
  j.deadline_ms = 120000;
  auto joined = p.Join(j);
  if (!joined.ok() && joined.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "no GPU here: " << joined.status().message();
  }
  ASSERT_TRUE(joined.ok()) << joined.status();
  ASSERT_GE(joined->local_ranks, 1u);
  ASSERT_FALSE(joined->nccl_unique_id.empty()) << "participant 0 hands out the NCCL id";

  StartRequest s;
  s.session = "gpu-test";
  s.rank = 0;
  s.nranks = joined->local_ranks;
  s.nccl_unique_id = joined->nccl_unique_id;
  std::promise<absl::StatusOr<RankResult>> done;
  p.Start(s, [&done](absl::StatusOr<RankResult> r) { done.set_value(std::move(r)); });
  const absl::StatusOr<RankResult> r = done.get_future().get();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->timings.size(), 2u);
  for (const auto& t : r->timings) {
    EXPECT_EQ(t.wrong, 0u) << t.size;
    EXPECT_GT(t.time_us, 0);
    std::printf("%s %d GPU(s): size %llu time %.1f us\n",
                std::string(FindOp(GetParam())->name).c_str(), joined->local_ranks,
                static_cast<unsigned long long>(t.size), t.time_us);
  }
  // The probe captured NCCL's own log and analyzed it.
  ASSERT_TRUE(r->nccl.has_value());
  const nccl::Verdict& v = r->nccl->verdict;
  EXPECT_FALSE(v.nccl_version.empty()) << "log: " << r->nccl->log_file;
  EXPECT_FALSE(testing::ReadFileOrEmpty(r->nccl->log_file).empty());
  std::printf("NCCL %s network '%s' transport '%s' provider '%s'\n", v.nccl_version.c_str(),
              v.network.c_str(), v.transport.c_str(), v.ofi_provider.c_str());
}

INSTANTIATE_TEST_SUITE_P(Ops, NcclBackendTest,
                         ::testing::Values(Op::kAllReduce, Op::kAllGather, Op::kReduceScatter,
                                           Op::kBroadcast),
                         [](const auto& p) { return std::string(FindOp(p.param)->name); });

}  // namespace
}  // namespace efawatch::collective
