// SPDX-License-Identifier: Apache-2.0
#include "lib/common/finding.h"

#include "lib/common/finding_kind.h"

namespace efawatch::common {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "unknown";
}

std::optional<FindingKind> ParseFindingKind(std::string_view name) {
  for (const auto& [kind, kind_name] : kFindingKindNames) {
    if (kind_name == name) return kind;
  }
  return std::nullopt;
}

std::string EfaCounterRiseKind(std::string_view counter) {
  return std::string("efa_").append(counter);
}

}  // namespace efawatch::common
