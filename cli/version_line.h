// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "efawatch/version.h"

namespace efawatch::cli {

/// What `efawatch --version` and `efawatch version` print: the version (CMake's
/// project(VERSION)), the git revision it was built from, and the NCCL the probe was built
/// against. One place, so the front binary and efawatch-rpc say the same.
inline std::string VersionLine() {
  return std::string("efawatch ") + EFAWATCH_VERSION + " (" + EFAWATCH_REVISION + ")" +
         (std::string(EFAWATCH_NCCL_VERSION).empty() ? ", NCCL probe not built"
                                                     : ", NCCL " EFAWATCH_NCCL_VERSION);
}

}  // namespace efawatch::cli
