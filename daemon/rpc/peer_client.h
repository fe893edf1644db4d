// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/agent/fabric_address_lookup.h"
#include "probes/collective/coordinator.h"
#include "probes/mesh/mesh.h"

namespace grpc {
class ChannelCredentials;
class Channel;
class ClientContext;
}  // namespace grpc

namespace efawatch::rpc {

/// How this agent talks to other agents' gRPC edges. Agents of one fleet share a CA, so the
/// agent presents its own server certificate as its client certificate and trusts peers signed
/// by the CA it checks clients against.
struct PeerTls {
  std::string cert_file;  ///< Empty: plaintext (the fleet runs with --grpc-insecure).
  std::string key_file;
  std::string ca_file;  ///< Empty: the system's root certificates.
  /// Name to check the peer's certificate against instead of the address dialled: agents are
  /// dialled by pod IP, while a fleet certificate usually names a service.
  std::string server_name;
  /// How often the files are read again (renewals); gRPC counts it in whole seconds.
  std::chrono::milliseconds refresh{30000};
};

/// A refresh period as gRPC's file watchers take it: whole seconds, at least one.
unsigned int RefreshSeconds(std::chrono::milliseconds refresh);

/// Channel credentials for PeerTls; INVALID_ARGUMENT names an unreadable file.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> PeerCredentials(const PeerTls& tls);

/// Channel arguments that go with PeerTls (the server-name override).
std::shared_ptr<grpc::Channel> PeerChannel(const std::string& agent,
                                           const std::shared_ptr<grpc::ChannelCredentials>& creds,
                                           const std::string& server_name);

/// One channel per peer agent (its TCP/TLS connection is reused call after call), bounded.
/// Thread-safe.
class PeerChannels {
 public:
  static absl::StatusOr<std::unique_ptr<PeerChannels>> Create(const PeerTls& tls);
  std::shared_ptr<grpc::Channel> Get(const std::string& agent);

 private:
  PeerChannels() = default;
  static constexpr size_t kMaxChannels = 256;

  std::shared_ptr<grpc::ChannelCredentials> creds_;
  std::string server_name_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;  // guarded by mu_
};

/// The mesh's PeerLookup over gRPC: Agent.GetFabricAddress, blocking with a deadline.
class GrpcPeerLookup final : public mesh::PeerLookup, public agent::FabricAddressLookup {
 public:
  explicit GrpcPeerLookup(PeerChannels& channels) : channels_(channels) {}
  /// The one GetFabricAddress client: asynchronous, on gRPC's callback API, so no thread waits
  /// on the network. `done` gets the peer's identity or UNAVAILABLE naming the agent.
  void Ask(const std::string& agent, std::chrono::milliseconds timeout,
           std::function<void(absl::StatusOr<mesh::PeerIdentity>)> done);
  /// For the mesh's round thread: Ask, waited for.
  absl::StatusOr<mesh::PeerIdentity> Lookup(const std::string& agent,
                                            std::chrono::milliseconds timeout) override;
  /// For on-demand probes: the raw fabric address only.
  void LookupAsync(const std::string& agent, std::chrono::milliseconds timeout,
                   std::function<void(absl::StatusOr<std::string>)> done) override;

 private:
  PeerChannels& channels_;
};

/// The collective coordinator's calls to participants over gRPC. CancelAll() cancels every call
/// in flight (agent shutdown) and every later one.
class GrpcCollectiveCalls final : public collective::ParticipantCalls {
 public:
  explicit GrpcCollectiveCalls(PeerChannels& channels) : channels_(channels) {}
  absl::StatusOr<collective::JoinResponse> Join(const std::string& agent,
                                                const collective::JoinRequest& r,
                                                std::chrono::milliseconds timeout) override;
  absl::StatusOr<collective::RankResult> Start(const std::string& agent,
                                               const collective::StartRequest& r,
                                               std::chrono::milliseconds timeout) override;
  void Abort(const std::string& agent, const collective::AbortRequest& r,
             std::chrono::milliseconds timeout) override;
  void CancelAll() override;

 private:
  template <typename Req, typename Resp, typename Method>
  absl::StatusOr<Resp> Call(const std::string& agent, const char* what, const Req& request,
                            std::chrono::milliseconds timeout, Method method);

  PeerChannels& channels_;
  std::mutex mu_;
  bool cancelled_ = false;                    // guarded by mu_
  std::set<grpc::ClientContext*> in_flight_;  // guarded by mu_
};

}  // namespace efawatch::rpc
