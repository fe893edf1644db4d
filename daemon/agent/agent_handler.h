// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/agent/call_context.h"
#include "daemon/agent/node_health.h"
#include "daemon/doctor/doctor_runner.h"
#include "lib/common/findings_board.h"
#include "probes/collective/types.h"
#include "probes/fabric/probe.h"

namespace efawatch::agent {

/// Whom a probe goes to: the peer agent's gRPC address (its fabric address is asked of it), or a
/// raw fabric address.
struct ProbeTarget {
  std::string peer_agent;
  std::string peer_address;
};

/// This agent's fabric endpoint, as GetFabricAddress answers it.
struct FabricAddress {
  fabric::FabricInfo info;
  std::string address;    ///< Raw (fi_getname).
  std::string printable;  ///< fi_av_straddr form.
  std::string node_name;
};

/// The operations the gRPC Agent service offers, in the agent's own records: the edge converts
/// messages and calls one method, nothing else (validation, peer lookup and collective
/// coordination live behind it, in daemon/agent). A plain interface so tests drive the real gRPC
/// server with a handler of their own (dynolog's habit).
///
/// Methods are called from gRPC threads concurrently and must not block on I/O (nor on libfabric
/// setup: a gRPC callback thread is shared by every call). Methods taking a `done` callback call
/// it exactly once, on any thread (inline when they fail at once). Their `call` bounds them: work
/// ends by its deadline (DEADLINE_EXCEEDED when that is what ended it) and soon after its token is
/// triggered (CANCELLED), freeing whatever slot it held; `done` is still called then.
class AgentHandler {
 public:
  using PingDone = std::function<void(absl::StatusOr<fabric::PingResult>)>;
  using BandwidthDone = std::function<void(absl::StatusOr<fabric::BandwidthResult>)>;
  using CollectiveDone = std::function<void(absl::StatusOr<collective::Result>)>;
  using JoinDone = std::function<void(absl::StatusOr<collective::JoinResponse>)>;
  using RankDone = std::function<void(absl::StatusOr<collective::RankResult>)>;
  using DoctorDone = std::function<void(absl::StatusOr<doctor::Report>)>;

  virtual ~AgentHandler() = default;
  virtual common::NodeHealth GetNodeHealth() const = 0;
  /// The node's findings board, for streaming. Outlives the gRPC edge.
  virtual common::FindingsBoard& findings() const = 0;
  /// NOT_FOUND when this agent runs no fabric responder.
  virtual absl::StatusOr<FabricAddress> GetFabricAddress() const = 0;

  /// Fabric probes toward another agent. INVALID_ARGUMENT for options beyond the limits or no
  /// target, FAILED_PRECONDITION without a fabric, UNAVAILABLE when the peer cannot be asked.
  virtual void Ping(const CallContext& call, const ProbeTarget& target, fabric::PingOptions options,
                    PingDone done) = 0;
  virtual void Bandwidth(const CallContext& call, const ProbeTarget& target,
                         fabric::BandwidthOptions options, BandwidthDone done) = 0;

  /// Coordinates a collective across agents (this one needs not take part).
  virtual void RunCollective(const CallContext& call, collective::RunRequest request,
                             CollectiveDone done) = 0;
  /// This agent's side of a collective another agent coordinates. Joining opens a libfabric
  /// backend (fi_getinfo and more), so it runs off the caller's thread.
  virtual void JoinCollective(const CallContext& call, const collective::JoinRequest& request,
                              JoinDone done) = 0;
  virtual void StartCollective(const CallContext& call, const collective::StartRequest& request,
                               RankDone done) = 0;
  virtual void AbortCollective(const collective::AbortRequest& request) = 0;

  /// Runs the doctor's checks now (node, and the node's NCCL processes). RESOURCE_EXHAUSTED when
  /// too many runs are already waiting.
  virtual void RunDoctor(const CallContext& call, DoctorDone done) = 0;
};

}  // namespace efawatch::agent
