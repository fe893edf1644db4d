// SPDX-License-Identifier: Apache-2.0
#include "lib/common/probe_end.h"

namespace efawatch::common {
namespace {

struct EndNames {
  const char* name;
  const char* text;
};

// One row per ProbeEnd, in enum order.
constexpr EndNames kEnds[] = {
    {"completed", "completed"},
    {"deadline_exceeded", "deadline exceeded"},
    {"peer_timed_out", "peer timed out"},
    {"cancelled", "cancelled"},
};

const EndNames* Find(ProbeEnd end) {
  const auto i = static_cast<size_t>(end);
  return i < sizeof(kEnds) / sizeof(kEnds[0]) ? &kEnds[i] : nullptr;
}

}  // namespace

const char* ProbeEndName(ProbeEnd end) {
  const EndNames* e = Find(end);
  return e != nullptr ? e->name : "unknown";
}

const char* ProbeEndText(ProbeEnd end) {
  const EndNames* e = Find(end);
  return e != nullptr ? e->text : "unknown";
}

}  // namespace efawatch::common
