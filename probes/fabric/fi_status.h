// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace efawatch::fabric {

/// Turns a negative libfabric return code into an absl::Status that names the call and carries
/// fi_strerror's text, e.g. "fi_getinfo: -61 (No data available)" (the form fi_info prints).
/// `ret` is the raw return value (negative FI_E* code); 0 and positive values give OK.
absl::Status FiStatus(absl::string_view call, long ret);

}  // namespace efawatch::fabric
