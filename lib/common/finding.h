// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "lib/common/finding_kind.h"

namespace efawatch::common {

enum class Severity { kInfo = 1, kWarning = 2, kCritical = 3 };

std::string_view SeverityName(Severity s);

/// Where a finding came from: a file and line, a device, a probe.
struct Evidence {
  std::string source;
  uint64_t line = 0;
  std::string text;

  bool empty() const { return source.empty() && line == 0 && text.empty(); }
};

/// One thing the agent found wrong (or noteworthy) on its node. `kind` is the wire name of a
/// FindingKind (or an EfaCounterRiseKind), stable and documented in docs/findings.md; `subject`
/// says what it is about (device, pod, process), for people. `namespace_name` and `pod` name the
/// pod whose log showed it (empty for node, device and --log-glob file findings): the metrics carry
/// them, so an alert about a job's failure names that job and not a neighbour on the same node.
struct Finding {
  std::string kind;
  Severity severity = Severity::kInfo;
  std::string subject;
  std::string message;
  Evidence evidence;
  std::chrono::system_clock::time_point first_seen{};
  std::chrono::system_clock::time_point last_seen{};
  std::string namespace_name;
  std::string pod;

  bool Is(FindingKind k) const { return IsKind(kind, k); }
};

}  // namespace efawatch::common
