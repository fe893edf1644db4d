// SPDX-License-Identifier: Apache-2.0
#include "daemon/rpc/peer_client.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>
#include <future>

#include "absl/strings/str_cat.h"
#include "efawatch/v1/agent.grpc.pb.h"
#include "lib/common/read_file.h"
#include "proto/codec/collective.h"

namespace efawatch::rpc {
namespace {

// What went wrong with a peer, in one word: the peer's own error text is never relayed, so a
// caller cannot use an agent to read what some other service on the network answers.
const char* Summary(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "timeout";
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return "refused";
    case grpc::StatusCode::NOT_FOUND:
      return "no fabric responder";
    default:
      return "unreachable";
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> PeerCredentials(const PeerTls& tls) {
  if (tls.cert_file.empty()) return grpc::InsecureChannelCredentials();
  // Read once here only to name an unreadable file at start; gRPC's provider reads them again
  // every refresh period, so renewed certificates and CA bundles are used without a restart.
  for (const std::string* file : {&tls.cert_file, &tls.key_file, &tls.ca_file}) {
    if (file->empty()) continue;
    if (auto text = common::ReadWholeFile(*file); !text.ok()) return text.status();
  }
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      tls.key_file, tls.cert_file, tls.ca_file, RefreshSeconds(tls.refresh));
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_identity_key_cert_pairs();
  // Without a CA file, the system's roots (as SslCredentials did).
  if (!tls.ca_file.empty()) options.watch_root_certs();
  return grpc::experimental::TlsCredentials(options);
}

unsigned int RefreshSeconds(std::chrono::milliseconds refresh) {
  return static_cast<unsigned int>(
      std::max<int64_t>(1, std::chrono::ceil<std::chrono::seconds>(refresh).count()));
}

std::shared_ptr<grpc::Channel> PeerChannel(const std::string& agent,
                                           const std::shared_ptr<grpc::ChannelCredentials>& creds,
                                           const std::string& server_name) {
  grpc::ChannelArguments args;
  if (!server_name.empty()) args.SetSslTargetNameOverride(server_name);
  return grpc::CreateCustomChannel(agent, creds, args);
}

absl::StatusOr<std::unique_ptr<PeerChannels>> PeerChannels::Create(const PeerTls& tls) {
  auto creds = PeerCredentials(tls);
  if (!creds.ok()) return creds.status();
  auto channels = std::unique_ptr<PeerChannels>(new PeerChannels());
  channels->creds_ = *std::move(creds);
  channels->server_name_ = tls.server_name;
  return channels;
}

std::shared_ptr<grpc::Channel> PeerChannels::Get(const std::string& agent) {
  std::lock_guard lock(mu_);
  auto it = channels_.find(agent);
  if (it == channels_.end()) {
    // Peers come and go; a full cache is dropped whole rather than tracked per use (an agent
    // only talks to its k mesh peers and a collective's participants).
    if (channels_.size() >= kMaxChannels) channels_.clear();
    it = channels_.emplace(agent, PeerChannel(agent, creds_, server_name_)).first;
  }
  return it->second;
}

void GrpcPeerLookup::Ask(const std::string& agent, std::chrono::milliseconds timeout,
                         std::function<void(absl::StatusOr<mesh::PeerIdentity>)> done) {
  struct Call {
    std::unique_ptr<v1::Agent::Stub> stub;
    grpc::ClientContext ctx;
    v1::GetFabricAddressRequest request;
    v1::FabricAddress response;
  };
  auto call = std::make_shared<Call>();
  call->stub = v1::Agent::NewStub(channels_.Get(agent));
  call->ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  call->stub->async()->GetFabricAddress(
      &call->ctx, &call->request, &call->response,
      [call, agent, done = std::move(done)](const grpc::Status& s) {
        if (!s.ok()) {
          return done(absl::UnavailableError(
              absl::StrCat("peer agent ", agent, ": GetFabricAddress: ", Summary(s))));
        }
        if (call->response.address().empty()) {
          return done(
              absl::UnavailableError(absl::StrCat("peer agent ", agent, ": empty fabric address")));
        }
        done(mesh::PeerIdentity{.fabric_address = call->response.address(),
                                .node = call->response.node_name()});
      });
}

absl::StatusOr<mesh::PeerIdentity> GrpcPeerLookup::Lookup(const std::string& agent,
                                                          std::chrono::milliseconds timeout) {
  std::promise<absl::StatusOr<mesh::PeerIdentity>> answer;
  auto got = answer.get_future();
  Ask(agent, timeout,
      [&answer](absl::StatusOr<mesh::PeerIdentity> id) { answer.set_value(std::move(id)); });
  return got.get();  // gRPC ends the call by its deadline at the latest
}

void GrpcPeerLookup::LookupAsync(const std::string& agent, std::chrono::milliseconds timeout,
                                 std::function<void(absl::StatusOr<std::string>)> done) {
  Ask(agent, timeout, [done = std::move(done)](absl::StatusOr<mesh::PeerIdentity> id) {
    if (!id.ok()) return done(id.status());
    done(std::move(id->fabric_address));
  });
}

template <typename Req, typename Resp, typename Method>
absl::StatusOr<Resp> GrpcCollectiveCalls::Call(const std::string& agent, const char* what,
                                               const Req& request,
                                               std::chrono::milliseconds timeout, Method method) {
  auto stub = v1::Agent::NewStub(channels_.Get(agent));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  {
    std::lock_guard lock(mu_);
    if (cancelled_) return absl::CancelledError("agent shutting down");
    in_flight_.insert(&ctx);
  }
  Resp response;
  const grpc::Status s = ((*stub).*method)(&ctx, request, &response);
  {
    std::lock_guard lock(mu_);
    in_flight_.erase(&ctx);
  }
  if (!s.ok()) {
    // The participant's own status code (RESOURCE_EXHAUSTED, INVALID_ARGUMENT ...) carries over.
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        absl::StrCat(what, ": ", s.error_message()));
  }
  return response;
}

absl::StatusOr<collective::JoinResponse> GrpcCollectiveCalls::Join(
    const std::string& agent, const collective::JoinRequest& r, std::chrono::milliseconds timeout) {
  v1::JoinCollectiveRequest request;
  codec::ToProto(r, &request);
  auto response = Call<v1::JoinCollectiveRequest, v1::JoinCollectiveResponse>(
      agent, "JoinCollective", request, timeout, &v1::Agent::Stub::JoinCollective);
  if (!response.ok()) return response.status();
  return codec::FromProto(*response);
}

absl::StatusOr<collective::RankResult> GrpcCollectiveCalls::Start(
    const std::string& agent, const collective::StartRequest& r,
    std::chrono::milliseconds timeout) {
  v1::StartCollectiveRequest request;
  codec::ToProto(r, &request);
  auto response = Call<v1::StartCollectiveRequest, v1::RankResult>(
      agent, "StartCollective", request, timeout, &v1::Agent::Stub::StartCollective);
  if (!response.ok()) return response.status();
  return codec::FromProto(*response);
}

void GrpcCollectiveCalls::Abort(const std::string& agent, const collective::AbortRequest& r,
                                std::chrono::milliseconds timeout) {
  v1::AbortCollectiveRequest request;
  codec::ToProto(r, &request);
  // Best effort: a participant that cannot be told ends at its own deadline.
  (void)Call<v1::AbortCollectiveRequest, v1::AbortCollectiveResponse>(
      agent, "AbortCollective", request, timeout, &v1::Agent::Stub::AbortCollective);
}

void GrpcCollectiveCalls::CancelAll() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  for (grpc::ClientContext* c : in_flight_) c->TryCancel();
}

}  // namespace efawatch::rpc
