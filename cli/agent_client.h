// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "efawatch/v1/agent.grpc.pb.h"

namespace efawatch::cli {

/// How the CLI reaches an agent. TLS is used when any of the TLS fields is set; client cert and
/// key give mutual TLS.
struct AgentConnection {
  std::string address;  // host:port
  std::string tls_ca;   // PEM file to verify the agent's certificate
  std::string tls_cert;
  std::string tls_key;
  std::string tls_server_name;  // override the name checked in the agent's certificate
  std::chrono::milliseconds timeout{5000};
};

/// A channel to the agent, or InvalidArgument when a TLS file cannot be read.
absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const AgentConnection& conn);

/// A hint to append to a failed call's message, naming the likely missing certificate or role
/// (docs/security.md); empty when there is nothing to add.
std::string SecurityHint(const grpc::Status& status, const AgentConnection& conn);

}  // namespace efawatch::cli
