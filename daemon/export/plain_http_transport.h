// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/export/http_types.h"
#include "lib/common/clock.h"
#include "lib/common/listen_address.h"

namespace efawatch::exporter {

/// Plain HTTP/1.1 for HttpServer, on one epoll thread and a few handler threads: the agent's
/// /metrics and probes without libmicrohttpd, which serves plain HTTP too but loads GnuTLS and
/// its dependencies (2.5 MiB of an idle agent's 25 MiB) even where no TLS is configured.
/// Requests are read one at a time per connection (a pipelined one waits for the answer before
/// it), with Content-Length bodies only. The transport owns sockets and bytes; the server's hooks
/// decide who may stay (the connection table) and what each request gets.
class PlainHttpTransport {
 public:
  struct Hooks {
    // A connection opened (fd: its socket, the hook may dup it to shut it down later), closed,
    // got a whole request head, or had its answer sent in full.
    std::function<void(uint64_t id, int fd, const std::string& peer)> started;
    std::function<void(uint64_t id)> closed;
    std::function<void(uint64_t id)> busy;
    std::function<void(uint64_t id)> answered;
    // Called with a head before any body is read: an answer ends the request there (e.g. 405).
    std::function<std::optional<HttpResponse>(const std::string& method, const std::string& path)>
        precheck;
    // The answer to a whole request; runs on a handler thread.
    std::function<HttpResponse(const HttpRequest&)> handle;
    std::function<void()> too_large;  // a body over the bound was refused with 413
  };
  struct Options {
    common::ListenAddress address;
    unsigned threads = 4;
    std::set<std::string> post_paths;  // their bodies are read; others' are dropped
    size_t max_body_bytes = 64 * 1024;
    size_t max_head_bytes = 16 * 1024;
    // Connections beyond this are closed at accept, before the hooks hear of them: a backstop
    // above the connection table, which decides who stays.
    size_t max_connections = 1024;
    // A client that reads none of its answer for this long is cut.
    std::chrono::milliseconds write_deadline{10000};
  };

  /// Binds and starts serving. Unavailable, naming the address and the error, when it cannot.
  static absl::StatusOr<std::unique_ptr<PlainHttpTransport>> Start(
      Options options, Hooks hooks, const common::Clock& clock = common::SystemClock::Get());
  /// Stops accepting, waits for running handlers, closes every connection (each reported closed).
  ~PlainHttpTransport();
  PlainHttpTransport(const PlainHttpTransport&) = delete;
  PlainHttpTransport& operator=(const PlainHttpTransport&) = delete;

  int port() const { return port_; }

 private:
  struct Conn;
  struct Job {
    uint64_t id;
    HttpRequest request;
    bool head_only;
    bool close_after;
    int minor_version;
  };
  struct Done {
    uint64_t id;
    std::string bytes;
    bool close_after;
  };

  PlainHttpTransport(Options options, Hooks hooks, const common::Clock& clock);
  void Loop(const std::stop_token& stop);
  void Work(const std::stop_token& stop);
  void Accept();
  void OnEvent(uint64_t id, uint32_t events);
  void Read(Conn& c);
  void Process(Conn& c);
  void Respond(Conn& c, const HttpResponse& r, bool head_only, bool close_after);
  void Write(Conn& c);
  void Close(uint64_t id);
  void TakeDone();
  void CutStalledWriters();
  int NextTimeoutMs() const;
  void Wake() const;

  const Options options_;
  const Hooks hooks_;
  const common::Clock& clock_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: a handler finished, or the transport stops
  int port_ = 0;
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;  // loop thread only
  std::set<uint64_t> writers_;                       // loop thread only: answers not yet sent
  std::vector<uint64_t> resume_;  // loop thread only: answered, to read on the next turn
  bool accept_pending_ = false;   // loop thread only: the backlog may hold more to accept

  std::mutex mu_;  // guards jobs_ and done_
  std::condition_variable_any jobs_cv_;
  std::deque<Job> jobs_;
  std::vector<Done> done_;

  std::vector<std::jthread> workers_;
  std::jthread loop_;
};

}  // namespace efawatch::exporter
