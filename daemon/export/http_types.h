// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace efawatch::exporter {

/// What the client's TLS certificate proved, as GnuTLS verified it against the client CA.
enum class ClientCert {
  kNone,       // no certificate presented, or no client CA configured
  kTrusted,    // a certificate the client CA signed, in its validity period
  kUntrusted,  // a certificate, but not one the client CA vouches for (another CA, expired, ...)
};

struct HttpRequest {
  std::string method;         // GET, HEAD, or POST on a post path
  std::string path;           // without the query string
  std::string body;           // a POST's body (at most max_body_bytes)
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

}  // namespace efawatch::exporter
