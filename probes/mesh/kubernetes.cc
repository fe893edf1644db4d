// SPDX-License-Identifier: Apache-2.0
// Kubernetes API peer discovery: the agent pods, listed through lib/kube's plain HTTPS client.

#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "lib/kube/api_client.h"
#include "probes/mesh/discovery.h"

namespace efawatch::mesh {
namespace {

using Json = nlohmann::json;

class KubernetesSource final : public PeerSource {
 public:
  explicit KubernetesSource(KubernetesSourceOptions o) : o_(std::move(o)) {
    api_.api_server = o_.api_server;
    api_.token_file = o_.token_file;
    api_.ca_file = o_.ca_file;
    api_.page_size = o_.page_size;
    api_.timeout = o_.timeout;
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
    auto api = kube::ApiServerUrl(api_);
    if (!api.ok()) return api.status();
    std::string ns = o_.namespace_name;
    if (ns.empty()) {
      auto read = kube::ReadSmallFile(o_.namespace_file);
      if (!read.ok()) return read.status();
      ns = *read;
    }
    std::map<std::string, std::string> groups;
    if (!o_.group_node_label.empty()) {
      auto nodes = kube::ListAll(api_, stop, "/api/v1/nodes", o_.group_node_label);
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
    auto pods = kube::ListAll(api_, stop, absl::StrCat("/api/v1/namespaces/", ns, "/pods"),
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

  KubernetesSourceOptions o_;
  kube::ApiOptions api_;
};

}  // namespace

std::unique_ptr<PeerSource> KubernetesPeerSource(KubernetesSourceOptions options) {
  return std::make_unique<KubernetesSource>(std::move(options));
}

}  // namespace efawatch::mesh
