// SPDX-License-Identifier: Apache-2.0
#include "cli/node_conditions.h"

#include <stop_token>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/kube/node_conditions.h"

namespace efawatch::cli {

int RunNodeConditions(const NodeConditionsArgs& args, std::ostream& out, std::ostream& err) {
  // Without an API server there is nothing to do, and nothing to retry: a configuration error.
  if (auto url = kube::ApiServerUrl(args.api); !url.ok()) {
    err << "efawatch node-conditions: " << url.status().message()
        << " (run it in a pod, e.g. the Job in docs/deploy.md, or give --api-server)\n";
    return 2;
  }
  const std::stop_token no_stop;
  const std::string fields = args.node.empty() ? "" : absl::StrCat("metadata.name=", args.node);
  auto nodes = kube::ListAll(args.api, no_stop, "/api/v1/nodes", "", fields);
  if (!nodes.ok()) {
    err << "efawatch node-conditions: listing nodes: " << nodes.status().message() << "\n";
    return 1;
  }
  if (!args.node.empty() && nodes->empty()) {
    err << "efawatch node-conditions: no node " << args.node << "\n";
    return 1;
  }
  int exit_code = 0;
  size_t carrying = 0;
  for (const nlohmann::json& node : *nodes) {
    const std::vector<std::string> types = kube::AgentConditionsOf(node);
    if (types.empty()) continue;
    ++carrying;
    const std::string name = node["metadata"].value("name", "");
    if (!args.clear) {
      out << name << ": " << absl::StrJoin(types, ", ") << "\n";
      continue;
    }
    auto r =
        kube::Send(args.api, no_stop, "PATCH", absl::StrCat("/api/v1/nodes/", name, "/status"),
                   "application/strategic-merge-patch+json", kube::DeleteConditionsPatch(types));
    if (!r.ok()) {
      err << "efawatch node-conditions: " << name << ": " << r.status().message() << "\n";
      exit_code = 1;
    } else if (r->code < 200 || r->code >= 300) {
      const std::string msg = r->body.is_object() ? r->body.value("message", "") : "";
      err << "efawatch node-conditions: " << name << ": HTTP " << r->code << ": " << msg
          << (r->code == 403 ? " (needs patch on nodes/status: the ClusterRole in docs/deploy.md)"
                             : "")
          << "\n";
      exit_code = 1;
    } else {
      out << name << ": cleared " << absl::StrJoin(types, ", ") << "\n";
    }
  }
  if (carrying == 0) out << "no node carries an efawatch condition\n";
  return exit_code;
}

}  // namespace efawatch::cli
