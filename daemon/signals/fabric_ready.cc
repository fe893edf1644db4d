// SPDX-License-Identifier: Apache-2.0
#include "daemon/signals/fabric_ready.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/kube/node_conditions.h"

namespace efawatch::signals {

NodeCondition FabricReadyCondition(const FabricReadyInputs& in) {
  const auto no = [](const char* reason, std::string message) {
    return NodeCondition{kube::kFabricReady, false, reason, std::move(message)};
  };
  if (!in.doctor) return no("DoctorPending", "efawatch has not checked this node yet");
  std::vector<std::string> failing;
  for (const doctor::Check& c : *in.doctor) {
    if (c.status == doctor::Status::kFail) failing.push_back(absl::StrCat(c.id, ": ", c.summary));
  }
  if (!failing.empty()) {
    return no("DoctorFailing",
              absl::StrCat("efawatch doctor FAILs: ", absl::StrJoin(failing, "; ")));
  }
  if (in.efa_devices == 0) return no("NoEfaDevices", "no EFA device on this node");
  if (in.efa_expected > 0 && in.efa_devices < in.efa_expected) {
    return no("EfaDevicesMissing",
              absl::StrCat(in.efa_devices, " EFA devices of the ", in.efa_expected, " expected"));
  }
  switch (in.self_ping.outcome) {
    case SelfPingState::Outcome::kNoResponder:
      return no("FabricResponderOff",
                "no fabric responder runs on this node, so the fabric cannot be proven");
    case SelfPingState::Outcome::kPending:
      return no("SelfPingPending", "the fabric self-ping has not finished yet");
    case SelfPingState::Outcome::kFailed:
      return no("SelfPingFailed", absl::StrCat("the fabric responder did not answer a ping over "
                                               "this node's fabric: ",
                                               in.self_ping.detail));
    case SelfPingState::Outcome::kAnswered:
      break;
  }
  return {kube::kFabricReady, true, "FabricChecksPassed",
          absl::StrCat("doctor has no FAIL, ", in.efa_devices,
                       " EFA devices as expected, the fabric responder answers a self-ping (",
                       in.self_ping.detail, ")")};
}

std::optional<NodeCondition> FabricReadyOf(const state::NodeState& node) {
  if (node.efa_devices == 0 && node.efa_expected == 0) return std::nullopt;
  return FabricReadyCondition({.doctor = node.doctor,
                               .efa_devices = node.efa_devices,
                               .efa_expected = node.efa_expected,
                               .self_ping = node.self_ping});
}

}  // namespace efawatch::signals
