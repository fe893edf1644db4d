// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "probes/mesh/peer.h"

namespace efawatch::mesh {

/// Where the list of agents comes from. List() may block on the network (DNS, the Kubernetes
/// API) but returns within its own timeout; it runs on the mesh thread only.
class PeerSource {
 public:
  virtual ~PeerSource() = default;
  virtual std::string_view Name() const = 0;
  virtual absl::StatusOr<std::vector<Peer>> List(const std::stop_token& stop) = 0;
};

/// `node=host:port` or `host:port` entries, comma separated, each optionally followed by
/// `/group`; a missing port takes `default_port`. INVALID_ARGUMENT names the bad entry.
absl::StatusOr<std::vector<Peer>> ParseStaticPeers(std::string_view spec, int default_port);

/// A fixed list (configuration).
std::unique_ptr<PeerSource> StaticPeerSource(std::vector<Peer> peers);

/// The A/AAAA records of `name` (a headless Service lists one per DaemonSet pod), each with
/// `port`. Uses the system resolver (getaddrinfo), so /etc/resolv.conf (or, under `ip netns exec`,
/// /etc/netns/NAME/resolv.conf) decides the server. Peers carry no node name: their agents tell
/// it when asked for their fabric address.
std::unique_ptr<PeerSource> DnsPeerSource(std::string name, int port);

struct KubernetesSourceOptions {
  /// https://host:port of the API server; empty: from KUBERNETES_SERVICE_HOST/_PORT.
  std::string api_server;
  std::string namespace_name;  ///< The agent's namespace; empty: the service account's.
  std::string label_selector = "app.kubernetes.io/name=efawatch";
  std::filesystem::path token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::filesystem::path ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  std::filesystem::path namespace_file = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
  int agent_port = 9478;  ///< Peers' gRPC port.
  /// Node label whose value is the topology group (e.g. a placement-group label); empty: none.
  /// Reading it needs list on nodes (a ClusterRole), so it is off unless asked for.
  std::string group_node_label;
  size_t page_size = 500;  ///< `limit` per request; the API server pages with `continue`.
  std::chrono::milliseconds timeout{10000};  ///< Per request.
};

/// Lists the agent pods (label selector, own namespace) through the Kubernetes API with the
/// in-cluster service-account token and CA, the way client-go's pager does (limit + continue).
/// Running pods with a pod IP and a node name become peers at podIP:agent_port.
std::unique_ptr<PeerSource> KubernetesPeerSource(KubernetesSourceOptions options);

}  // namespace efawatch::mesh
