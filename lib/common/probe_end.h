// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

namespace efawatch::common {

/// How a probe ended. Anything but kCompleted still comes with the numbers gathered so far.
/// Shared by the probes, the agent's edges and the CLI, so all of them name an end alike.
enum class ProbeEnd {
  kCompleted,         ///< Every message was attempted.
  kDeadlineExceeded,  ///< The overall deadline passed first.
  kPeerTimedOut,      ///< The peer stopped answering (bandwidth: no completion for stall_timeout).
  kCancelled,         ///< The stop_token was triggered.
};

/// The stable identifier ("deadline_exceeded"), for JSON and labels.
const char* ProbeEndName(ProbeEnd end);
/// The words for people ("deadline exceeded"), for the CLI's text output.
const char* ProbeEndText(ProbeEnd end);

}  // namespace efawatch::common
