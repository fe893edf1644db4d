#include "daemon/rpc/grpc_edge.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "efawatch/v1/agent.grpc.pb.h"
#include "spdlog/spdlog.h"

namespace efawatch::rpc {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read"));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

google::protobuf::Timestamp ToProto(std::chrono::system_clock::time_point t) {
  google::protobuf::Timestamp ts;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  ts.set_seconds(ns.count() / 1'000'000'000);
  ts.set_nanos(static_cast<int>(ns.count() % 1'000'000'000));
  return ts;
}

void Fill(const common::NodeHealth& h, v1::NodeHealth* out) {
  out->set_node(h.node);
  out->set_agent_version(h.agent_version);
  out->set_agent_revision(h.agent_revision);
  *out->mutable_start_time() = ToProto(h.start_time);
  for (const auto& c : h.collectors) {
    auto* pc = out->add_collectors();
    pc->set_name(c.name);
    pc->set_ok(c.ok);
    pc->set_last_error(c.last_error);
    if (c.last_run.time_since_epoch().count() != 0) *pc->mutable_last_run() = ToProto(c.last_run);
    pc->set_last_duration_seconds(c.last_duration_seconds);
  }
  for (const auto& f : h.findings) {
    auto* pf = out->add_findings();
    pf->set_kind(f.kind);
    pf->set_severity(static_cast<v1::Severity>(static_cast<int>(f.severity)));
    pf->set_subject(f.subject);
    pf->set_message(f.message);
    pf->mutable_evidence()->set_source(f.evidence.source);
    pf->mutable_evidence()->set_line(f.evidence.line);
    pf->mutable_evidence()->set_text(f.evidence.text);
    *pf->mutable_first_seen() = ToProto(f.first_seen);
    *pf->mutable_last_seen() = ToProto(f.last_seen);
  }
  out->set_fabric_provider(h.fabric_provider);
  out->set_efa_devices(h.efa_devices);
}

// gRPC's own log lines (multi-line error trees on a failed bind, for one) go to our logger at
// debug level: the edge reports outcomes itself, in one line, and stderr stays one line per
// problem.
void ForwardGrpcLog(gpr_log_func_args* args) {
  spdlog::debug("grpc {}:{}: {}", args->file, args->line, args->message);
}

}  // namespace

class GrpcEdge::AgentService final : public v1::Agent::CallbackService {
 public:
  explicit AgentService(const AgentHandler* handler) : handler_(handler) {}

  grpc::ServerUnaryReactor* GetNodeHealth(grpc::CallbackServerContext* ctx,
                                          const v1::GetNodeHealthRequest* /*request*/,
                                          v1::NodeHealth* response) override {
    auto* reactor = ctx->DefaultReactor();
    Fill(handler_->GetNodeHealth(), response);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const AgentHandler* handler_;
};

absl::StatusOr<std::unique_ptr<GrpcEdge>> GrpcEdge::Create(const GrpcEdgeOptions& options,
                                                           const AgentHandler* handler) {
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (options.tls_cert_file.empty()) {
    creds = grpc::InsecureServerCredentials();
  } else {
    auto cert = ReadFile(options.tls_cert_file);
    if (!cert.ok()) return cert.status();
    auto key = ReadFile(options.tls_key_file);
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    if (!options.tls_client_ca_file.empty()) {
      auto ca = ReadFile(options.tls_client_ca_file);
      if (!ca.ok()) return ca.status();
      ssl = grpc::SslServerCredentialsOptions(
          GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
      ssl.pem_root_certs = *ca;
    }
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(ssl);
  }

  gpr_set_log_function(ForwardGrpcLog);
  std::unique_ptr<GrpcEdge> edge(new GrpcEdge());
  edge->service_ = std::make_unique<AgentService>(handler);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // ":port" means every address, as for --metrics-listen; gRPC spells that "[::]:port".
  const std::string listen =
      options.listen.starts_with(":") ? absl::StrCat("[::]", options.listen) : options.listen;
  builder.AddListeningPort(listen, creds, &edge->port_);
  builder.RegisterService(edge->service_.get());
  edge->server_ = builder.BuildAndStart();
  if (edge->server_ == nullptr || edge->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("grpc listen ", options.listen, ": cannot bind"));
  }
  auto* health = edge->server_->GetHealthCheckService();
  health->SetServingStatus("", true);
  health->SetServingStatus(v1::Agent::service_full_name(), true);
  return edge;
}

void GrpcEdge::Shutdown() {
  if (server_ == nullptr) return;
  server_->GetHealthCheckService()->Shutdown();
  // In-flight calls get a second to finish, then are cancelled: SIGTERM must end us in < 2 s.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_->Wait();
  server_.reset();
}

GrpcEdge::~GrpcEdge() { Shutdown(); }

}  // namespace efawatch::rpc
