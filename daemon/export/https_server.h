#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

struct MHD_Daemon;

namespace efawatch::exporter {

/// What the client's TLS certificate proved, as GnuTLS verified it against the client CA.
enum class ClientCert {
  kNone,       // no certificate presented, or no client CA configured
  kTrusted,    // a certificate the client CA signed, in its validity period
  kUntrusted,  // a certificate, but not one the client CA vouches for (another CA, expired, ...)
};

struct HttpRequest {
  std::string path;           // without the query string
  std::string authorization;  // the Authorization header, empty when absent
  ClientCert client_cert = ClientCert::kNone;
  std::string client_cert_problem;  // kUntrusted: why, in GnuTLS's words (for the log)
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // besides Content-Type

  /// A short plain-text answer, e.g. Text(404, "not found\n").
  static HttpResponse Text(int status, std::string body) {
    HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }
};

/// Called on one of the server's threads, possibly on two at once: handlers must be thread-safe.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpsServerOptions {
  std::string listen;          // host:port, :port (every address) or [v6]:port; port 0 picks one
  std::string cert_file;       // PEM server certificate (chain)
  std::string key_file;        // PEM private key
  std::string client_ca_file;  // PEM CA bundle; empty: client certificates are not asked for
  // Bounds on what clients can hold: a slow or hostile client occupies one connection for at most
  // connection_timeout of silence, and no more than per_ip_connection_limit of them.
  unsigned connection_limit = 32;
  unsigned per_ip_connection_limit = 8;
  std::chrono::seconds connection_timeout{10};
  // Threads answering requests: two, so a probe of /healthz answers while a scrape runs (as
  // prometheus-cpp's Exposer does with its two civetweb threads).
  unsigned threads = 2;
};

/// An HTTPS server (libmicrohttpd over GnuTLS) that answers GET and HEAD on a fixed set of paths;
/// other paths get 404, other methods 405. It knows nothing of what it serves: handlers decide,
/// from the request and the client certificate's verification, what to answer. When a client CA
/// is set, clients are asked for a certificate (not required: a handler may serve a path to
/// anyone, e.g. the kubelet's probes) and each request says whether the CA vouches for it.
/// Serving starts in Create and stops in the destructor, which returns once no handler runs.
class HttpsServer {
 public:
  /// Reads the PEM files, binds and starts serving. InvalidArgument for unreadable or unusable
  /// TLS material, Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpsServer>> Create(
      HttpsServerOptions options, std::map<std::string, HttpHandler> handlers);
  ~HttpsServer();
  HttpsServer(const HttpsServer&) = delete;
  HttpsServer& operator=(const HttpsServer&) = delete;

  /// The port actually bound.
  int port() const { return port_; }

 private:
  struct Callbacks;
  struct Api;  // libmicrohttpd and GnuTLS, opened by Create()
  HttpsServer() = default;

  const Api* api_ = nullptr;
  std::map<std::string, HttpHandler> handlers_;
  bool verify_clients_ = false;
  // libmicrohttpd keeps pointers to the PEM text while it runs; they live here.
  std::string cert_pem_, key_pem_, ca_pem_;
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
  std::mutex log_mu_;
  std::string last_log_;  // libmicrohttpd's last message, for the error of a failed start
};

}  // namespace efawatch::exporter
