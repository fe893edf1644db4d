// SPDX-License-Identifier: Apache-2.0
#include "cli/agent_client.h"

#include <grpcpp/grpcpp.h>

#include "lib/common/read_file.h"

namespace efawatch::cli {
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
    auto content = common::ReadWholeFile(*path);
    if (!content.ok()) return content.status();
    *field = *content;
  }
  if (!conn.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(conn.tls_server_name);
  }
  return grpc::CreateCustomChannel(conn.address, grpc::SslCredentials(ssl), args);
}

std::string SecurityHint(const grpc::Status& status, const AgentConnection& conn) {
  switch (status.error_code()) {
    case grpc::StatusCode::PERMISSION_DENIED:
      return " [the certificate's identity lacks the role for this call: docs/security.md]";
    case grpc::StatusCode::UNAVAILABLE:
      // A refused TLS handshake reaches the client as UNAVAILABLE, like a dead agent.
      if (conn.tls_cert.empty()) {
        return " [an agent serving mutual TLS needs --tls-ca/--tls-cert/--tls-key or "
               "EFAWATCH_TLS_CA/_CERT/_KEY]";
      }
      return " [if the agent runs: is the certificate from the agent's CA, and "
             "--tls-server-name the agent's name (efawatch-agent)?]";
    default:
      return "";
  }
}

}  // namespace efawatch::cli
