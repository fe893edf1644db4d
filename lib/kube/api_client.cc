// SPDX-License-Identifier: Apache-2.0
#include "lib/kube/api_client.h"

#include <curl/curl.h>

#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "lib/common/read_file.h"
#include "lib/common/shared_library.h"

namespace efawatch::kube {
namespace {

using Json = nlohmann::json;

// libcurl, opened at the first API call rather than at start: it and the 17 libraries it
// needs (LDAP, Kerberos, SSH, RTMP...) are 1.5 MiB of an agent's RSS, and an agent outside
// Kubernetes never calls the API (lib/common/shared_library.h).
struct CurlApi {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_perform) easy_perform = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_escape) easy_escape = nullptr;
  decltype(&curl_free) free = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
};

absl::StatusOr<CurlApi> LoadCurl() {
  auto lib = common::SharedLibrary::Open("libcurl.so.4");
  if (!lib.ok()) return lib.status();
  CurlApi a;
  for (const absl::Status& st :
       {lib->Bind("curl_global_init", &a.global_init), lib->Bind("curl_easy_init", &a.easy_init),
        lib->Bind("curl_easy_setopt", &a.easy_setopt),
        lib->Bind("curl_easy_perform", &a.easy_perform),
        lib->Bind("curl_easy_getinfo", &a.easy_getinfo),
        lib->Bind("curl_easy_strerror", &a.easy_strerror),
        lib->Bind("curl_easy_cleanup", &a.easy_cleanup),
        lib->Bind("curl_easy_escape", &a.easy_escape), lib->Bind("curl_free", &a.free),
        lib->Bind("curl_slist_append", &a.slist_append),
        lib->Bind("curl_slist_free_all", &a.slist_free_all)}) {
    if (!st.ok()) return st;
  }
  // Once per process, before any handle exists (curl_global_init is not thread-safe; the
  // function-local static below runs it once).
  if (const CURLcode rc = a.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
    return absl::InternalError(absl::StrCat("curl_global_init: ", a.easy_strerror(rc)));
  }
  return a;
}

absl::StatusOr<const CurlApi*> Curl() { return common::LoadOnce<&LoadCurl>(); }

struct CurlDeleter {
  const CurlApi* api;
  void operator()(CURL* c) const { api->easy_cleanup(c); }
};
struct SlistDeleter {
  const CurlApi* api;
  void operator()(curl_slist* l) const { api->slist_free_all(l); }
};

size_t Append(char* data, size_t size, size_t n, void* out) {
  auto* body = static_cast<std::string*>(out);
  // A pod list of a 1,000-node DaemonSet in 500-item pages is a few MB at most; refuse a
  // runaway body rather than grow without bound.
  constexpr size_t kMaxBody = 64u << 20;
  if (body->size() + size * n > kMaxBody) return 0;
  body->append(data, size * n);
  return size * n;
}

int Progress(void* stop, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<const std::stop_token*>(stop)->stop_requested() ? 1 : 0;
}

std::string Escape(const CurlApi& api, const std::string& s) {
  char* e = api.easy_escape(nullptr, s.c_str(), static_cast<int>(s.size()));
  std::string out = e != nullptr ? e : "";
  api.free(e);
  return out;
}

// One HTTPS request to the API server with the bearer token, trusting the cluster CA only;
// returns the HTTP status and fills `body`. `request` (with `content_type`) is sent when given.
absl::StatusOr<long> Perform(const ApiOptions& o, const std::stop_token& stop,
                             const std::string& method, const std::string& url,
                             const std::string& token, const std::string* request,
                             const std::string& content_type, std::string* body) {
  auto api_or = Curl();
  if (!api_or.ok()) return api_or.status();
  const CurlApi& api = **api_or;
  std::unique_ptr<CURL, CurlDeleter> curl(api.easy_init(), CurlDeleter{&api});
  if (!curl) return absl::InternalError("curl_easy_init failed");
  std::unique_ptr<curl_slist, SlistDeleter> headers(
      api.slist_append(nullptr, absl::StrCat("Authorization: Bearer ", token).c_str()),
      SlistDeleter{&api});
  headers.reset(api.slist_append(headers.release(), "Accept: application/json"));
  if (request != nullptr) {
    headers.reset(
        api.slist_append(headers.release(), absl::StrCat("Content-Type: ", content_type).c_str()));
  }
  const std::string ca = o.ca_file.string();
  CURL* c = curl.get();
  api.easy_setopt(c, CURLOPT_URL, url.c_str());
  api.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (request != nullptr) {
    api.easy_setopt(c, CURLOPT_POSTFIELDS, request->data());
    api.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request->size()));
  }
  api.easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  api.easy_setopt(c, CURLOPT_CAINFO, ca.c_str());  // the cluster CA only, not system roots
  api.easy_setopt(c, CURLOPT_CAPATH, nullptr);
  api.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  api.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  api.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
  api.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a threaded daemon
  api.easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout.count()));
  api.easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  api.easy_setopt(c, CURLOPT_WRITEDATA, body);
  api.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, Progress);
  api.easy_setopt(c, CURLOPT_XFERINFODATA, &stop);
  api.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  const CURLcode rc = api.easy_perform(c);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(method, " ", url, ": ", api.easy_strerror(rc)));
  }
  long code = 0;
  api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

absl::StatusOr<std::vector<Json>> ListPages(const ApiOptions& o, const std::stop_token& stop,
                                            const std::string& base, const std::string& token,
                                            const std::string& label_selector,
                                            const std::string& field_selector) {
  auto api = Curl();
  if (!api.ok()) return api.status();
  const auto escape = [&](const std::string& text) { return Escape(**api, text); };
  std::vector<Json> items;
  std::string cont;
  bool restarted = false;
  for (int page = 0; page < 10000; ++page) {
    std::string url = absl::StrCat(base, "?limit=", o.page_size);
    if (!label_selector.empty()) absl::StrAppend(&url, "&labelSelector=", escape(label_selector));
    if (!field_selector.empty()) absl::StrAppend(&url, "&fieldSelector=", escape(field_selector));
    // A continued listing must not name a resourceVersion (the token carries it).
    if (cont.empty()) absl::StrAppend(&url, "&resourceVersion=0");
    if (!cont.empty()) absl::StrAppend(&url, "&continue=", escape(cont));
    std::string body;
    auto code_or = Perform(o, stop, "GET", url, token, nullptr, "", &body);
    if (!code_or.ok()) return code_or.status();
    const long code = *code_or;
    Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (code == 410 && !cont.empty() && !restarted) {
      // The continue token expired (etcd compacted): list again from the start, once.
      items.clear();
      cont.clear();
      restarted = true;
      continue;
    }
    if (code != 200) {
      const std::string msg = doc.is_object() ? doc.value("message", "") : "";
      return absl::UnavailableError(
          absl::StrCat("GET ", base, ": HTTP ", code, msg.empty() ? "" : ": ", msg));
    }
    if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array()) {
      return absl::UnavailableError(absl::StrCat("GET ", base, ": not a Kubernetes list"));
    }
    for (Json& item : doc["items"]) {
      if (item.is_object()) items.push_back(std::move(item));
    }
    const Json meta = doc.value("metadata", Json::object());
    cont = meta.is_object() ? meta.value("continue", "") : "";
    if (cont.empty()) return items;
  }
  return absl::UnavailableError(absl::StrCat("GET ", base, ": too many pages"));
}

}  // namespace

absl::StatusOr<std::string> ReadSmallFile(const std::filesystem::path& path) {
  auto read = common::ReadWholeFile(path.string());
  if (!read.ok()) return read.status();
  return std::string(absl::StripAsciiWhitespace(*read));
}

absl::StatusOr<std::string> ApiServerUrl(const ApiOptions& options) {
  if (!options.api_server.empty()) return options.api_server;
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr) {
    return absl::FailedPreconditionError(
        "not in a Kubernetes pod (KUBERNETES_SERVICE_HOST unset) and no API server given");
  }
  return std::string(host).find(':') != std::string::npos
             ? absl::StrCat("https://[", host, "]:", port)
             : absl::StrCat("https://", host, ":", port);
}

absl::StatusOr<std::vector<nlohmann::json>> ListAll(const ApiOptions& options,
                                                    const std::stop_token& stop,
                                                    const std::string& path,
                                                    const std::string& label_selector,
                                                    const std::string& field_selector) {
  auto api = ApiServerUrl(options);
  if (!api.ok()) return api.status();
  // Read the token on every listing: projected service-account tokens rotate.
  auto token = ReadSmallFile(options.token_file);
  if (!token.ok()) return token.status();
  // The API server's JSON is trusted in shape but not blindly: a field of an unexpected type is
  // an error for this listing, not a crash.
  try {
    return ListPages(options, stop, *api + path, *token, label_selector, field_selector);
  } catch (const Json::exception& e) {
    return absl::UnavailableError(absl::StrCat("Kubernetes API answer: ", e.what()));
  }
}

absl::StatusOr<Response> Send(const ApiOptions& options, const std::stop_token& stop,
                              const std::string& method, const std::string& path,
                              const std::string& content_type, const nlohmann::json& body) {
  auto api = ApiServerUrl(options);
  if (!api.ok()) return api.status();
  auto token = ReadSmallFile(options.token_file);
  if (!token.ok()) return token.status();
  // Invalid UTF-8 (a log line quoted in a message) is replaced, not thrown on.
  const std::string request = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string answer;
  auto code = Perform(options, stop, method, *api + path, *token, &request, content_type, &answer);
  if (!code.ok()) return code.status();
  Response r;
  r.code = *code;
  r.body = Json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (r.body.is_discarded()) r.body = nullptr;
  return r;
}

}  // namespace efawatch::kube
