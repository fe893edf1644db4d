// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>
#include <vector>

namespace efawatch::efa {

enum class Scope { kPort, kDevice };

/// A hw_counters file name the EFA driver exposes, with what we know about it. Source: the EFA
/// driver's efa_verbs.c stat tables (port: 22 names, device: 12 plus 2 kernel-verbs ones);
/// efa-and-libfabric.md §1.4. Names we do not know are still exported, generically.
struct KnownCounter {
  std::string_view name;
  Scope scope;
  std::string_view help;
  bool trouble;  // AWS lists it as a degradation or failure indicator
};

const std::vector<KnownCounter>& KnownCounters();

/// The known counter of this name, or nullptr.
const KnownCounter* FindKnownCounter(std::string_view name);

}  // namespace efawatch::efa
