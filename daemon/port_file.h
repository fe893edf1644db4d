// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "absl/status/status.h"

namespace efawatch {

/// Writes {"metrics": port, "grpc": port} to `path` atomically (write, then rename), so a test
/// that polls for the file never reads half of it.
absl::Status WritePortFile(const std::string& path, int metrics_port, int grpc_port);

}  // namespace efawatch
