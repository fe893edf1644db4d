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

class NcclBackendTest : public ::testing::TestWithParam<v1::CollectiveOp> {};

TEST_P(NcclBackendTest, RunsChecksAndAnalyzesItsOwnLog) {
  ASSERT_TRUE(NcclBackendBuilt()) << "this test is only built with CUDA and NCCL";
  testing::TempDir dir;
  Participant p("gpu-node", CollectiveLimits{}, nullptr,
                NcclBackendFactory({.log_dir = dir.path()}));
  v1::JoinCollectiveRequest j;
  j.set_session("gpu-test");
  j.set_rank(0);
  j.set_nranks(1);
  j.set_op(GetParam());
  j.set_backend(v1::NCCL);
  for (uint64_t s : {1ull << 20, 64ull << 20}) j.add_sizes(s);
  j.set_warmup(2);
  j.set_iters(10);
  j.set_deadline_ms(120000);
  auto joined = p.Join(j);
  if (!joined.ok() && joined.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << "no GPU here: " << joined.status().message();
  }
  ASSERT_TRUE(joined.ok()) << joined.status();
  ASSERT_GE(joined->local_ranks(), 1u);
  ASSERT_FALSE(joined->nccl_unique_id().empty()) << "participant 0 hands out the NCCL id";

  v1::StartCollectiveRequest s;
  s.set_session("gpu-test");
  s.set_rank(0);
  s.set_nranks(joined->local_ranks());
  s.set_nccl_unique_id(joined->nccl_unique_id());
  std::promise<absl::StatusOr<v1::RankResult>> done;
  p.Start(s, [&done](absl::StatusOr<v1::RankResult> r) { done.set_value(std::move(r)); });
  const absl::StatusOr<v1::RankResult> r = done.get_future().get();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->timings_size(), 2);
  for (const auto& t : r->timings()) {
    EXPECT_EQ(t.wrong(), 0u) << t.size();
    EXPECT_GT(t.time_us(), 0);
    std::printf("%s %d GPU(s): size %llu time %.1f us\n",
                std::string(FindOp(GetParam())->name).c_str(), joined->local_ranks(),
                static_cast<unsigned long long>(t.size()), t.time_us());
  }
  // The probe captured NCCL's own log and analyzed it.
  EXPECT_FALSE(r->nccl().nccl_version().empty()) << "log: " << r->nccl().log_file();
  EXPECT_FALSE(testing::ReadFileOrEmpty(r->nccl().log_file()).empty());
  std::printf("NCCL %s network '%s' transport '%s' provider '%s'\n",
              r->nccl().nccl_version().c_str(), r->nccl().network().c_str(),
              r->nccl().transport().c_str(), r->nccl().ofi_provider().c_str());
}

INSTANTIATE_TEST_SUITE_P(Ops, NcclBackendTest,
                         ::testing::Values(v1::ALL_REDUCE, v1::ALL_GATHER, v1::REDUCE_SCATTER,
                                           v1::BROADCAST),
                         [](const auto& p) { return v1::CollectiveOp_Name(p.param); });

}  // namespace
}  // namespace efawatch::collective
