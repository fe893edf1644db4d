// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cli/agent_client.h"

namespace efawatch::cli {

struct PingArgs {
  std::string peer;  ///< The peer agent's gRPC address (host:port).
  uint32_t count = 100;
  uint32_t size = 64;
  uint32_t deadline_ms = 10000;
  uint32_t timeout_ms = 1000;  ///< Per message.
};

struct BandwidthArgs {
  std::string peer;
  std::vector<uint64_t> sizes;  ///< Empty: the agent's default sweep (4 KiB .. 8 MiB).
  bool bidirectional = false;
  bool rma = false;     ///< RMA writes into the peer's sink instead of messages.
  uint32_t window = 0;  ///< 0: the agent's default.
  uint32_t ms_per_size = 0;
  uint32_t deadline_ms = 30000;
};

/// `efawatch ping`: asks agent `conn` to ping the agent `args.peer` over the fabric and prints a
/// table like fi_pingpong's (text) or the response (json). Exit code: 0 when the probe completed,
/// 3 when it ran but did not complete (peer timed out, deadline), 1 when the agent refused or
/// failed (one line on `err`), 2 on a usage error.
int RunPing(const AgentConnection& conn, const PingArgs& args, const std::string& format,
            std::ostream& out, std::ostream& err);

/// `efawatch bandwidth`: the same for a bandwidth sweep.
int RunBandwidth(const AgentConnection& conn, const BandwidthArgs& args, const std::string& format,
                 std::ostream& out, std::ostream& err);

struct CollectiveArgs {
  std::vector<std::string> agents;  ///< Participants' gRPC addresses; rank = position.
  std::string op = "all_reduce";
  std::string sizes = "1M:16M:4";  ///< MIN:MAX[:FACTOR] or a list; K, M, G suffixes.
  std::string backend = "host";    ///< host or nccl
  uint32_t warmup = 0;             ///< 0: the agent's default (2)
  uint32_t iters = 0;              ///< 0: the agent's default (10)
  uint32_t deadline_ms = 60000;
};

/// `efawatch collective`: has agent `conn` (default: the first of `args.agents`) coordinate a
/// collective across `args.agents` and prints an nccl-tests-like table (size, count, type, time,
/// algbw, busbw, #wrong), the average bus bandwidth, and, for NCCL, the transport NCCL picked.
/// Exit code: 0 when it completed with correct data and no fallback, 3 when the data check failed
/// or NCCL fell back to TCP or loopback, 1 when the agents refused or aborted it (one line on
/// `err`), 2 on a usage error.
int RunCollective(const AgentConnection& conn, const CollectiveArgs& args,
                  const std::string& format, std::ostream& out, std::ostream& err);

}  // namespace efawatch::cli
