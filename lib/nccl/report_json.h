// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>

#include "lib/nccl/types.h"

namespace efawatch::nccl {

// Renders a report as JSON: {"processes":[...],"findings":[...],"summary":{...}}. The field
// names are a stable interface (docs/nccl-findings.md); new fields may be added.
nlohmann::json ReportToJson(const Report& report);

}  // namespace efawatch::nccl
