#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "daemon/common/collector_status.h"
#include "daemon/common/finding.h"

namespace efawatch::common {

/// What the agent knows about its node at one moment; an immutable value the gRPC edge renders.
struct NodeHealth {
  std::string node;
  std::string agent_version;
  std::string agent_revision;
  std::chrono::system_clock::time_point start_time{};
  std::vector<CollectorState> collectors;
  std::vector<Finding> findings;
  std::string fabric_provider;
  unsigned efa_devices = 0;
};

}  // namespace efawatch::common
