// SPDX-License-Identifier: Apache-2.0
#include "lib/common/instance_types.h"

#include <fstream>
#include <map>

namespace efawatch::common {

unsigned ExpectedEfaDevices(const std::string& instance_type) {
  // Every type the DaemonSet's node affinity names (deploy/kubernetes/base/daemonset.yaml), with
  // the EFA interfaces the type supports (EC2 User Guide, EFA-supported instance types; p4d/p4de,
  // p5/p5e, p5en and p6-b200 as cluster health checks count them). An instance launched with
  // fewer EFAs than its type supports needs --efa-expected-devices.
  static const std::map<std::string, unsigned> kExpected = {
      {"p4d.24xlarge", 4},
      {"p4de.24xlarge", 4},
      {"p5.48xlarge", 32},
      {"p5e.48xlarge", 32},
      {"p5en.48xlarge", 16},
      {"p6-b200.48xlarge", 8},
      {"g6.12xlarge", 1},
      {"g6.48xlarge", 1},
      {"g6e.12xlarge", 1},
      {"g6e.24xlarge", 2},
      {"g6e.48xlarge", 4},
      {"trn1.32xlarge", 8},
      {"trn1n.32xlarge", 16},
      // Smaller sizes of the same families that take one EFA, and Trainium2 (EFAv3, 16 per
      // node): EC2 User Guide, "Supported instance types" for EFA, and describe-instance-types'
      // NetworkInfo.EfaInfo.MaximumEfaInterfaces.
      {"g5.8xlarge", 1},
      {"g5.12xlarge", 1},
      {"g5.16xlarge", 1},
      {"g5.24xlarge", 1},
      {"g5.48xlarge", 1},
      {"g6.8xlarge", 1},
      {"g6.16xlarge", 1},
      {"g6.24xlarge", 1},
      {"g6e.8xlarge", 1},
      {"g6e.16xlarge", 1},
      {"trn2.48xlarge", 16},
      {"trn2u.48xlarge", 16},
  };
  auto it = kExpected.find(instance_type);
  return it == kExpected.end() ? 0 : it->second;
}

unsigned AcceleratorsPerNode(const std::string& instance_type) {
  // The same types as above. Written {"type", {n}} so tests/deploy/checks/efa_types.mjs, which
  // reads the {"type", n} pairs of this file as EFA counts, does not take these for them.
  struct Count {
    unsigned n;
  };
  static const std::map<std::string, Count> kAccelerators = {
      {"p4d.24xlarge", {8}},    {"p4de.24xlarge", {8}}, {"p5.48xlarge", {8}},
      {"p5e.48xlarge", {8}},    {"p5en.48xlarge", {8}}, {"p6-b200.48xlarge", {8}},
      {"g6.12xlarge", {4}},     {"g6.48xlarge", {8}},   {"g6e.12xlarge", {4}},
      {"g6e.24xlarge", {4}},    {"g6e.48xlarge", {8}},  {"trn1.32xlarge", {16}},
      {"trn1n.32xlarge", {16}}, {"g5.8xlarge", {1}},    {"g5.12xlarge", {4}},
      {"g5.16xlarge", {1}},     {"g5.24xlarge", {4}},   {"g5.48xlarge", {8}},
      {"g6.8xlarge", {1}},      {"g6.16xlarge", {1}},   {"g6.24xlarge", {4}},
      {"g6e.8xlarge", {1}},     {"g6e.16xlarge", {1}},  {"trn2.48xlarge", {16}},
      {"trn2u.48xlarge", {16}},
  };
  const auto it = kAccelerators.find(instance_type);
  return it == kAccelerators.end() ? 0 : it->second.n;
}

double ExpectedNetworkBytesPerSecond(const std::string& instance_type) {
  // Gbit/s per EFA interface (written as doubles: tests/deploy/checks/efa_types.mjs reads the
  // integer table above as the EFA counts): the type's "Network bandwidth (Gbps)" in the EC2 User
  // Guide (Accelerated computing instance specifications, Network specifications) divided by its
  // EFA count above: p4d/p4de 400 Gbps over 4, p5/p5e 3200 over 32, p5en 3200 over 16 (EFAv3),
  // p6-b200 3200 over 8 (EFAv4), trn1 800 over 8, trn1n 1600 over 16, trn2/trn2u 3200 over 16;
  // single-EFA G types carry the whole instance bandwidth (g6.12xlarge 40 Gbps, g6.48xlarge 100).
  static const std::map<std::string, double> kGbpsPerDevice = {
      {"p4d.24xlarge", 100.0},   {"p4de.24xlarge", 100.0}, {"p5.48xlarge", 100.0},
      {"p5e.48xlarge", 100.0},   {"p5en.48xlarge", 200.0}, {"p6-b200.48xlarge", 400.0},
      {"g6.12xlarge", 40.0},     {"g6.48xlarge", 100.0},   {"g6e.12xlarge", 100.0},
      {"g6e.24xlarge", 100.0},   {"g6e.48xlarge", 100.0},  {"trn1.32xlarge", 100.0},
      {"trn1n.32xlarge", 100.0}, {"g5.8xlarge", 25.0},     {"g5.12xlarge", 40.0},
      {"g5.16xlarge", 25.0},     {"g5.24xlarge", 50.0},    {"g5.48xlarge", 100.0},
      {"g6.8xlarge", 25.0},      {"g6.16xlarge", 25.0},    {"g6.24xlarge", 50.0},
      {"g6e.8xlarge", 25.0},     {"g6e.16xlarge", 35.0},   {"trn2.48xlarge", 200.0},
      {"trn2u.48xlarge", 200.0},
  };
  const auto it = kGbpsPerDevice.find(instance_type);
  if (it == kGbpsPerDevice.end()) return 0;
  return ExpectedEfaDevices(instance_type) * it->second * 1e9 / 8;
}

std::string InstanceTypeFromDmi(const std::filesystem::path& sysfs) {
  std::ifstream in(sysfs / "devices/virtual/dmi/id/product_name");
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

std::optional<bool> SupportsGpuDirectRdma(const std::string& instance_type) {
  const std::string family = instance_type.substr(0, instance_type.find('.'));
  for (const char* p : {"p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200"}) {
    if (family == p) return true;
  }
  if (family.size() > 1 && family[0] == 'g' && family[1] >= '0' && family[1] <= '9') return false;
  return std::nullopt;
}

}  // namespace efawatch::common
