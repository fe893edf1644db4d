// SPDX-License-Identifier: Apache-2.0
#include "daemon/agent/operations.h"

#include "spdlog/spdlog.h"

namespace efawatch::agent {

absl::StatusOr<FabricAddress> Operations::GetFabricAddress() const {
  if (parts_.fabric == nullptr || parts_.fabric->responder() == nullptr) {
    return absl::NotFoundError("this agent runs no fabric responder");
  }
  const fabric::Responder& r = *parts_.fabric->responder();
  return FabricAddress{.info = r.info(),
                       .address = r.address(),
                       .printable = r.printable_address(),
                       .node_name = parts_.node_name};
}

void Operations::Ping(const CallContext& call, const ProbeTarget& target,
                      fabric::PingOptions options, PingDone done) {
  parts_.probes->Ping(call, target, std::move(options), std::move(done));
}

void Operations::Bandwidth(const CallContext& call, const ProbeTarget& target,
                           fabric::BandwidthOptions options, BandwidthDone done) {
  parts_.probes->Bandwidth(call, target, std::move(options), std::move(done));
}

void Operations::RunCollective(const CallContext& call, collective::RunRequest request,
                               CollectiveDone done) {
  parts_.coordination->Run(call, std::move(request), std::move(done));
}

void Operations::JoinCollective(const CallContext& call, const collective::JoinRequest& request,
                                JoinDone done) {
  if (parts_.collective == nullptr) {
    return done(
        absl::FailedPreconditionError("this agent takes part in no collectives (no fabric)"));
  }
  if (call.cancelled()) return done(absl::CancelledError("the call was cancelled"));
  // Opening the backend calls fi_getinfo and opens an endpoint: on the participant's own join
  // thread, never the caller's (a gRPC callback thread serves every call).
  parts_.collective->JoinAsync(request, std::move(done));
}

void Operations::StartCollective(const CallContext& call, const collective::StartRequest& request,
                                 RankDone done) {
  if (parts_.collective == nullptr) {
    return done(absl::FailedPreconditionError("this agent takes part in no collectives"));
  }
  parts_.collective->Start(request, std::move(done), call.cancel, call.deadline);
}

void Operations::AbortCollective(const collective::AbortRequest& request) {
  if (parts_.collective == nullptr) return;
  if (!request.reason.empty()) {
    spdlog::warn("collective {} aborted: {}", request.session, request.reason);
  }
  parts_.collective->Abort(request.session);
}

void Operations::RunDoctor(const CallContext& call, DoctorDone done) {
  // A run is a few file reads shared by every caller waiting: the call bounds only whether one
  // is asked for (the edge answers a caller that leaves at once, and drops the late report).
  if (call.cancelled()) return done(absl::CancelledError("the call was cancelled"));
  parts_.doctor->RunAsync(std::move(done));
}

}  // namespace efawatch::agent
