// SPDX-License-Identifier: Apache-2.0
#include "daemon/port_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace efawatch {

absl::Status WritePortFile(const std::string& path, int metrics_port, int grpc_port) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"metrics\": " << metrics_port << ", \"grpc\": " << grpc_port << "}\n";
    out.flush();
    if (!out)
      return absl::InvalidArgumentError(absl::StrCat("--port-file=", path, ": cannot write"));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("--port-file=", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace efawatch
