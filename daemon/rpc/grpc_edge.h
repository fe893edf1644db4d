// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/agent/agent_handler.h"
#include "daemon/rpc/authz.h"
#include "daemon/rpc/connection_gate.h"
#include "lib/common/clock.h"
#include "lib/common/connection_table.h"

namespace grpc {
class Server;
class ServerBuilder;
class ServerCredentials;
}  // namespace grpc

namespace efawatch::rpc {

struct GrpcEdgeOptions {
  std::string listen;         // host:port (port 0 picks a free one), or unix:/path (no gate)
  std::string tls_cert_file;  // empty: plaintext (config validation allows it on loopback only)
  std::string tls_key_file;
  std::string tls_client_ca_file;  // non-empty: mutual TLS, client certificates required
  std::chrono::milliseconds tls_refresh{30000};  // the files are read again this often
  AuthzOptions authz;  // identities per role; none: every caller may call anything
  /// WatchFindings streams open at once; further ones get RESOURCE_EXHAUSTED. Each costs a
  /// subscription the findings board calls on every publish and a queue of up to 1,024 events.
  size_t max_watch_streams = 32;
  /// What clients of the port can hold: a ConnectionGate in front of gRPC enforces it.
  common::ConnectionLimits limits;
  /// Handshake (TLS and HTTP/2 settings) due within this of the connection's opening, and a
  /// connection with no call for idle_timeout is closed (clients reconnect as needed).
  std::chrono::milliseconds handshake_timeout{10000};
  std::chrono::milliseconds idle_timeout{300000};
  /// Concurrent calls on one connection (HTTP/2 streams).
  int max_streams_per_connection = 64;
  /// The handler's clock: a client's deadline is handed to it on this one. Null: the system
  /// clock. Outlives the edge.
  const common::Clock* clock = nullptr;
};

/// What the edge refused, for metrics. Thread-safe.
struct GrpcEdgeCounters {
  std::atomic<uint64_t> watch_streams{0};          // open now
  std::atomic<uint64_t> watch_streams_refused{0};  // over max_watch_streams
};

/// The only place in the daemon that knows gRPC. Serves efawatch.v1.Agent (callback API) over
/// the handler, the standard grpc.health.v1.Health service and server reflection. Every Agent
/// call is first checked against the role table (authz.h) with the identity of the caller's
/// client certificate: a denied call ends PERMISSION_DENIED, counted and logged (once a minute
/// per identity and method), and never reaches the handler. gRPC itself listens on an abstract
/// unix socket; the public port is a ConnectionGate that bounds what clients hold and relays to
/// it (so calls' peer addresses read "unix-abstract:"; identities come from certificates).
/// Each call reaches the handler with its agent::CallContext: the client's deadline, and a token
/// triggered when the call is cancelled (the client cancels or leaves, or its deadline passes);
/// such a call is answered CANCELLED at once and the handler's late answer dropped.
/// Thread-safe; Shutdown() (also run by the destructor) returns within about a second.
class GrpcEdge {
 public:
  /// `handler` outlives the edge; every RPC converts its message and calls one method of it.
  static absl::StatusOr<std::unique_ptr<GrpcEdge>> Create(const GrpcEdgeOptions& options,
                                                          agent::AgentHandler* handler);
  ~GrpcEdge();

  int port() const { return port_; }
  /// efawatch_grpc_denied_total; lives as long as the edge.
  common::Collector& denial_collector() { return *denials_; }
  const GrpcEdgeCounters& counters() const;
  /// What the connection gate in front of gRPC did; lives as long as the edge.
  /// Zeros when gRPC serves a unix socket (no gate).
  const ConnectionGateCounters& gate_counters() const {
    static const ConnectionGateCounters kNone;
    return gate_ ? gate_->counters() : kNone;
  }
  void Shutdown();

 private:
  class AgentService;
  GrpcEdge() = default;
  absl::Status StartGated(const GrpcEdgeOptions& options,
                          const std::shared_ptr<grpc::ServerCredentials>& creds,
                          grpc::ServerBuilder& builder);

  std::unique_ptr<Authorizer> authz_;
  std::unique_ptr<DenialCollector> denials_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ConnectionGate> gate_;  // the public port; relays to server_
  int port_ = 0;
};

}  // namespace efawatch::rpc
