// SPDX-License-Identifier: Apache-2.0
// The operations behind the gRPC edge, without gRPC: the caller's CallContext bounds a probe
// before any network work, and JoinCollective opens its backend off the caller's thread.
#include "daemon/agent/operations.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <latch>
#include <optional>
#include <thread>

#include "daemon/agent/probe_runner.h"
#include "tests/support/fake_clock.h"

namespace efawatch::agent {
namespace {

using std::chrono::milliseconds;

// Records the timeout it was given and answers `answer` at once.
class FakeLookup final : public FabricAddressLookup {
 public:
  absl::StatusOr<std::string> answer = absl::UnavailableError("peer down");
  std::optional<milliseconds> timeout;
  void LookupAsync(const std::string&, milliseconds t,
                   std::function<void(absl::StatusOr<std::string>)> done) override {
    timeout = t;
    done(answer);
  }
};

class ProbeRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fabric::FabricServiceOptions o;
    o.responder = false;  // no libfabric here: the probes below never start
    auto f = fabric::FabricService::Create(o, clock_);
    ASSERT_TRUE(f.ok()) << f.status();
    fabric_ = *std::move(f);
    runner_.emplace(fabric_.get(), lookup_, policy_, clock_);
  }

  absl::Status Ping(const CallContext& call, const ProbeTarget& target) {
    fabric::PingOptions o;
    o.deadline = milliseconds(10000);
    std::optional<absl::Status> got;
    runner_->Ping(call, target, o,
                  [&](const absl::StatusOr<fabric::PingResult>& r) { got = r.status(); });
    EXPECT_TRUE(got.has_value()) << "not answered inline";
    return got.value_or(absl::UnknownError("no answer"));
  }

  common::FakeClock clock_;
  FakeLookup lookup_;
  TargetPolicy policy_{TargetPolicyOptions{.allowed = {}, .allow_loopback = true}};
  std::unique_ptr<fabric::FabricService> fabric_;
  std::optional<ProbeRunner> runner_;
};

TEST_F(ProbeRunnerTest, ACallPastItsDeadlineStartsNoProbe) {
  CallContext call;
  call.deadline = clock_.Now() - milliseconds(1);
  const absl::Status st = Ping(call, {.peer_agent = "127.0.0.1:9478", .peer_address = ""});
  EXPECT_EQ(st.code(), absl::StatusCode::kDeadlineExceeded) << st;
  EXPECT_FALSE(lookup_.timeout.has_value()) << "the peer was asked after the caller left";
}

TEST_F(ProbeRunnerTest, ACancelledCallStartsNoProbe) {
  std::stop_source cancel;
  cancel.request_stop();
  CallContext call;
  call.cancel = cancel.get_token();
  const absl::Status st = Ping(call, {.peer_agent = "127.0.0.1:9478", .peer_address = ""});
  EXPECT_EQ(st.code(), absl::StatusCode::kCancelled) << st;
  EXPECT_FALSE(lookup_.timeout.has_value());
}

// The peer lookup gets what is left of the caller's deadline when that is shorter than the
// probe's own (and than the lookup's 5 s).
TEST_F(ProbeRunnerTest, TheCallersDeadlineBoundsThePeerLookup) {
  CallContext call;
  call.deadline = clock_.Now() + milliseconds(300);
  const absl::Status st = Ping(call, {.peer_agent = "127.0.0.1:9478", .peer_address = ""});
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;  // the fake lookup's answer
  ASSERT_TRUE(lookup_.timeout.has_value());
  EXPECT_EQ(*lookup_.timeout, milliseconds(300));
}

// A lookup that took the whole of the caller's time: the probe does not start.
TEST_F(ProbeRunnerTest, NoProbeStartsWhenTheLookupUsedTheCallersTime) {
  class SlowLookup final : public FabricAddressLookup {
   public:
    explicit SlowLookup(common::FakeClock& clock) : clock_(clock) {}
    void LookupAsync(const std::string&, milliseconds t,
                     std::function<void(absl::StatusOr<std::string>)> done) override {
      clock_.Advance(t);
      done(std::string("raw-peer"));
    }

   private:
    common::FakeClock& clock_;
  } slow(clock_);
  ProbeRunner runner(fabric_.get(), slow, policy_, clock_);
  CallContext call;
  call.deadline = clock_.Now() + milliseconds(300);
  std::optional<absl::Status> got;
  fabric::PingOptions o;
  runner.Ping(call, {.peer_agent = "127.0.0.1:9478", .peer_address = ""}, o,
              [&](const absl::StatusOr<fabric::PingResult>& r) { got = r.status(); });
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->code(), absl::StatusCode::kDeadlineExceeded) << *got;
}

// A backend that takes as long as the test says to open, and notes the thread that opened it.
class BlockingBackend final : public collective::RankBackend {
 public:
  void Describe(collective::JoinResponse* out) const override { out->local_ranks = 1; }
  absl::Status Connect(const collective::StartRequest&, const std::stop_token&,
                       std::chrono::steady_clock::time_point) override {
    return absl::OkStatus();
  }
  absl::StatusOr<collective::SizeTiming> Run(const collective::OpInfo&, uint64_t, uint32_t,
                                             uint32_t, const std::stop_token&,
                                             std::chrono::steady_clock::time_point) override {
    return collective::SizeTiming{};
  }
};

TEST(OperationsTest, JoinCollectiveOpensTheBackendOffTheCallersThread) {
  std::latch release(1);
  std::promise<std::thread::id> opened_on;
  collective::BackendFactory host = [&](const collective::JoinRequest&)
      -> absl::StatusOr<std::unique_ptr<collective::RankBackend>> {
    opened_on.set_value(std::this_thread::get_id());
    release.wait();  // fi_getinfo and endpoint setup, as long as the test likes
    return std::make_unique<BlockingBackend>();
  };
  common::FakeClock clock;
  collective::Participant participant("node-a", {}, host, nullptr, clock);
  Operations ops({.node_name = "node-a",
                  .findings = nullptr,
                  .node_health = nullptr,
                  .fabric = nullptr,
                  .probes = nullptr,
                  .coordination = nullptr,
                  .collective = &participant,
                  .doctor = nullptr});
  collective::JoinRequest j;
  j.session = "s1";
  j.rank = 0;
  j.nranks = 1;
  j.op = collective::Op::kAllReduce;
  j.sizes = {1024};
  j.backend = collective::Backend::kHost;
  j.iters = 1;
  j.deadline_ms = 1000;
  std::promise<absl::StatusOr<collective::JoinResponse>> answer;
  ops.JoinCollective(
      {}, j, [&](absl::StatusOr<collective::JoinResponse> r) { answer.set_value(std::move(r)); });
  // Returned while the backend is still opening: the caller's thread was not held.
  auto answered = answer.get_future();
  EXPECT_NE(opened_on.get_future().get(), std::this_thread::get_id());
  EXPECT_EQ(answered.wait_for(milliseconds(0)), std::future_status::timeout);
  // A second join meanwhile is refused at once (the node's one claim), not queued.
  std::optional<absl::Status> second;
  j.session = "s2";
  ops.JoinCollective(
      {}, j, [&](const absl::StatusOr<collective::JoinResponse>& r) { second = r.status(); });
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->code(), absl::StatusCode::kResourceExhausted) << *second;
  release.count_down();
  const auto r = answered.get();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->node_name, "node-a");
}

}  // namespace
}  // namespace efawatch::agent
