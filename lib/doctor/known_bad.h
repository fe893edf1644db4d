// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

// Version combinations with a documented incompatibility, each row with its source. Only facts
// that can be cited go here (docs/doctor.md repeats each row and its source).
namespace efawatch::doctor {

struct Versions {
  std::string nccl;           ///< "2.28.9", "" when unknown
  std::vector<int> plugin;    ///< net plugin API versions the plugin exports; empty: no plugin
  std::string instance_type;  ///< "p5.48xlarge", "" when unknown
  std::string efa_use_device_rdma;  ///< FI_EFA_USE_DEVICE_RDMA as set, "" when unset
};

struct KnownBad {
  std::string id;       ///< stable row id
  std::string problem;  ///< what breaks
  std::string fix;
  std::string source;  ///< where the fact comes from
};

/// The rows that match `v`.
std::vector<KnownBad> MatchKnownBad(const Versions& v);

/// "2.19.1" -> 21901 (NCCL's own code form); 0 when not a version.
int VersionCode(const std::string& version);

}  // namespace efawatch::doctor
