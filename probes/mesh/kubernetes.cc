// Kubernetes API peer discovery: a plain HTTPS client (libcurl) for the two list calls the agent
// needs, rather than a Kubernetes client library (none is packaged for C++ in Debian).

#include <curl/curl.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "lib/common/read_file.h"
#include "probes/mesh/discovery.h"

namespace efawatch::mesh {
namespace {

using Json = nlohmann::json;

absl::StatusOr<std::string> ReadSmallFile(const std::filesystem::path& path) {
  auto read = common::ReadWholeFile(path.string());
  if (!read.ok()) return read.status();
  return std::string(absl::StripAsciiWhitespace(*read));
}

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

class KubernetesSource final : public PeerSource {
 public:
  explicit KubernetesSource(KubernetesSourceOptions o) : o_(std::move(o)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }
  std::string_view Name() const override { return "kubernetes"; }

  absl::StatusOr<std::vector<Peer>> List(const std::stop_token& stop) override {
    // The API server's JSON is trusted in shape but not blindly: a field of an unexpected type
    // is an error for this listing, not a crash.
    try {
      return ListPeers(stop);
    } catch (const Json::exception& e) {
      return absl::UnavailableError(absl::StrCat("Kubernetes API answer: ", e.what()));
    }
  }

 private:
  absl::StatusOr<std::vector<Peer>> ListPeers(const std::stop_token& stop) {
    std::string api = o_.api_server;
    if (api.empty()) {
      const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
      const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
      if (host == nullptr || port == nullptr) {
        return absl::FailedPreconditionError(
            "not in a Kubernetes pod (KUBERNETES_SERVICE_HOST unset) and no API server given");
      }
      api = std::string(host).find(':') != std::string::npos
                ? absl::StrCat("https://[", host, "]:", port)
                : absl::StrCat("https://", host, ":", port);
    }
    std::string ns = o_.namespace_name;
    if (ns.empty()) {
      auto read = ReadSmallFile(o_.namespace_file);
      if (!read.ok()) return read.status();
      ns = *read;
    }
    // Read the token on every listing: projected service-account tokens rotate.
    auto token = ReadSmallFile(o_.token_file);
    if (!token.ok()) return token.status();

    std::map<std::string, std::string> groups;
    if (!o_.group_node_label.empty()) {
      auto nodes = ListAll(stop, *token, absl::StrCat(api, "/api/v1/nodes"), o_.group_node_label);
      if (!nodes.ok()) return nodes.status();
      for (const Json& n : *nodes) {
        const Json meta = n.value("metadata", Json::object());
        const Json labels = meta.value("labels", Json::object());
        auto it = labels.find(o_.group_node_label);
        if (it != labels.end() && it->is_string()) {
          groups[meta.value("name", "")] = it->get<std::string>();
        }
      }
    }
    auto pods = ListAll(stop, *token, absl::StrCat(api, "/api/v1/namespaces/", ns, "/pods"),
                        o_.label_selector);
    if (!pods.ok()) return pods.status();
    std::vector<Peer> out;
    for (const Json& pod : *pods) {
      const Json& status = pod.value("status", Json::object());
      const std::string phase = status.value("phase", "");
      const std::string ip = status.value("podIP", "");
      const std::string node = pod.value("spec", Json::object()).value("nodeName", "");
      // Pending pods have no address yet; finished ones answer nothing.
      if (phase != "Running" || ip.empty() || node.empty()) continue;
      Peer p;
      p.node = node;
      p.agent = ip.find(':') != std::string::npos ? absl::StrCat("[", ip, "]:", o_.agent_port)
                                                  : absl::StrCat(ip, ":", o_.agent_port);
      if (auto g = groups.find(node); g != groups.end()) p.group = g->second;
      out.push_back(std::move(p));
    }
    return out;
  }

  // GETs every page of a list (limit + continue) and returns the items.
  absl::StatusOr<std::vector<Json>> ListAll(const std::stop_token& stop, const std::string& token,
                                            const std::string& base, const std::string& selector) {
    std::vector<Json> items;
    std::string cont;
    bool restarted = false;
    for (int page = 0; page < 10000; ++page) {
      std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
      if (!curl) return absl::InternalError("curl_easy_init failed");
      auto escape = [&](const std::string& s) {
        char* e = curl_easy_escape(curl.get(), s.c_str(), static_cast<int>(s.size()));
        std::string out = e != nullptr ? e : "";
        curl_free(e);
        return out;
      };
      std::string url = absl::StrCat(base, "?limit=", o_.page_size);
      if (!selector.empty()) absl::StrAppend(&url, "&labelSelector=", escape(selector));
      if (!cont.empty()) absl::StrAppend(&url, "&continue=", escape(cont));
      std::string body;
      std::unique_ptr<curl_slist, SlistDeleter> headers(
          curl_slist_append(nullptr, absl::StrCat("Authorization: Bearer ", token).c_str()));
      headers.reset(curl_slist_append(headers.release(), "Accept: application/json"));
      const std::string ca = o_.ca_file.string();
      CURL* c = curl.get();
      curl_easy_setopt(c, CURLOPT_URL, url.c_str());
      curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
      curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());  // the cluster CA only, not system roots
      curl_easy_setopt(c, CURLOPT_CAPATH, nullptr);
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
      curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
      curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
      curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM in a threaded daemon
      curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(o_.timeout.count()));
      curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Append);
      curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
      curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, Progress);
      curl_easy_setopt(c, CURLOPT_XFERINFODATA, &stop);
      curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
      const CURLcode rc = curl_easy_perform(c);
      if (rc != CURLE_OK) {
        return absl::UnavailableError(absl::StrCat("GET ", base, ": ", curl_easy_strerror(rc)));
      }
      long code = 0;
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
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
      cont = doc.value("metadata", Json::object()).value("continue", "");
      if (cont.empty()) return items;
    }
    return absl::UnavailableError(absl::StrCat("GET ", base, ": too many pages"));
  }

  KubernetesSourceOptions o_;
};

}  // namespace

std::unique_ptr<PeerSource> KubernetesPeerSource(KubernetesSourceOptions options) {
  return std::make_unique<KubernetesSource>(std::move(options));
}

}  // namespace efawatch::mesh
