// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace efawatch::efa {

struct InterfaceCounters {
  uint64_t rx_bytes = 0;
  uint64_t rx_packets = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_packets = 0;
};

/// Parses `<procfs_root>/net/dev` (two header lines, then `iface: 16 numbers`). Keeps only
/// interfaces whose name starts with one of `prefixes` (the host's ethernet/ENA interfaces:
/// eth, ens, enp, eno by default; pod veths and bridges would double-count traffic).
absl::StatusOr<std::map<std::string, InterfaceCounters>> ReadNetDev(
    const std::filesystem::path& procfs_root, const std::vector<std::string>& prefixes);

}  // namespace efawatch::efa
