// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "daemon/export/plain_http_transport.h"
#include "daemon/tls/gnutls_api.h"
#include "lib/common/listen_address.h"
#include "lib/common/read_file.h"
#include "lib/common/shared_library.h"
#include "spdlog/spdlog.h"

namespace efawatch::exporter {
namespace {

// TLS 1.2 and 1.3 only: what Prometheus (Go's crypto/tls) and curl speak by default; GnuTLS's
// NORMAL alone would also offer 1.0 and 1.1 where the system allows them.
constexpr char kPriorities[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

// 413 Content Too Large (RFC 9110 15.5.14); libmicrohttpd names it differently across versions.
constexpr unsigned kContentTooLarge = 413;

// libmicrohttpd reports a bad key or certificate only as a failed start; checking the material
// with GnuTLS first gives the operator a line that names the file and the problem.
absl::Status CheckTlsMaterial(const tls::GnutlsApi& api, const HttpServerOptions& o,
                              const std::string& cert, const std::string& key,
                              const std::string& ca) {
  gnutls_certificate_credentials_t cred = nullptr;
  if (api.allocate_credentials(&cred) < 0) {
    return absl::ResourceExhaustedError("GnuTLS: cannot allocate credentials");
  }
  absl::Status st;
  const gnutls_datum_t c = tls::Datum(cert), k = tls::Datum(key);
  if (int rc = api.set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM); rc < 0) {
    st = absl::InvalidArgumentError(absl::StrCat(o.cert_file, " and ", o.key_file,
                                                 ": not a PEM certificate and its key (",
                                                 api.strerror(rc), ")"));
  } else if (!ca.empty()) {
    const gnutls_datum_t t = tls::Datum(ca);
    const int n = api.set_x509_trust_mem(cred, &t, GNUTLS_X509_FMT_PEM);
    if (n <= 0) {
      st = absl::InvalidArgumentError(absl::StrCat(o.client_ca_file, ": no PEM CA certificate (",
                                                   n < 0 ? api.strerror(n) : "empty", ")"));
    }
  }
  api.free_credentials(cred);
  return st;
}

// The transports' own bound on open connections, above the table's: the table decides who stays
// (it needs a newcomer inside the transport to cut an older one for it).
size_t BackstopLimit(const common::ConnectionLimits& limits) {
  return limits.total + limits.total / 4 + 16;
}

}  // namespace

// libmicrohttpd and GnuTLS, opened when HTTPS is first asked for rather than at start: with
// GnuTLS's own dependencies (p11-kit, nettle, gmp, libtasn1...) they are 2.5 MiB of the RSS of an
// agent that serves plain HTTP (lib/common/shared_library.h); and libmicrohttpd initializes
// GnuTLS as it loads, which is why plain HTTP has a transport of its own.
struct HttpServer::Api {
  decltype(&MHD_start_daemon) start_daemon = nullptr;
  decltype(&MHD_stop_daemon) stop_daemon = nullptr;
  decltype(&MHD_quiesce_daemon) quiesce_daemon = nullptr;
  decltype(&MHD_get_daemon_info) get_daemon_info = nullptr;
  decltype(&MHD_get_connection_info) get_connection_info = nullptr;
  decltype(&MHD_lookup_connection_value) lookup_connection_value = nullptr;
  decltype(&MHD_create_response_from_buffer) create_response_from_buffer = nullptr;
  decltype(&MHD_add_response_header) add_response_header = nullptr;
  decltype(&MHD_queue_response) queue_response = nullptr;
  decltype(&MHD_destroy_response) destroy_response = nullptr;
  const tls::GnutlsApi* gnutls = nullptr;

  static absl::StatusOr<Api> Load() {
    auto mhd = common::SharedLibrary::Open("libmicrohttpd.so.12");
    if (!mhd.ok()) return mhd.status();
    auto gnutls = tls::GnutlsApi::Get();
    if (!gnutls.ok()) return gnutls.status();
    Api a;
    a.gnutls = *gnutls;
    for (const absl::Status& st : {
             mhd->Bind("MHD_start_daemon", &a.start_daemon),
             mhd->Bind("MHD_stop_daemon", &a.stop_daemon),
             mhd->Bind("MHD_quiesce_daemon", &a.quiesce_daemon),
             mhd->Bind("MHD_get_daemon_info", &a.get_daemon_info),
             mhd->Bind("MHD_get_connection_info", &a.get_connection_info),
             mhd->Bind("MHD_lookup_connection_value", &a.lookup_connection_value),
             mhd->Bind("MHD_create_response_from_buffer", &a.create_response_from_buffer),
             mhd->Bind("MHD_add_response_header", &a.add_response_header),
             mhd->Bind("MHD_queue_response", &a.queue_response),
             mhd->Bind("MHD_destroy_response", &a.destroy_response),
         }) {
      if (!st.ok()) return st;
    }
    return a;
  }

  static absl::StatusOr<const Api*> Get() { return common::LoadOnce<&Load>(); }
};

struct HttpServer::Callbacks {
  // libmicrohttpd's messages: at start they explain a failed start (kept for the error); later
  // they are per-connection noise (a client speaking plain HTTP to the TLS port, a dropped
  // handshake), so they go to the debug log only.
  static void Log(void* cls, const char* fmt, va_list ap) {
    auto* self = static_cast<HttpServer*>(cls);
    char buf[512];
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    const std::string line(absl::StripTrailingAsciiWhitespace(buf));
    spdlog::debug("metrics http: {}", line);
    std::lock_guard lock(self->log_mu_);
    self->last_log_ = line;
  }

  static ClientCert Verify(const Api& api, MHD_Connection* connection, std::string* problem) {
    const MHD_ConnectionInfo* info =
        api.get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == nullptr || info->tls_session == nullptr) return ClientCert::kNone;
    const tls::GnutlsApi& g = *api.gnutls;
    auto* session = static_cast<gnutls_session_t>(info->tls_session);
    unsigned int n = 0;
    if (g.get_peers(session, &n) == nullptr || n == 0) return ClientCert::kNone;
    // The handshake only asked for the certificate (GNUTLS_CERT_REQUEST): the chain, its
    // signatures against the trusted CA and its validity period are checked here.
    unsigned int status = 0;
    if (int rc = g.verify_peers2(session, &status); rc < 0) {
      *problem = g.strerror(rc);
      return ClientCert::kUntrusted;
    }
    if (status != 0) {
      gnutls_datum_t text{};
      if (g.verification_status_print(status, GNUTLS_CRT_X509, &text, 0) == 0) {
        *problem = std::string(reinterpret_cast<char*>(text.data), text.size);
        (*g.free)(text.data);
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

  static uint64_t IdOf(const Api& api, MHD_Connection* connection) {
    const MHD_ConnectionInfo* info =
        api.get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == nullptr ? 0 : reinterpret_cast<uintptr_t>(info->socket_context);
  }

  // A connection opened or closed; the id lives in libmicrohttpd's socket context.
  static void Connection(void* cls, MHD_Connection* connection, void** socket_context,
                         MHD_ConnectionNotificationCode code) {
    auto* self = static_cast<HttpServer*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      self->Closed(reinterpret_cast<uintptr_t>(*socket_context));
      return;
    }
    const uint64_t id = self->next_id_.fetch_add(1);
    // The socket context is libmicrohttpd's void* per connection; it holds the id, never
    // dereferenced.
    *socket_context = reinterpret_cast<void*>(  // NOLINT(performance-no-int-to-ptr)
        static_cast<uintptr_t>(id));
    const Api& api = *self->api_;
    const MHD_ConnectionInfo* fd =
        api.get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    const MHD_ConnectionInfo* addr =
        api.get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    self->Started(id, fd == nullptr ? -1 : fd->connect_fd,
                  addr == nullptr ? std::string() : common::PeerAddress(addr->client_addr));
  }

  // An answer was sent (or the request failed): the connection waits for its next request.
  static void Completed(void* cls, MHD_Connection* connection, void** req_cls,
                        MHD_RequestTerminationCode /*code*/) {
    auto* self = static_cast<HttpServer*>(cls);
    if (*req_cls != nullptr && *req_cls != &headers_seen) delete static_cast<Upload*>(*req_cls);
    *req_cls = nullptr;
    self->Answered(IdOf(*self->api_, connection));
  }

  // A POST's body as it arrives: libmicrohttpd hands it over in pieces.
  struct Upload {
    std::string body;
    bool too_large = false;
  };
  static int headers_seen;  // only its address is used, as the marker of a GET's first call

  // A POST on a post path: the body is gathered up to the bound, then the handler runs.
  // Returns nullopt while the body is still arriving.
  static std::optional<MHD_Result> Post(HttpServer* self, MHD_Connection* connection,
                                        const char* upload_data, size_t* upload_data_size,
                                        void** req_cls) {
    const Api& api = *self->api_;
    const size_t bound = self->options_.max_body_bytes;
    if (*req_cls == nullptr) {
      // Headers only. A declared length over the bound is refused; the body is read and
      // dropped first when it is not absurdly long, because a client still sending when the
      // answer comes and the connection closes may see a reset instead of the 413 (the API
      // server would then report a failed call rather than a refused one).
      const char* length =
          api.lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
      uint64_t declared = 0;
      const bool over =
          length != nullptr && absl::SimpleAtoi(length, &declared) && declared > bound;
      if (over && declared > 16 * uint64_t{bound}) {
        self->counters_.too_large.fetch_add(1, std::memory_order_relaxed);
        return Queue(api, connection,
                     HttpResponse::Text(kContentTooLarge, "request body too large\n"));
      }
      auto* upload = new Upload();
      upload->too_large = over;
      *req_cls = upload;
      return MHD_YES;
    }
    auto* upload = static_cast<Upload*>(*req_cls);
    if (*upload_data_size != 0) {
      if (!upload->too_large && upload->body.size() + *upload_data_size <= bound) {
        upload->body.append(upload_data, *upload_data_size);
      } else {
        upload->too_large = true;
        upload->body.clear();
      }
      *upload_data_size = 0;
      return MHD_YES;
    }
    if (upload->too_large) {
      self->counters_.too_large.fetch_add(1, std::memory_order_relaxed);
      return Queue(api, connection,
                   HttpResponse::Text(kContentTooLarge, "request body too large\n"));
    }
    return std::nullopt;
  }

  // libmicrohttpd calls this once when the headers are in and again when the (empty) body is:
  // answering at the second call lets the connection stay open for the next scrape. A request
  // with a body gets 405 at once, before the body is read, and its connection is closed; a POST
  // path gathers its body first (Post above).
  static MHD_Result Access(void* cls, MHD_Connection* connection, const char* url,
                           const char* method, const char* /*version*/, const char* upload_data,
                           size_t* upload_data_size, void** req_cls) {
    auto* self = static_cast<HttpServer*>(cls);
    const Api& api = *self->api_;
    self->Busy(IdOf(api, connection));
    const std::string_view m(method);
    const bool post_path = self->options_.post_paths.count(url) > 0;
    if (auto refused = self->Precheck(std::string(m), url)) {
      return Queue(api, connection, *refused);
    }
    HttpRequest req;
    if (post_path) {
      if (auto answered = Post(self, connection, upload_data, upload_data_size, req_cls)) {
        return *answered;
      }
      req.body = std::move(static_cast<Upload*>(*req_cls)->body);
    } else {
      if (*req_cls == nullptr) {
        *req_cls = &headers_seen;
        return MHD_YES;
      }
      if (*upload_data_size != 0) {
        *upload_data_size = 0;  // a GET with a body: ignore the body
        return MHD_YES;
      }
    }
    req.method = std::string(m);
    req.path = url;
    const char* auth =
        api.lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth != nullptr) req.authorization = auth;
    if (self->verify_clients_ && self->handlers_.contains(req.path)) {
      req.client_cert = Verify(api, connection, &req.client_cert_problem);
    }
    return Queue(api, connection, self->Handle(req));
  }
};

int HttpServer::Callbacks::headers_seen = 0;

std::optional<HttpResponse> HttpServer::Precheck(const std::string& method,
                                                 const std::string& path) const {
  const bool post_path = options_.post_paths.contains(path);
  if (post_path ? method != "POST" : method != "GET" && method != "HEAD") {
    return HttpResponse{.status = 405,
                        .body = "method not allowed\n",
                        .headers = {{"Allow", post_path ? "POST" : "GET, HEAD"}}};
  }
  return std::nullopt;
}

HttpResponse HttpServer::Handle(const HttpRequest& req) const {
  const auto it = handlers_.find(req.path);
  if (it == handlers_.end()) return HttpResponse::Text(404, "not found\n");
  try {
    return it->second(req);
  } catch (const std::exception& e) {
    spdlog::error("metrics http: handler for {} threw: {}", req.path, e.what());
    return HttpResponse::Text(500, "internal error\n");
  }
}

// The PEM text of one TLS generation; libmicrohttpd keeps pointers into it while that
// generation's daemon runs.
struct HttpServer::Pems {
  std::string cert, key, ca;

  static absl::StatusOr<std::unique_ptr<Pems>> Read(const HttpServerOptions& o) {
    auto p = std::make_unique<Pems>();
    for (const auto& [file, pem] :
         {std::pair{&o.cert_file, &p->cert}, {&o.key_file, &p->key}, {&o.client_ca_file, &p->ca}}) {
      if (file->empty()) continue;
      auto text = common::ReadWholeFile(*file);
      if (!text.ok()) return text.status();
      *pem = *std::move(text);
    }
    return p;
  }
};

HttpServer::HttpServer(const common::Clock& clock, const common::ConnectionLimits& limits)
    : clock_(clock), table_(limits) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(
    HttpServerOptions options, std::map<std::string, HttpHandler> handlers,
    const common::Clock& clock) {
  auto address = common::ParseListenAddress(options.listen);
  if (!address.ok()) return address.status();
  std::unique_ptr<HttpServer> s(new HttpServer(clock, options.limits));
  s->handlers_ = std::move(handlers);
  s->tls_ =
      !options.cert_file.empty() || !options.key_file.empty() || !options.client_ca_file.empty();
  s->verify_clients_ = !options.client_ca_file.empty();
  s->options_ = std::move(options);
  s->address_ = *address;
  if (!s->tls_) {
    if (auto st = s->ServePlain(); !st.ok()) {
      return absl::UnavailableError(absl::StrCat("metrics listen ", s->options_.listen,
                                                 ": cannot serve HTTP: ", st.message()));
    }
  } else {
    auto api = Api::Get();
    if (!api.ok()) return api.status();
    s->api_ = *api;
    auto pems = s->ReadTls();
    if (!pems.ok()) return pems.status();
    s->pems_ = *std::move(pems);
    s->daemon_ = s->Start(*s->pems_, -1);
    if (s->daemon_ == nullptr) {
      std::lock_guard lock(s->log_mu_);
      return absl::UnavailableError(absl::StrCat("metrics listen ", s->options_.listen,
                                                 ": cannot serve HTTPS (", s->last_log_, ")"));
    }
    const MHD_DaemonInfo* info = s->api_->get_daemon_info(s->daemon_, MHD_DAEMON_INFO_BIND_PORT);
    s->port_ = info != nullptr && info->port != 0 ? info->port : s->address_.port;
  }
  s->watchdog_ = std::jthread([self = s.get()](const std::stop_token& stop) { self->Watch(stop); });
  return s;
}

absl::Status HttpServer::ServePlain() {
  PlainHttpTransport::Options o;
  o.address = address_;
  o.threads = options_.threads;
  o.post_paths = options_.post_paths;
  o.max_body_bytes = options_.max_body_bytes;
  o.max_connections = BackstopLimit(options_.limits);
  o.write_deadline = std::max(options_.limits.request_deadline, std::chrono::milliseconds(1000));
  PlainHttpTransport::Hooks h;
  h.started = [this](uint64_t id, int fd, const std::string& peer) { Started(id, fd, peer); };
  h.closed = [this](uint64_t id) { Closed(id); };
  h.busy = [this](uint64_t id) { Busy(id); };
  h.answered = [this](uint64_t id) { Answered(id); };
  h.precheck = [this](const std::string& method, const std::string& path) {
    return Precheck(method, path);
  };
  h.handle = [this](const HttpRequest& r) { return Handle(r); };
  h.too_large = [this] { counters_.too_large.fetch_add(1, std::memory_order_relaxed); };
  auto t = PlainHttpTransport::Start(std::move(o), std::move(h), clock_);
  if (!t.ok()) return t.status();
  plain_ = *std::move(t);
  port_ = plain_->port();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpServer::Pems>> HttpServer::ReadTls() const {
  auto pems = Pems::Read(options_);
  if (!pems.ok()) return pems.status();
  if (!tls_) return pems;
  if ((*pems)->cert.empty() || (*pems)->key.empty()) {
    return absl::InvalidArgumentError("HTTPS needs a certificate and a key");
  }
  if (auto st = CheckTlsMaterial(*api_->gnutls, options_, (*pems)->cert, (*pems)->key, (*pems)->ca);
      !st.ok()) {
    return st;
  }
  return pems;
}

MHD_Daemon* HttpServer::Start(const Pems& pems, int listen_fd) {
  // epoll, not select: the agent may hold thousands of open log files, and select() cannot watch
  // a descriptor above 1023. ITC: a running daemon can be quiesced, for a certificate reload.
  unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
  if (tls_) flags |= MHD_USE_TLS;
  if (address_.v6) flags |= MHD_USE_IPv6;
  // libmicrohttpd's own bounds are a backstop above the table's: the table decides who stays
  // (it needs a newcomer inside libmicrohttpd to cut an older one for it), and libmicrohttpd's
  // per-address limit would refuse before the table could choose. Its inactivity timeout also
  // cuts a client that stops reading its answer.
  const common::ConnectionLimits& limits = options_.limits;
  const auto mhd_limit = static_cast<unsigned int>(BackstopLimit(limits));
  const auto deadline_s = static_cast<unsigned int>(std::max<int64_t>(
      1, std::chrono::ceil<std::chrono::seconds>(limits.request_deadline).count()));
  std::vector<MHD_OptionItem> opts = {
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&Callbacks::Log), this},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Callbacks::Connection), this},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Callbacks::Completed), this},
      {MHD_OPTION_THREAD_POOL_SIZE, options_.threads, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, mhd_limit, nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, deadline_s, nullptr},
  };
  if (listen_fd >= 0) {
    opts.push_back({MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr});
  } else {
    opts.push_back({MHD_OPTION_SOCK_ADDR, 0, &address_.storage});
  }
  if (tls_) {
    opts.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kPriorities)});
    opts.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(pems.cert.c_str())});
    opts.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(pems.key.c_str())});
    // Without a client CA, clients are not asked for a certificate at all.
    if (verify_clients_) {
      opts.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(pems.ca.c_str())});
    }
  }
  opts.push_back({MHD_OPTION_END, 0, nullptr});
  return api_->start_daemon(flags, address_.port, nullptr, nullptr, &Callbacks::Access, this,
                            MHD_OPTION_ARRAY, opts.data(), MHD_OPTION_END);
}

absl::Status HttpServer::ReloadTls() {
  if (!tls_) return absl::OkStatus();
  auto pems = ReadTls();
  if (!pems.ok()) return pems.status();
  std::lock_guard lock(reload_mu_);
  // The running daemon stops accepting and hands over its listening socket; a new one serves
  // it with the new certificate at once, so no connection is ever refused. Requests in flight
  // on the old one finish (up to the request deadline) before it stops.
  const MHD_socket fd = api_->quiesce_daemon(daemon_);
  if (fd == MHD_INVALID_SOCKET) return absl::InternalError("metrics https: cannot quiesce");
  MHD_Daemon* next = Start(**pems, fd);
  if (next == nullptr) {
    std::lock_guard log(log_mu_);
    return absl::InternalError(absl::StrCat("metrics https: cannot restart (", last_log_, ")"));
  }
  MHD_Daemon* old = daemon_;
  daemon_ = next;
  const auto deadline = clock_.Now() + options_.limits.request_deadline;
  while (clock_.Now() < deadline) {
    const MHD_DaemonInfo* info = api_->get_daemon_info(old, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    if (info == nullptr || info->num_connections == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  api_->stop_daemon(old);
  pems_ = *std::move(pems);  // the old text goes only once its daemon has
  return absl::OkStatus();
}

void HttpServer::Started(uint64_t id, int fd, const std::string& peer) {
  std::lock_guard lock(guard_mu_);
  const int held = fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  socket_[id] = held;
  const auto a = table_.Admit(id, peer, clock_.Now());
  if (a.evicted) {
    // Counted before the cut: a client that sees its connection end sees it counted.
    counters_.evicted.fetch_add(1, std::memory_order_relaxed);
    CutLocked(*a.evicted);
  }
  if (a.admitted) {
    counters_.accepted.fetch_add(1, std::memory_order_relaxed);
    ++waits_begun_;
    watch_cv_.notify_one();
  } else {
    counters_.refused.fetch_add(1, std::memory_order_relaxed);
    CutLocked(id);
  }
}

void HttpServer::Closed(uint64_t id) {
  std::lock_guard lock(guard_mu_);
  table_.Closed(id);
  if (auto it = socket_.find(id); it != socket_.end()) {
    if (it->second >= 0) ::close(it->second);
    socket_.erase(it);
  }
}

void HttpServer::Busy(uint64_t id) {
  std::lock_guard lock(guard_mu_);
  table_.Busy(id);
}

void HttpServer::Answered(uint64_t id) {
  std::lock_guard lock(guard_mu_);
  table_.Waiting(id, clock_.Now());
  ++waits_begun_;
  watch_cv_.notify_one();
}

void HttpServer::CutLocked(uint64_t id) {
  // shutdown, not close: libmicrohttpd owns the descriptor; it sees the end of the stream,
  // closes the connection and reports it closed (Closed above then drops our dup).
  if (auto it = socket_.find(id); it != socket_.end() && it->second >= 0) {
    ::shutdown(it->second, SHUT_RDWR);
  }
}

void HttpServer::Watch(const std::stop_token& stop) {
  // Sleeps until the first waiting connection's deadline, or until a connection starts waiting
  // (Started, Answered), instead of checking five times a second: an idle agent has no
  // connection and so no wake-up here. The wait is cut at the deadline itself so that a test
  // clock moved forward is seen within one deadline.
  std::unique_lock lock(guard_mu_);
  while (!stop.stop_requested()) {
    for (const uint64_t id : table_.TakeExpired(clock_.Now())) {
      counters_.timed_out.fetch_add(1, std::memory_order_relaxed);
      CutLocked(id);
    }
    const uint64_t seen = waits_begun_;
    const auto woken = [&] { return waits_begun_ != seen; };
    if (const auto next = table_.NextExpiry()) {
      const auto left = std::min<std::chrono::steady_clock::duration>(
          *next - clock_.Now(), table_.limits().request_deadline);
      watch_cv_.wait_for(
          lock, stop,
          std::max(left, std::chrono::steady_clock::duration(0)) + std::chrono::milliseconds(1),
          woken);
    } else {
      watch_cv_.wait(lock, stop, woken);
    }
  }
}

HttpServer::~HttpServer() {
  watchdog_ = {};  // stops and joins before the table goes
  plain_.reset();  // joins its threads and closes its connections (Closed for each)
  // Closes the listening socket and every connection and joins the server's threads: no handler
  // runs once it returns.
  {
    std::lock_guard lock(reload_mu_);
    if (daemon_ != nullptr) api_->stop_daemon(daemon_);
  }
  for (const auto& [id, fd] : socket_) {
    if (fd >= 0) ::close(fd);
  }
}

}  // namespace efawatch::exporter
