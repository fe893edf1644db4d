// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <iosfwd>
#include <string>

#include "cli/agent_client.h"

namespace efawatch::cli {

// `efawatch doctor --agent A`: asks the agent to run its doctor (RunDoctor) and prints the
// node's checks and each NCCL process's, by pod. Exit codes as `efawatch doctor`.
int RunAgentDoctor(const AgentConnection& conn, const std::string& format, std::ostream& out,
                   std::ostream& err);

}  // namespace efawatch::cli
