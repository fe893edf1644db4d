// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace efawatch::common {

/// The whole content of a small file (a PEM certificate or key), or InvalidArgument naming it.
inline absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read"));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace efawatch::common
