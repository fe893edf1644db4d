#include "cli/agent_client.h"

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace efawatch::cli {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read"));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const AgentConnection& conn) {
  grpc::ChannelArguments args;
  // Fail fast on an unreachable agent instead of retrying until the deadline hides why.
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  if (conn.tls_ca.empty() && conn.tls_cert.empty() && conn.tls_key.empty()) {
    return grpc::CreateCustomChannel(conn.address, grpc::InsecureChannelCredentials(), args);
  }
  grpc::SslCredentialsOptions ssl;
  for (auto [path, field] : {std::pair{&conn.tls_ca, &ssl.pem_root_certs},
                             {&conn.tls_cert, &ssl.pem_cert_chain},
                             {&conn.tls_key, &ssl.pem_private_key}}) {
    if (path->empty()) continue;
    auto content = ReadFile(*path);
    if (!content.ok()) return content.status();
    *field = *content;
  }
  if (!conn.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(conn.tls_server_name);
  }
  return grpc::CreateCustomChannel(conn.address, grpc::SslCredentials(ssl), args);
}

}  // namespace efawatch::cli
