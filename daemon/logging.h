// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "daemon/config.h"

namespace efawatch {

/// Sets the process-wide spdlog logger: stderr, text or one JSON object per line (message
/// JSON-escaped), at the given level. Call once, before threads start.
void SetupLogging(LogFormat format, const std::string& level);

}  // namespace efawatch
