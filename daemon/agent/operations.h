// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <string>

#include "daemon/agent/agent_handler.h"
#include "daemon/agent/coordination.h"
#include "daemon/agent/probe_runner.h"
#include "daemon/doctor/doctor_runner.h"
#include "probes/collective/participant.h"
#include "probes/fabric/fabric_service.h"

namespace efawatch::agent {

/// What the operations act on; owned by the composition root (daemon/app), which outlives them.
/// `fabric` and `collective` are null when no libfabric provider could be opened.
struct OperationsParts {
  std::string node_name;
  common::FindingsBoard* findings = nullptr;
  /// The node's health now (the composition root knows the pods, workloads and devices).
  std::function<common::NodeHealth()> node_health;
  const fabric::FabricService* fabric = nullptr;
  ProbeRunner* probes = nullptr;
  Coordination* coordination = nullptr;
  collective::Participant* collective = nullptr;
  doctor::DoctorRunner* doctor = nullptr;
};

/// The agent's on-demand operations (the AgentHandler the gRPC edge calls): each goes to the
/// module that owns it; what is missing (no fabric) is FAILED_PRECONDITION or NOT_FOUND here, so
/// the edge only maps statuses. Thread-safe as the modules are: called from gRPC threads.
class Operations final : public AgentHandler {
 public:
  explicit Operations(OperationsParts parts) : parts_(std::move(parts)) {}

  common::NodeHealth GetNodeHealth() const override { return parts_.node_health(); }
  common::FindingsBoard& findings() const override { return *parts_.findings; }
  absl::StatusOr<FabricAddress> GetFabricAddress() const override;
  void Ping(const CallContext& call, const ProbeTarget& target, fabric::PingOptions options,
            PingDone done) override;
  void Bandwidth(const CallContext& call, const ProbeTarget& target,
                 fabric::BandwidthOptions options, BandwidthDone done) override;
  void RunCollective(const CallContext& call, collective::RunRequest request,
                     CollectiveDone done) override;
  void JoinCollective(const CallContext& call, const collective::JoinRequest& request,
                      JoinDone done) override;
  void StartCollective(const CallContext& call, const collective::StartRequest& request,
                       RankDone done) override;
  void AbortCollective(const collective::AbortRequest& request) override;
  void RunDoctor(const CallContext& call, DoctorDone done) override;

 private:
  const OperationsParts parts_;
};

}  // namespace efawatch::agent
