// SPDX-License-Identifier: Apache-2.0
#include "daemon/efa/health_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace efawatch::efa {
namespace {

using namespace std::chrono_literals;
using ::testing::IsEmpty;

DeviceSnapshot Device(const std::string& name, std::map<std::string, uint64_t> port_counters,
                      std::map<std::string, uint64_t> device_counters = {}) {
  DeviceSnapshot d;
  d.name = name;
  d.is_efa = true;
  d.counters = std::move(device_counters);
  PortSnapshot p;
  p.port = 1;
  p.counters = std::move(port_counters);
  d.ports.push_back(p);
  return d;
}

std::vector<std::string> Kinds(const std::vector<common::Finding>& fs) {
  std::vector<std::string> out;
  out.reserve(fs.size());
  for (const auto& f : fs) out.push_back(f.kind);
  return out;
}

class HealthRulesTest : public ::testing::Test {
 protected:
  HealthInput At(std::chrono::seconds t, std::vector<DeviceSnapshot> devices) {
    HealthInput in;
    in.when = std::chrono::steady_clock::time_point(t);
    in.devices = std::move(devices);
    return in;
  }
};

TEST_F(HealthRulesTest, RisingErrorCounterRaisesThenClearsAfterQuietPeriod) {
  HealthOptions opts;
  opts.clear_after = 600s;
  HealthRules rules(opts);
  EXPECT_THAT(rules.Evaluate(At(0s, {Device("rdmap0", {{"retrans_timeout_events", 3}})})),
              IsEmpty())
      << "a non-zero counter at start is history, not a rise";
  auto f = rules.Evaluate(At(15s, {Device("rdmap0", {{"retrans_timeout_events", 5}})}));
  ASSERT_EQ(Kinds(f), std::vector<std::string>{"efa_retrans_timeout_events"});
  EXPECT_EQ(f[0].subject, "rdmap0/1");
  EXPECT_EQ(f[0].severity, common::Severity::kWarning);
  EXPECT_EQ(f[0].evidence.source,
            "class/infiniband/rdmap0/ports/1/hw_counters/retrans_timeout_events");
  // Still raised while quiet for less than clear_after.
  EXPECT_EQ(Kinds(rules.Evaluate(At(600s, {Device("rdmap0", {{"retrans_timeout_events", 5}})}))),
            std::vector<std::string>{"efa_retrans_timeout_events"});
  EXPECT_THAT(rules.Evaluate(At(615s, {Device("rdmap0", {{"retrans_timeout_events", 5}})})),
              IsEmpty());
}

TEST_F(HealthRulesTest, RxDropsNeedTheirThresholdAndTrafficCountersNeverRaise) {
  HealthRules rules(HealthOptions{});
  rules.Evaluate(At(0s, {Device("d", {{"rx_drops", 0}, {"tx_bytes", 0}})}));
  EXPECT_THAT(rules.Evaluate(At(15s, {Device("d", {{"rx_drops", 99}, {"tx_bytes", 1 << 30}})})),
              IsEmpty());
  EXPECT_EQ(Kinds(rules.Evaluate(At(30s, {Device("d", {{"rx_drops", 199}})}))),
            std::vector<std::string>{"efa_rx_drops"});
}

TEST_F(HealthRulesTest, CounterResetIsReBaselinedNotARise) {
  HealthRules rules(HealthOptions{});
  rules.Evaluate(At(0s, {Device("d", {{"rdma_write_wr_err", 50}})}));
  EXPECT_THAT(rules.Evaluate(At(15s, {Device("d", {{"rdma_write_wr_err", 0}})})), IsEmpty());
  EXPECT_EQ(rules.resets(), 1u);
  EXPECT_EQ(Kinds(rules.Evaluate(At(30s, {Device("d", {{"rdma_write_wr_err", 1}})}))),
            std::vector<std::string>{"efa_rdma_write_wr_err"});
}

TEST_F(HealthRulesTest, NoCompletionCommandsIsCriticalWhileNonZero) {
  HealthRules rules(HealthOptions{});
  auto f = rules.Evaluate(At(0s, {Device("d", {}, {{"no_completion_cmds", 1}})}));
  ASSERT_EQ(Kinds(f), std::vector<std::string>{"efa_admin_queue_stuck"});
  EXPECT_EQ(f[0].severity, common::Severity::kCritical);
  EXPECT_THAT(rules.Evaluate(At(15s, {Device("d", {}, {{"no_completion_cmds", 0}})})), IsEmpty());
}

TEST_F(HealthRulesTest, DeviceGoneSinceStartAndFewerThanExpected) {
  HealthOptions opts;
  opts.expectation = Expectation::kCount;
  opts.expected_devices = 2;
  HealthRules rules(opts);
  EXPECT_THAT(rules.Evaluate(At(0s, {Device("a", {}), Device("b", {})})), IsEmpty());
  auto f = rules.Evaluate(At(15s, {Device("a", {})}));
  EXPECT_THAT(Kinds(f), ::testing::UnorderedElementsAre("efa_device_gone", "efa_devices_missing"));
  EXPECT_THAT(rules.Evaluate(At(30s, {Device("a", {}), Device("b", {})})), IsEmpty())
      << "the device came back: findings clear";
}

TEST_F(HealthRulesTest, AutoExpectsTheDevicesPresentAtStartAndTheirLossIsCritical) {
  HealthOptions opts;  // auto
  opts.type_supports = 32;
  opts.instance_type = "p5.48xlarge";
  HealthRules rules(opts);
  EXPECT_THAT(rules.Evaluate(At(0s, {Device("a", {}), Device("b", {})})), IsEmpty())
      << "two of the type's 32 attached: what the node was given, not a fault";
  EXPECT_EQ(rules.expected(), 2u);
  auto f = rules.Evaluate(At(15s, {Device("a", {})}));
  ASSERT_EQ(Kinds(f), std::vector<std::string>{"efa_device_gone"})
      << "the lost device is named once, not also as a count short";
  EXPECT_EQ(f[0].severity, common::Severity::kCritical);
  EXPECT_EQ(rules.expected(), 2u) << "efawatch_efa_devices_expected stays what the node had";
}

TEST_F(HealthRulesTest, TypeWithEfaOnANodeLaunchedWithoutItIsInfoOnly) {
  HealthOptions opts;  // auto, the default
  opts.type_supports = 1;
  opts.instance_type = "g6.12xlarge";
  HealthRules rules(opts);
  for (auto t : {0s, 15s, 30s}) {
    HealthInput in = At(t, {});
    if (t > 0s) in.advertised = 0;  // the device plugin runs and found none
    auto f = rules.Evaluate(in);
    ASSERT_EQ(Kinds(f), std::vector<std::string>{"efa_not_attached"});
    EXPECT_EQ(f[0].severity, common::Severity::kInfo);
    EXPECT_THAT(f[0].message, ::testing::HasSubstr("g6.12xlarge supports 1 EFA"));
    EXPECT_EQ(rules.expected(), 0u) << "nothing expected: no efawatch_efa_devices_expected";
  }
}

TEST_F(HealthRulesTest, FewerDevicesThanTheNodeAdvertisesIsCritical) {
  HealthOptions opts;
  opts.type_supports = 1;
  opts.instance_type = "g6.12xlarge";
  HealthRules rules(opts);
  EXPECT_EQ(Kinds(rules.Evaluate(At(0s, {}))), std::vector<std::string>{"efa_not_attached"})
      << "before the node has been read";
  HealthInput in = At(15s, {});
  in.advertised = 1;  // vpc.amazonaws.com/efa: 1, and no device in sysfs
  auto f = rules.Evaluate(in);
  ASSERT_EQ(Kinds(f), std::vector<std::string>{"efa_devices_missing"});
  EXPECT_EQ(f[0].severity, common::Severity::kCritical);
  EXPECT_THAT(f[0].message, ::testing::HasSubstr("vpc.amazonaws.com/efa"));
  EXPECT_EQ(rules.expected(), 1u);
}

TEST_F(HealthRulesTest, NoneAndCountIgnoreWhatTheNodeWasGiven) {
  HealthOptions none;
  none.expectation = Expectation::kNone;
  none.type_supports = 1;
  HealthRules quiet(none);
  HealthInput in = At(0s, {});
  in.advertised = 4;
  EXPECT_THAT(quiet.Evaluate(in), IsEmpty());
  EXPECT_EQ(quiet.expected(), 0u);

  HealthOptions count;  // --efa-expected-devices=4 (or =type on a 4-EFA type)
  count.expectation = Expectation::kCount;
  count.expected_devices = 4;
  HealthRules strict(count);
  auto f = strict.Evaluate(At(0s, {Device("a", {})}));
  ASSERT_EQ(Kinds(f), std::vector<std::string>{"efa_devices_missing"});
  EXPECT_THAT(f[0].message, ::testing::HasSubstr("1 EFA devices present, 4 expected"));
}

TEST_F(HealthRulesTest, UnreadableCounterIsReportedNotZero) {
  HealthRules rules(HealthOptions{});
  auto d = Device("d", {{"tx_bytes", 1}});
  d.ports[0].unreadable = {"rx_bytes"};
  EXPECT_EQ(Kinds(rules.Evaluate(At(0s, {d}))), std::vector<std::string>{"efa_counter_unreadable"});
}

class FallbackTest : public HealthRulesTest {
 protected:
  HealthInput Sample(std::chrono::seconds t, uint64_t efa, uint64_t eth, bool nccl,
                     uint64_t own = 0) {
    auto in = At(t, {Device("d", {{"tx_bytes", efa}, {"rx_bytes", 0}})});
    in.interfaces["ens5"] = InterfaceCounters{eth, 0, 0, 0};
    in.nccl_active = nccl;
    in.own_probe_tcp_bytes = own;
    return in;
  }
};

TEST_F(FallbackTest, FiresWhenEfaIsFlatWhileEthernetMovesGigabytesDuringNccl) {
  HealthRules rules(HealthOptions{});
  rules.Evaluate(Sample(0s, 1000, 0, true));
  EXPECT_THAT(rules.Evaluate(Sample(60s, 1000, 3ull << 30, true)), IsEmpty())
      << "window not yet complete";
  auto f = rules.Evaluate(Sample(120s, 2000, 6ull << 30, true));
  ASSERT_EQ(Kinds(f), std::vector<std::string>{"efa_idle_tcp_busy"});
  EXPECT_EQ(f[0].severity, common::Severity::kWarning) << "a heuristic warns, never pages";
}

TEST_F(FallbackTest, SilentWhenEfaCarriesTheTraffic) {
  HealthRules rules(HealthOptions{});
  rules.Evaluate(Sample(0s, 0, 0, true));
  rules.Evaluate(Sample(60s, 50ull << 30, 1ull << 30, true));
  EXPECT_THAT(rules.Evaluate(Sample(120s, 100ull << 30, 6ull << 30, true)), IsEmpty());
}

TEST_F(FallbackTest, SilentWithoutNcclJobs) {
  HealthRules rules(HealthOptions{});
  rules.Evaluate(Sample(0s, 0, 0, false));
  EXPECT_THAT(rules.Evaluate(Sample(120s, 0, 6ull << 30, false)), IsEmpty());
}

TEST_F(FallbackTest, OwnProbeTrafficDoesNotCount) {
  HealthRules rules(HealthOptions{});
  rules.Evaluate(Sample(0s, 0, 0, true, 0));
  EXPECT_THAT(rules.Evaluate(Sample(120s, 0, 6ull << 30, true, 6ull << 30)), IsEmpty());
}

}  // namespace
}  // namespace efawatch::efa
