#include "daemon/export/https_server.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "lib/common/read_file.h"
#include "lib/common/shared_library.h"
#include "spdlog/spdlog.h"

namespace efawatch::exporter {
namespace {

// TLS 1.2 and 1.3 only: what Prometheus (Go's crypto/tls) and curl speak by default; GnuTLS's
// NORMAL alone would also offer 1.0 and 1.1 where the system allows them.
constexpr char kPriorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

// One bound address, IPv4 or IPv6, as libmicrohttpd's MHD_OPTION_SOCK_ADDR takes it.
struct ListenAddress {
  sockaddr_storage storage{};
  bool v6 = false;
  uint16_t port = 0;
};

absl::StatusOr<ListenAddress> ParseListen(const std::string& listen) {
  std::string host, port_text;
  if (listen.starts_with("[")) {
    const auto close = listen.find("]:");
    if (close == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(listen, ": expected [ipv6]:port"));
    }
    host = listen.substr(1, close - 1);
    port_text = listen.substr(close + 2);
  } else {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(listen, ": expected host:port or :port"));
    }
    host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
  }
  int port = -1;
  if (!absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(listen, ": port must be 0 to 65535"));
  }
  ListenAddress out;
  out.port = static_cast<uint16_t>(port);
  if (host == "localhost") host = "127.0.0.1";
  // ":port" is every IPv4 address, as the plain-HTTP edge (civetweb) binds it.
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
  v4->sin_family = AF_INET;
  v4->sin_port = htons(out.port);
  if (host.empty()) {
    v4->sin_addr.s_addr = htonl(INADDR_ANY);
    return out;
  }
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) return out;
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
  *v6 = sockaddr_in6{};
  v6->sin6_family = AF_INET6;
  v6->sin6_port = htons(out.port);
  if (listen.starts_with("[") && inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    out.v6 = true;
    return out;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(listen, ": host must be an IPv4 address, [IPv6 address], localhost or empty"));
}

// libmicrohttpd reports a bad key or certificate only as a failed start; checking the material
// with GnuTLS first gives the operator a line that names the file and the problem. (A template:
// the GnuTLS functions come in HttpsServer::Api, which is private.)
template <typename TlsApi>
absl::Status CheckTlsMaterial(const TlsApi& api, const HttpsServerOptions& o,
                              const std::string& cert, const std::string& key,
                              const std::string& ca) {
  gnutls_certificate_credentials_t cred = nullptr;
  if (api.allocate_credentials(&cred) < 0) {
    return absl::ResourceExhaustedError("GnuTLS: cannot allocate credentials");
  }
  const auto datum = [](const std::string& s) {
    return gnutls_datum_t{reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
                          static_cast<unsigned>(s.size())};
  };
  absl::Status st;
  const gnutls_datum_t c = datum(cert), k = datum(key);
  if (int rc = api.set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM); rc < 0) {
    st = absl::InvalidArgumentError(absl::StrCat(o.cert_file, " and ", o.key_file,
                                                 ": not a PEM certificate and its key (",
                                                 api.strerror(rc), ")"));
  } else if (!ca.empty()) {
    const gnutls_datum_t t = datum(ca);
    const int n = api.set_x509_trust_mem(cred, &t, GNUTLS_X509_FMT_PEM);
    if (n <= 0) {
      st = absl::InvalidArgumentError(absl::StrCat(o.client_ca_file, ": no PEM CA certificate (",
                                                   n < 0 ? api.strerror(n) : "empty", ")"));
    }
  }
  api.free_credentials(cred);
  return st;
}

}  // namespace

// libmicrohttpd and GnuTLS, opened when HTTPS is first asked for rather than at start: with
// GnuTLS's own dependencies (p11-kit, nettle, gmp, libtasn1...) they are 2 MiB of the RSS of an
// agent that serves plain HTTP (lib/common/shared_library.h).
struct HttpsServer::Api {
  decltype(&MHD_start_daemon) start_daemon = nullptr;
  decltype(&MHD_stop_daemon) stop_daemon = nullptr;
  decltype(&MHD_get_daemon_info) get_daemon_info = nullptr;
  decltype(&MHD_get_connection_info) get_connection_info = nullptr;
  decltype(&MHD_lookup_connection_value) lookup_connection_value = nullptr;
  decltype(&MHD_create_response_from_buffer) create_response_from_buffer = nullptr;
  decltype(&MHD_add_response_header) add_response_header = nullptr;
  decltype(&MHD_queue_response) queue_response = nullptr;
  decltype(&MHD_destroy_response) destroy_response = nullptr;
  decltype(&gnutls_certificate_allocate_credentials) allocate_credentials = nullptr;
  decltype(&gnutls_certificate_free_credentials) free_credentials = nullptr;
  decltype(&gnutls_certificate_set_x509_key_mem) set_x509_key_mem = nullptr;
  decltype(&gnutls_certificate_set_x509_trust_mem) set_x509_trust_mem = nullptr;
  decltype(&gnutls_certificate_get_peers) get_peers = nullptr;
  decltype(&gnutls_certificate_verify_peers2) verify_peers2 = nullptr;
  decltype(&gnutls_certificate_verification_status_print) verification_status_print = nullptr;
  decltype(&gnutls_strerror) strerror = nullptr;
  gnutls_free_function* free = nullptr;  // a variable in GnuTLS: the function is *free

  static absl::StatusOr<Api> Load() {
    auto mhd = common::SharedLibrary::Open("libmicrohttpd.so.12");
    if (!mhd.ok()) return mhd.status();
    auto tls = common::SharedLibrary::Open("libgnutls.so.30");
    if (!tls.ok()) return tls.status();
    Api a;
    for (const absl::Status& st : {
             mhd->Bind("MHD_start_daemon", &a.start_daemon),
             mhd->Bind("MHD_stop_daemon", &a.stop_daemon),
             mhd->Bind("MHD_get_daemon_info", &a.get_daemon_info),
             mhd->Bind("MHD_get_connection_info", &a.get_connection_info),
             mhd->Bind("MHD_lookup_connection_value", &a.lookup_connection_value),
             mhd->Bind("MHD_create_response_from_buffer", &a.create_response_from_buffer),
             mhd->Bind("MHD_add_response_header", &a.add_response_header),
             mhd->Bind("MHD_queue_response", &a.queue_response),
             mhd->Bind("MHD_destroy_response", &a.destroy_response),
             tls->Bind("gnutls_certificate_allocate_credentials", &a.allocate_credentials),
             tls->Bind("gnutls_certificate_free_credentials", &a.free_credentials),
             tls->Bind("gnutls_certificate_set_x509_key_mem", &a.set_x509_key_mem),
             tls->Bind("gnutls_certificate_set_x509_trust_mem", &a.set_x509_trust_mem),
             tls->Bind("gnutls_certificate_get_peers", &a.get_peers),
             tls->Bind("gnutls_certificate_verify_peers2", &a.verify_peers2),
             tls->Bind("gnutls_certificate_verification_status_print",
                       &a.verification_status_print),
             tls->Bind("gnutls_strerror", &a.strerror),
             tls->Bind("gnutls_free", &a.free),
         }) {
      if (!st.ok()) return st;
    }
    return a;
  }

  static absl::StatusOr<const Api*> Get() { return common::LoadOnce<&Load>(); }
};

struct HttpsServer::Callbacks {
  // libmicrohttpd's messages: at start they explain a failed start (kept for the error); later
  // they are per-connection noise (a client speaking plain HTTP to the TLS port, a dropped
  // handshake), so they go to the debug log only.
  static void Log(void* cls, const char* fmt, va_list ap) {
    auto* self = static_cast<HttpsServer*>(cls);
    char buf[512];
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    const std::string line(absl::StripTrailingAsciiWhitespace(buf));
    spdlog::debug("metrics https: {}", line);
    std::lock_guard lock(self->log_mu_);
    self->last_log_ = line;
  }

  static ClientCert Verify(const Api& api, MHD_Connection* connection, std::string* problem) {
    const MHD_ConnectionInfo* info =
        api.get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == nullptr || info->tls_session == nullptr) return ClientCert::kNone;
    auto* session = static_cast<gnutls_session_t>(info->tls_session);
    unsigned int n = 0;
    if (api.get_peers(session, &n) == nullptr || n == 0) return ClientCert::kNone;
    // The handshake only asked for the certificate (GNUTLS_CERT_REQUEST): the chain, its
    // signatures against the trusted CA and its validity period are checked here.
    unsigned int status = 0;
    if (int rc = api.verify_peers2(session, &status); rc < 0) {
      *problem = api.strerror(rc);
      return ClientCert::kUntrusted;
    }
    if (status != 0) {
      gnutls_datum_t text{};
      if (api.verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0) {
        *problem = std::string(reinterpret_cast<char*>(text.data), text.size);
        (*api.free)(text.data);
      }
      return ClientCert::kUntrusted;
    }
    return ClientCert::kTrusted;
  }

  static MHD_Result Queue(const Api& api, MHD_Connection* connection, const HttpResponse& r) {
    MHD_Response* response = api.create_response_from_buffer(
        r.body.size(), const_cast<char*>(r.body.data()), MHD_RESPMEM_MUST_COPY);
    if (response == nullptr) return MHD_NO;
    api.add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, r.content_type.c_str());
    for (const auto& [name, value] : r.headers) {
      api.add_response_header(response, name.c_str(), value.c_str());
    }
    const MHD_Result ret =
        api.queue_response(connection, static_cast<unsigned int>(r.status), response);
    api.destroy_response(response);
    return ret;
  }

  // libmicrohttpd calls this once when the headers are in and again when the (empty) body is:
  // answering at the second call lets the connection stay open for the next scrape. A request
  // with a body gets 405 at once, before the body is read, and its connection is closed.
  static MHD_Result Access(void* cls, MHD_Connection* connection, const char* url,
                           const char* method, const char* /*version*/, const char* /*upload_data*/,
                           size_t* upload_data_size, void** req_cls) {
    const auto* self = static_cast<const HttpsServer*>(cls);
    const Api& api = *self->api_;
    const std::string_view m(method);
    if (m != MHD_HTTP_METHOD_GET && m != MHD_HTTP_METHOD_HEAD) {
      return Queue(api, connection,
                   {.status = MHD_HTTP_METHOD_NOT_ALLOWED,
                    .body = "method not allowed\n",
                    .headers = {{MHD_HTTP_HEADER_ALLOW, "GET, HEAD"}}});
    }
    static int headers_seen;  // only its address is used, as a marker
    if (*req_cls == nullptr) {
      *req_cls = &headers_seen;
      return MHD_YES;
    }
    if (*upload_data_size != 0) {
      *upload_data_size = 0;  // a GET with a body: ignore the body
      return MHD_YES;
    }
    const auto it = self->handlers_.find(url);
    if (it == self->handlers_.end()) {
      return Queue(api, connection, HttpResponse::Text(MHD_HTTP_NOT_FOUND, "not found\n"));
    }
    HttpRequest req;
    req.path = url;
    const char* auth =
        api.lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth != nullptr) req.authorization = auth;
    if (self->verify_clients_) req.client_cert = Verify(api, connection, &req.client_cert_problem);
    HttpResponse r;
    try {
      r = it->second(req);
    } catch (const std::exception& e) {
      spdlog::error("metrics https: handler for {} threw: {}", req.path, e.what());
      r = HttpResponse::Text(MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error\n");
    }
    return Queue(api, connection, r);
  }
};

absl::StatusOr<std::unique_ptr<HttpsServer>> HttpsServer::Create(
    HttpsServerOptions options, std::map<std::string, HttpHandler> handlers) {
  auto address = ParseListen(options.listen);
  if (!address.ok()) return address.status();
  auto api = Api::Get();
  if (!api.ok()) return api.status();
  std::unique_ptr<HttpsServer> s(new HttpsServer());
  s->api_ = *api;
  s->handlers_ = std::move(handlers);
  for (const auto& [file, pem] : {std::pair{&options.cert_file, &s->cert_pem_},
                                  {&options.key_file, &s->key_pem_},
                                  {&options.client_ca_file, &s->ca_pem_}}) {
    if (file->empty()) continue;
    auto text = common::ReadWholeFile(*file);
    if (!text.ok()) return text.status();
    *pem = *std::move(text);
  }
  if (s->cert_pem_.empty() || s->key_pem_.empty()) {
    return absl::InvalidArgumentError("HTTPS needs a certificate and a key");
  }
  if (auto st = CheckTlsMaterial(**api, options, s->cert_pem_, s->key_pem_, s->ca_pem_); !st.ok()) {
    return st;
  }
  s->verify_clients_ = !s->ca_pem_.empty();

  // epoll, not select: the agent may hold thousands of open log files, and select() cannot watch
  // a descriptor above 1023.
  unsigned int flags = MHD_USE_TLS | MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
  if (address->v6) flags |= MHD_USE_IPv6;
  // The client CA comes last: without one the list ends there, and clients are not asked for a
  // certificate at all.
  s->daemon_ = s->api_->start_daemon(
      flags, address->port, nullptr, nullptr, &Callbacks::Access, s.get(),
      MHD_OPTION_EXTERNAL_LOGGER, &Callbacks::Log, s.get(), MHD_OPTION_SOCK_ADDR,
      reinterpret_cast<sockaddr*>(&address->storage), MHD_OPTION_THREAD_POOL_SIZE, options.threads,
      MHD_OPTION_CONNECTION_LIMIT, options.connection_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
      options.per_ip_connection_limit, MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned int>(options.connection_timeout.count()), MHD_OPTION_HTTPS_PRIORITIES,
      kPriorities, MHD_OPTION_HTTPS_MEM_CERT, s->cert_pem_.c_str(), MHD_OPTION_HTTPS_MEM_KEY,
      s->key_pem_.c_str(), s->verify_clients_ ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END,
      s->ca_pem_.c_str(), MHD_OPTION_END);
  if (s->daemon_ == nullptr) {
    std::lock_guard lock(s->log_mu_);
    return absl::UnavailableError(absl::StrCat("metrics listen ", options.listen,
                                               ": cannot serve HTTPS (", s->last_log_, ")"));
  }
  const MHD_DaemonInfo* info = s->api_->get_daemon_info(s->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  s->port_ = info != nullptr && info->port != 0 ? info->port : address->port;
  return s;
}

HttpsServer::~HttpsServer() {
  // Closes the listening socket and every connection and joins the server's threads: no handler
  // runs once it returns.
  if (daemon_ != nullptr) api_->stop_daemon(daemon_);
}

}  // namespace efawatch::exporter
