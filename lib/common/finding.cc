// SPDX-License-Identifier: Apache-2.0
#include "lib/common/finding.h"

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

}  // namespace efawatch::common
