// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/participant.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace efawatch::collective {
namespace {

// A backend that does nothing: the tests here are about sessions, not data.
class IdleBackend final : public RankBackend {
 public:
  void Describe(JoinResponse* out) const override { out->local_ranks = 1; }
  absl::Status Connect(const StartRequest&, const std::stop_token&,
                       std::chrono::steady_clock::time_point) override {
    return absl::OkStatus();
  }
  absl::StatusOr<SizeTiming> Run(const OpInfo&, uint64_t size, uint32_t, uint32_t,
                                 const std::stop_token&,
                                 std::chrono::steady_clock::time_point) override {
    SizeTiming t;
    t.size = size;
    return t;
  }
};

BackendFactory IdleFactory() {
  return [](const JoinRequest&) -> absl::StatusOr<std::unique_ptr<RankBackend>> {
    return std::make_unique<IdleBackend>();
  };
}

JoinRequest Invitation(const std::string& session, uint32_t deadline_ms) {
  JoinRequest j;
  j.session = session;
  j.rank = 0;
  j.nranks = 1;
  j.op = Op::kAllReduce;
  j.sizes = {1024};
  j.backend = Backend::kHost;
  j.iters = 1;
  j.deadline_ms = deadline_ms;
  return j;
}

// A coordinator that died after the join leaves a session nobody starts; the node is free again
// at the session's deadline as its clock sees it, not earlier.
TEST(ParticipantTest, ReclaimsAJoinedSessionNeverStartedAtItsDeadline) {
  common::FakeClock clock;
  Participant p("node-a", CollectiveLimits{}, IdleFactory(), nullptr, clock);
  ASSERT_TRUE(p.Join(Invitation("first", 1000)).ok());
  EXPECT_EQ(p.Join(Invitation("second", 1000)).status().code(),
            absl::StatusCode::kResourceExhausted);
  clock.Advance(std::chrono::milliseconds(999));
  EXPECT_EQ(p.Join(Invitation("second", 1000)).status().code(),
            absl::StatusCode::kResourceExhausted);
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_TRUE(p.Join(Invitation("second", 1000)).ok());
  EXPECT_TRUE(p.busy());
}

// A join with a long deadline that is never started does not hold the node for that long.
TEST(ParticipantTest, ReclaimsAJoinNotStartedWithinTheStartGrace) {
  common::FakeClock clock;
  Participant p("node-a", CollectiveLimits{}, IdleFactory(), nullptr, clock);
  ASSERT_TRUE(p.Join(Invitation("holder", 600000)).ok());
  clock.Advance(std::chrono::seconds(59));
  EXPECT_EQ(p.Join(Invitation("second", 1000)).status().code(),
            absl::StatusCode::kResourceExhausted);
  clock.Advance(std::chrono::seconds(1));
  EXPECT_TRUE(p.Join(Invitation("second", 1000)).ok());
}

TEST(ParticipantTest, BusyErrorDoesNotNameTheRunningSession) {
  common::FakeClock clock;
  Participant p("node-a", CollectiveLimits{}, IdleFactory(), nullptr, clock);
  ASSERT_TRUE(p.Join(Invitation("secret-session-id", 1000)).ok());
  const absl::Status st = p.Join(Invitation("second", 1000)).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(st.message()).find("secret-session-id"), std::string::npos) << st;
}

}  // namespace
}  // namespace efawatch::collective
