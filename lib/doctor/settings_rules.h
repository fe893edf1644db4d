// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lib/doctor/doctor.h"

// The settings rules: what a process's NCCL_/FI_ variables say about whether its traffic can
// use EFA. One table, read by `efawatch doctor` (each row is one of its settings checks, on a
// process or image) and by the admission webhook (the same rows on a pod's container env,
// before the pod runs), so both say the same thing in the same words. Plain functions over
// plain values: thread-safe.
namespace efawatch::doctor {

using SettingsEnv = std::map<std::string, std::string>;

/// What a rule knows besides the variables.
struct SettingsContext {
  /// The traffic is meant for EFA: doctor, the node has EFA devices; the webhook, the pod
  /// requests vpc.amazonaws.com/efa or targets an EFA instance type. Settings that force TCP
  /// are a FAIL there and a WARN elsewhere (on a node without EFA, TCP is the only way).
  bool efa = false;
};

struct SettingsRule {
  std::string_view id;  ///< doctor's check id, e.g. "settings.nccl_net"
  /// The webhook applies the row too. Rows about tuning rather than the fabric (protocol
  /// overrides) stay doctor's only: a pod should not be refused for them.
  bool admission = false;
  /// The variables the row reads: the webhook leaves a row out for a container that sets one of
  /// them from a ConfigMap or Secret (valueFrom), whose value it cannot see.
  std::vector<std::string_view> variables;
  Check (*judge)(const SettingsEnv& env, const SettingsContext& context);
};

/// Every row, in docs/doctor.md's order.
const std::vector<SettingsRule>& SettingsRules();

/// The row with `id`; aborts on an id the table lacks (a programming error).
const SettingsRule& SettingsRuleById(std::string_view id);

}  // namespace efawatch::doctor
