#include "daemon/efa/instance_types.h"

#include <map>

namespace efawatch::efa {

unsigned ExpectedEfaDevices(const std::string& instance_type) {
  static const std::map<std::string, unsigned> kExpected = {
      {"p5.48xlarge", 32}, {"p5en.48xlarge", 16}, {"p6-b200.48xlarge", 8},
      {"p4d.24xlarge", 4}, {"g6.12xlarge", 1},
  };
  auto it = kExpected.find(instance_type);
  return it == kExpected.end() ? 0 : it->second;
}

}  // namespace efawatch::efa
