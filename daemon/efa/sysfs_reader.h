// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace efawatch::efa {

struct PortSnapshot {
  int port = 0;
  int state_id = -1;                  // "4: ACTIVE" -> 4; -1 when unreadable
  std::string state;                  // "ACTIVE"
  int phys_state_id = -1;             // "5: LinkUp" -> 5
  std::string phys_state;             // "LinkUp"
  double rate_bytes_per_second = -1;  // "100 Gb/sec (4X EDR)" -> 1.25e10
  std::string link_layer;
  std::map<std::string, uint64_t> counters;  // readable hw_counters of port scope
  std::vector<std::string> unreadable;       // hw_counters whose read failed: unknown, not 0
};

/// One RDMA device as read from sysfs at one moment. Plain value.
struct DeviceSnapshot {
  std::string name;
  bool is_efa = false;
  std::string driver;       // basename of device/driver
  std::string vendor;       // device/vendor, "0x1d0f" for Amazon
  std::string pci_address;  // "0000:4f:00.0", from device/uevent or the device link
  std::string numa_node;
  std::string local_cpus;           // device/local_cpulist
  std::string uverbs;               // "uverbs0"
  std::string p2p;                  // device/p2p: "NVIDIA", "NVIDIA peermem", "" (driver >= 2.6)
  bool legacy_flat_layout = false;  // driver < r1.14: one counter list in both places
  std::map<std::string, uint64_t> counters;  // readable hw_counters of device scope
  std::vector<std::string> unreadable;
  std::vector<PortSnapshot> ports;
};

/// Lists the device directories under `<sysfs_root>/class/infiniband`, sorted. A missing class
/// directory means no RDMA devices: an empty list, not an error.
absl::StatusOr<std::vector<std::string>> ListRdmaDevices(const std::filesystem::path& sysfs_root);

/// Reads one device directory (`<sysfs_root>/class/infiniband/<name>`). Counter files are
/// assigned to their scope by name (port counters from ports/N/hw_counters, device counters from
/// hw_counters), so the legacy flat layout, which lists every name in both, is not counted
/// twice. Names we do not know are kept where they were found. Each hw_counters directory is
/// read in one burst, so the driver serves it from one device query (its `lifespan` cache).
DeviceSnapshot ReadDevice(const std::filesystem::path& sysfs_root, const std::string& name);

/// Parses "4: ACTIVE" into {4, "ACTIVE"}; {-1, text} when there is no number.
std::pair<int, std::string> ParseIdState(const std::string& text);

/// Parses "100 Gb/sec (4X EDR)" into bytes per second (1.25e10); -1 when malformed.
double ParseRateBytesPerSecond(const std::string& text);

}  // namespace efawatch::efa
