// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "lib/common/connection_table.h"

namespace efawatch::rpc {

struct ConnectionGateOptions {
  std::string listen;   // host:port, :port (every address) or [v6]:port; port 0 picks one
  std::string backend;  // the server behind the gate: an abstract unix socket name ("\0" added)
  common::ConnectionLimits limits;
  // New connections to the gRPC server, at most this many a second (after a burst): gRPC gives
  // each a transport at once and frees it only after it has seen it close, so a flood of
  // clients that open, speak and are displaced would otherwise pile up inside gRPC (100 MiB
  // measured for 10,000). Clients that spoke wait for their turn, newest first, so a real
  // caller arriving after a flood is served next.
  double server_connects_per_second = 64;
  double server_connect_burst = 64;
};

/// What the gate did to connections since it started. Read from any thread.
struct ConnectionGateCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};  // the server behind the gate could not be reached
  std::atomic<uint64_t> evicted{0};  // cut, idle longest, to admit a newcomer at a bound
};

/// A TCP front for the gRPC server, which (as of gRPC 1.51) cannot bound how many connections
/// clients hold: 900 idle ones cost 42 MiB there. The gate accepts on the public address and
/// relays bytes, unchanged (TLS passes through), to the server on an abstract unix socket that
/// only this network namespace can reach. Its ConnectionTable keeps at most `limits.total`
/// connections, `limits.per_peer` from one address; at a bound a newcomer takes the place of
/// the connection idle longest (no byte either way), so idle clients can never lock out a real
/// call such as the health check. One thread serves every connection (epoll); a connection
/// holds no buffer while idle and at most 16 KiB each way while relaying. Thread-safe; the
/// destructor closes every connection and returns once the thread ends.
class ConnectionGate {
 public:
  /// Binds `listen`. Unavailable when it cannot; the backend is connected per connection.
  static absl::StatusOr<std::unique_ptr<ConnectionGate>> Create(
      ConnectionGateOptions options, const common::Clock& clock = common::SystemClock::Get());
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  int port() const { return port_; }
  const ConnectionGateCounters& counters() const { return counters_; }
  /// Connections held now.
  size_t open() const { return open_.load(std::memory_order_relaxed); }

 private:
  struct Pipe;
  ConnectionGate(ConnectionGateOptions options, const common::Clock& clock);
  void Run(const std::stop_token& stop);
  void Accept();
  void Relay(uint64_t id, int side);
  void Watch(uint64_t id, Pipe& p);
  void Close(uint64_t id);
  // Connects the waiting clients the rate allows, newest first.
  void ServeWaiting();
  // epoll_wait's timeout: until the next connect is allowed when clients wait, else forever.
  int WaitMs() const;

  const ConnectionGateOptions options_;
  const common::Clock& clock_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: the destructor wakes the loop
  int port_ = 0;
  // Touched by the loop thread only.
  common::ConnectionTable table_;
  std::unordered_map<uint64_t, std::unique_ptr<Pipe>> pipes_;
  uint64_t next_id_ = 1;
  std::vector<uint64_t> waiting_;  // clients that spoke, without a server connection yet
  double tokens_ = 0;              // server connects allowed now
  std::chrono::steady_clock::time_point refilled_{};
  ConnectionGateCounters counters_;
  std::atomic<size_t> open_{0};
  std::jthread loop_;
};

}  // namespace efawatch::rpc
