// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <ostream>
#include <string>

#include "cli/agent_client.h"

namespace efawatch::cli {

/// `efawatch status`: asks the agent for its node health and prints it as text or JSON.
/// Returns the process exit code: 0 on success, 1 when the agent cannot be reached or fails
/// (one line on `err`), 2 on a usage error.
int RunStatus(const AgentConnection& conn, const std::string& format, std::ostream& out,
              std::ostream& err);

}  // namespace efawatch::cli
