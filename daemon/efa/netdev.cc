// SPDX-License-Identifier: Apache-2.0
#include "daemon/efa/netdev.h"

#include <fstream>
#include <sstream>

namespace efawatch::efa {

absl::StatusOr<std::map<std::string, InterfaceCounters>> ReadNetDev(
    const std::filesystem::path& procfs_root, const std::vector<std::string>& prefixes) {
  const auto path = procfs_root / "net" / "dev";
  std::ifstream in(path);
  if (!in) return absl::UnavailableError("cannot read " + path.string());
  std::map<std::string, InterfaceCounters> out;
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;  // header lines
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    bool wanted = false;
    for (const auto& p : prefixes) wanted = wanted || name.starts_with(p);
    if (!wanted) continue;
    // Receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets…
    std::istringstream fields(line.substr(colon + 1));
    uint64_t v[16] = {};
    int n = 0;
    while (n < 16 && fields >> v[n]) ++n;
    if (n < 10) continue;  // malformed line: skipped, the others still count
    out[name] = InterfaceCounters{v[0], v[1], v[8], v[9]};
  }
  return out;
}

}  // namespace efawatch::efa
