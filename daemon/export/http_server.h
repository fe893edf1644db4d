// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/export/http_types.h"
#include "lib/common/clock.h"
#include "lib/common/connection_table.h"
#include "lib/common/listen_address.h"

struct MHD_Daemon;

namespace efawatch::exporter {
class PlainHttpTransport;
}

namespace efawatch::exporter {

/// Called on one of the server's threads, possibly on two at once: handlers must be thread-safe.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string listen;  // host:port, :port (every address) or [v6]:port; port 0 picks one
  // TLS: all empty serves plain HTTP. cert_file and key_file go together.
  std::string cert_file;       // PEM server certificate (chain)
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CA bundle; empty: client certificates are not asked for
  // What clients can hold (lib/common/connection_table.h): at the bound a newcomer replaces the
  // connection that has waited longest for a request, so idle or slow clients can neither lock
  // out a scrape nor the kubelet's probe. A request's headers are due within the deadline of
  // the connection's opening or of its previous answer (this is also the keep-alive idle
  // timeout); one byte a second does not extend it.
  common::ConnectionLimits limits;
  // Threads answering requests. Connections cost no thread while they wait (epoll), so these
  // only bound concurrent handlers: four, so /healthz answers while two scrapes run.
  unsigned threads = 4;
  // Paths answered on POST (and only POST), with the request's body; every other path answers
  // GET and HEAD. A body over max_body_bytes gets 413 without reaching the handler, once the
  // body has been read and dropped (memory stays bounded), or at once when Content-Length
  // announces more than 16 times the bound.
  std::set<std::string> post_paths;
  size_t max_body_bytes = 64 * 1024;
};

/// What a server's bounds did to its clients, since it started. Read from any thread.
struct HttpServerCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused{0};    // at a bound with every connection busy: closed at once
  std::atomic<uint64_t> evicted{0};    // cut to admit a newcomer
  std::atomic<uint64_t> timed_out{0};  // cut at the request deadline
  std::atomic<uint64_t> too_large{0};  // a POST body over max_body_bytes: 413
};

/// An HTTP or HTTPS server (plain HTTP on PlainHttpTransport; HTTPS on libmicrohttpd over GnuTLS,
/// both opened only then) that answers GET and HEAD on a fixed set of paths, and POST on the paths
/// of HttpServerOptions::post_paths (the admission webhook's); other paths get 404, other methods
/// 405. It knows nothing of what it serves: handlers decide, from the request and the client
/// certificate's verification, what to answer. When a client CA is set, clients are asked for a
/// certificate (not required: a handler may serve a path to anyone, e.g. the kubelet's probes) and
/// each request says whether the CA vouches for it. Serving starts in Create and stops in the
/// destructor, which returns once no handler runs.
class HttpServer {
 public:
  /// Reads the PEM files, binds and starts serving. InvalidArgument for unreadable or unusable
  /// TLS material, Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(
      HttpServerOptions options, std::map<std::string, HttpHandler> handlers,
      const common::Clock& clock = common::SystemClock::Get());
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// The port actually bound.
  int port() const { return port_; }
  const HttpServerCounters& counters() const { return counters_; }
  bool tls() const { return tls_; }

  /// HTTPS: reads the certificate, key and CA files again and serves with them from now on,
  /// without refusing a connection or cutting a request in flight (the old daemon hands its
  /// socket to a new one and finishes what it has). Unusable files: an error, and the old ones
  /// stay in use. Plain HTTP: nothing to do. Any thread.
  absl::Status ReloadTls();

 private:
  struct Callbacks;
  struct Api;  // libmicrohttpd and GnuTLS, opened by Create()
  struct Pems;
  // What every request gets, whichever transport carries it: 405 for a method the path does not
  // take (before any body is read), then the handler's answer, 404 or 500.
  std::optional<HttpResponse> Precheck(const std::string& method, const std::string& path) const;
  HttpResponse Handle(const HttpRequest& req) const;
  // Plain HTTP: our own transport, without libmicrohttpd (and so without GnuTLS).
  absl::Status ServePlain();
  absl::StatusOr<std::unique_ptr<Pems>> ReadTls() const;
  // Starts a daemon on `listen_fd` (a quiesced daemon's), or binds address_ when it is -1.
  MHD_Daemon* Start(const Pems& pems, int listen_fd);
  HttpServer(const common::Clock& clock, const common::ConnectionLimits& limits);
  void Started(uint64_t id, int fd, const std::string& peer);
  void Closed(uint64_t id);
  void Busy(uint64_t id);
  void Answered(uint64_t id);
  void Watch(const std::stop_token& stop);
  // Under guard_mu_: ends the connection's TCP session (libmicrohttpd then closes it).
  void CutLocked(uint64_t id);

  const common::Clock& clock_;
  const Api* api_ = nullptr;
  std::map<std::string, HttpHandler> handlers_;
  bool tls_ = false;
  bool verify_clients_ = false;
  HttpServerOptions options_;
  common::ListenAddress address_;
  std::mutex reload_mu_;  // one reload at a time; guards daemon_ and pems_ after Create
  std::unique_ptr<Pems> pems_;
  MHD_Daemon* daemon_ = nullptr;
  std::unique_ptr<PlainHttpTransport> plain_;  // plain HTTP; null when serving HTTPS
  int port_ = 0;
  std::mutex log_mu_;
  std::string last_log_;  // libmicrohttpd's last message, for the error of a failed start

  // The guard: which connection may stay. Each connection's socket is held by a dup() of its
  // descriptor until libmicrohttpd reports it closed, so cutting one (shutdown) can never hit a
  // descriptor number the kernel has since given to another file.
  std::mutex guard_mu_;
  common::ConnectionTable table_;             // guarded by guard_mu_
  std::unordered_map<uint64_t, int> socket_;  // guarded by guard_mu_: id -> our dup
  std::atomic<uint64_t> next_id_{1};
  HttpServerCounters counters_;
  // Wakes Watch() when a connection starts waiting (its deadline may be the first one).
  std::condition_variable_any watch_cv_;  // with guard_mu_
  uint64_t waits_begun_ = 0;              // guarded by guard_mu_: Watch() compares it
  std::jthread watchdog_;                 // cuts connections past the request deadline
};

}  // namespace efawatch::exporter
