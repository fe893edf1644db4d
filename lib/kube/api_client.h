// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

/// The Kubernetes API as the agent uses it: list calls with the in-cluster service-account token
/// and CA, paged the way client-go's pager does (limit + continue). Stateless and thread-safe:
/// every call reads the token again (projected tokens rotate) and opens its own connection.
namespace efawatch::kube {

struct ApiOptions {
  /// https://host:port of the API server; empty: from KUBERNETES_SERVICE_HOST/_PORT.
  std::string api_server;
  std::filesystem::path token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::filesystem::path ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  size_t page_size = 500;                    ///< `limit` per request.
  std::chrono::milliseconds timeout{10000};  ///< Per request.
};

/// A small file's content without surrounding white space (tokens, the namespace file).
absl::StatusOr<std::string> ReadSmallFile(const std::filesystem::path& path);

/// The API server URL: options.api_server, else the in-cluster service address;
/// FailedPrecondition outside a pod without one.
absl::StatusOr<std::string> ApiServerUrl(const ApiOptions& options);

/// GETs every page of the list at `path` ("/api/v1/pods", "/api/v1/namespaces/x/pods") with the
/// given selectors (empty: none) and returns its items. The first page asks for
/// resourceVersion=0, so the API server answers from its watch cache instead of etcd: 1,000
/// agents listing every 30 s must not each cost a quorum read. Unavailable on a transport error, an
/// HTTP error (the Status object's message included) or an answer that is not a list; a body
/// over 64 MiB is refused. `stop` aborts a transfer in flight.
absl::StatusOr<std::vector<nlohmann::json>> ListAll(const ApiOptions& options,
                                                    const std::stop_token& stop,
                                                    const std::string& path,
                                                    const std::string& label_selector,
                                                    const std::string& field_selector = "");

/// An answer of the API server to a write: the HTTP status and the parsed body (null when it is
/// not JSON). A Status object's message is in body["message"].
struct Response {
  long code = 0;
  nlohmann::json body;
};

/// Sends one request with a JSON body ("POST" to create, "PATCH" with a patch content type, such
/// as application/strategic-merge-patch+json) and returns the answer whatever its HTTP status:
/// 409 (already exists) and 403 (RBAC) are answers the caller acts on. Unavailable on a
/// transport error; a body over 64 MiB is refused. `stop` aborts a transfer in flight.
absl::StatusOr<Response> Send(const ApiOptions& options, const std::stop_token& stop,
                              const std::string& method, const std::string& path,
                              const std::string& content_type, const nlohmann::json& body);

}  // namespace efawatch::kube
