#include "lib/kube/api_client.h"

#include <curl/curl.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "lib/common/read_file.h"

namespace efawatch::kube {
namespace {

using Json = nlohmann::json;

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
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

std::string Escape(const std::string& s) {
  char* e = curl_easy_escape(nullptr, s.c_str(), static_cast<int>(s.size()));
  std::string out = e != nullptr ? e : "";
  curl_free(e);
  return out;
}

// One HTTPS request to the API server with the bearer token, trusting the cluster CA only;
// returns the HTTP status and fills `body`. `request` (with `content_type`) is sent when given.
absl::StatusOr<long> Perform(const ApiOptions& o, const std::stop_token& stop,
                             const std::string& method, const std::string& url,
                             const std::string& token, const std::string* request,
                             const std::string& content_type, std::string* body) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return absl::InternalError("curl_easy_init failed");
  std::unique_ptr<curl_slist, SlistDeleter> headers(
      curl_slist_append(nullptr, absl::StrCat("Authorization: Bearer ", token).c_str()));
  headers.reset(curl_slist_append(headers.release(), "Accept: application/json"));
  if (request != nullptr) {
    headers.reset(
        curl_slist_append(headers.release(), absl::StrCat("Content-Type: ", content_type).c_str()));
  }
  const std::string ca = o.ca_file.string();
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (request != nullptr) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request->size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());  // the cluster CA only, not system roots
  curl_easy_setopt(c, CURLOPT_CAPATH, nullptr);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a threaded daemon
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &stop);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(method, " ", url, ": ", curl_easy_strerror(rc)));
  }
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

absl::StatusOr<std::vector<Json>> ListPages(const ApiOptions& o, const std::stop_token& stop,
                                            const std::string& base, const std::string& token,
                                            const std::string& label_selector,
                                            const std::string& field_selector) {
  std::vector<Json> items;
  std::string cont;
  bool restarted = false;
  for (int page = 0; page < 10000; ++page) {
    std::string url = absl::StrCat(base, "?limit=", o.page_size);
    if (!label_selector.empty()) absl::StrAppend(&url, "&labelSelector=", Escape(label_selector));
    if (!field_selector.empty()) absl::StrAppend(&url, "&fieldSelector=", Escape(field_selector));
    // A continued listing must not name a resourceVersion (the token carries it).
    if (cont.empty()) absl::StrAppend(&url, "&resourceVersion=0");
    if (!cont.empty()) absl::StrAppend(&url, "&continue=", Escape(cont));
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

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
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
  InitCurlOnce();
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
  InitCurlOnce();
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
