#include "daemon/rpc/peer_client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "daemon/common/read_file.h"
#include "efawatch/v1/agent.grpc.pb.h"

namespace efawatch::rpc {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> PeerCredentials(const PeerTls& tls) {
  if (tls.cert_file.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  auto cert = common::ReadWholeFile(tls.cert_file);
  if (!cert.ok()) return cert.status();
  auto key = common::ReadWholeFile(tls.key_file);
  if (!key.ok()) return key.status();
  ssl.pem_cert_chain = *cert;
  ssl.pem_private_key = *key;
  if (!tls.ca_file.empty()) {
    auto ca = common::ReadWholeFile(tls.ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
  }
  return grpc::SslCredentials(ssl);
}

std::shared_ptr<grpc::Channel> PeerChannel(const std::string& agent,
                                           const std::shared_ptr<grpc::ChannelCredentials>& creds,
                                           const std::string& server_name) {
  grpc::ChannelArguments args;
  if (!server_name.empty()) args.SetSslTargetNameOverride(server_name);
  return grpc::CreateCustomChannel(agent, creds, args);
}

absl::StatusOr<std::unique_ptr<GrpcPeerLookup>> GrpcPeerLookup::Create(const PeerTls& tls) {
  auto creds = PeerCredentials(tls);
  if (!creds.ok()) return creds.status();
  auto lookup = std::unique_ptr<GrpcPeerLookup>(new GrpcPeerLookup());
  lookup->creds_ = *std::move(creds);
  lookup->server_name_ = tls.server_name;
  return lookup;
}

absl::StatusOr<mesh::PeerIdentity> GrpcPeerLookup::Lookup(const std::string& agent,
                                                          std::chrono::milliseconds timeout) {
  std::shared_ptr<grpc::Channel> channel;
  {
    std::lock_guard lock(mu_);
    auto it = channels_.find(agent);
    if (it == channels_.end()) {
      // Peers come and go; a full cache is dropped whole rather than tracked per use (the
      // mesh only ever talks to its k peers, so this happens only after heavy churn).
      if (channels_.size() >= kMaxChannels) channels_.clear();
      it = channels_.emplace(agent, PeerChannel(agent, creds_, server_name_)).first;
    }
    channel = it->second;
  }
  auto stub = v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::GetFabricAddressRequest request;
  v1::FabricAddress response;
  const grpc::Status s = stub->GetFabricAddress(&ctx, request, &response);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("peer agent ", agent, ": GetFabricAddress: ", s.error_message()));
  }
  if (response.address().empty()) {
    return absl::UnavailableError(absl::StrCat("peer agent ", agent, ": empty fabric address"));
  }
  return mesh::PeerIdentity{.fabric_address = response.address(), .node = response.node_name()};
}

}  // namespace efawatch::rpc
