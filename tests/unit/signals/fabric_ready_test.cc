// SPDX-License-Identifier: Apache-2.0
// FabricReady on hand-built inputs: True only when every check passed, else the first reason.
#include "daemon/signals/fabric_ready.h"

#include <gtest/gtest.h>

namespace efawatch::signals {
namespace {

using Outcome = SelfPingState::Outcome;

doctor::Check Check(const char* id, doctor::Status status, const char* summary = "") {
  doctor::Check c;
  c.id = id;
  c.status = status;
  c.summary = summary;
  return c;
}

FabricReadyInputs AllGood() {
  FabricReadyInputs in;
  in.doctor = std::vector<doctor::Check>{Check("gpu.driver", doctor::Status::kPass),
                                         Check("gpu.peermem", doctor::Status::kWarn),
                                         Check("efa.devices", doctor::Status::kPass)};
  in.efa_devices = 32;
  in.efa_expected = 32;
  in.self_ping = {Outcome::kAnswered, "10 of 10 pongs"};
  return in;
}

TEST(FabricReadyTest, TrueWhenEveryCheckPasses) {
  const NodeCondition c = FabricReadyCondition(AllGood());
  EXPECT_EQ(c.type, "FabricReady");
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.reason, "FabricChecksPassed");
  EXPECT_NE(c.message.find("10 of 10 pongs"), std::string::npos) << c.message;
}

TEST(FabricReadyTest, FalseWithTheFirstReasonThatHolds) {
  struct Case {
    const char* reason;
    void (*breaks)(FabricReadyInputs&);
  };
  for (const Case& k : std::initializer_list<Case>{
           {"DoctorPending", [](FabricReadyInputs& in) { in.doctor.reset(); }},
           {"DoctorFailing",
            [](FabricReadyInputs& in) {
              in.doctor->push_back(Check("efa.devices", doctor::Status::kFail,
                                         "fewer EFA devices than the type has"));
            }},
           {"NoEfaDevices", [](FabricReadyInputs& in) { in.efa_devices = 0; }},
           {"EfaDevicesMissing", [](FabricReadyInputs& in) { in.efa_devices = 31; }},
           {"FabricResponderOff",
            [](FabricReadyInputs& in) {
              in.self_ping = {Outcome::kNoResponder, ""};
            }},
           {"SelfPingPending",
            [](FabricReadyInputs& in) {
              in.self_ping = {Outcome::kPending, ""};
            }},
           {"SelfPingFailed",
            [](FabricReadyInputs& in) {
              in.self_ping = {Outcome::kFailed, "0 of 10 pongs"};
            }},
       }) {
    FabricReadyInputs in = AllGood();
    k.breaks(in);
    const NodeCondition c = FabricReadyCondition(in);
    EXPECT_FALSE(c.ok) << k.reason;
    EXPECT_EQ(c.reason, k.reason);
    EXPECT_FALSE(c.message.empty()) << k.reason;
  }
}

TEST(FabricReadyTest, TheDoctorsFailureIsNamed) {
  FabricReadyInputs in = AllGood();
  in.doctor->push_back(Check("gpu.driver", doctor::Status::kFail, "no driver"));
  in.self_ping = {Outcome::kFailed, "x"};  // an earlier reason wins
  const NodeCondition c = FabricReadyCondition(in);
  EXPECT_EQ(c.reason, "DoctorFailing");
  EXPECT_NE(c.message.find("gpu.driver: no driver"), std::string::npos) << c.message;
}

TEST(FabricReadyTest, AnUnknownExpectationTakesAnyDevice) {
  FabricReadyInputs in = AllGood();
  in.efa_expected = 0;
  in.efa_devices = 1;
  EXPECT_TRUE(FabricReadyCondition(in).ok);
}

}  // namespace
}  // namespace efawatch::signals
