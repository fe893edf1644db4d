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

void Operations::Ping(const ProbeTarget& target, fabric::PingOptions options, PingDone done) {
  parts_.probes->Ping(target, std::move(options), std::move(done));
}

void Operations::Bandwidth(const ProbeTarget& target, fabric::BandwidthOptions options,
                           BandwidthDone done) {
  parts_.probes->Bandwidth(target, std::move(options), std::move(done));
}

void Operations::RunCollective(collective::RunRequest request, CollectiveDone done) {
  parts_.coordination->Run(std::move(request), std::move(done));
}

absl::StatusOr<collective::JoinResponse> Operations::JoinCollective(
    const collective::JoinRequest& request) {
  if (parts_.collective == nullptr) {
    return absl::FailedPreconditionError("this agent takes part in no collectives (no fabric)");
  }
  return parts_.collective->Join(request);
}

void Operations::StartCollective(const collective::StartRequest& request, RankDone done) {
  if (parts_.collective == nullptr) {
    return done(absl::FailedPreconditionError("this agent takes part in no collectives"));
  }
  parts_.collective->Start(request, std::move(done));
}

void Operations::AbortCollective(const collective::AbortRequest& request) {
  if (parts_.collective == nullptr) return;
  if (!request.reason.empty()) {
    spdlog::warn("collective {} aborted: {}", request.session, request.reason);
  }
  parts_.collective->Abort(request.session);
}

void Operations::RunDoctor(DoctorDone done) { parts_.doctor->RunAsync(std::move(done)); }

}  // namespace efawatch::agent
