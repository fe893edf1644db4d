// SPDX-License-Identifier: Apache-2.0
#include "lib/kube/node_conditions.h"

#include <algorithm>

namespace efawatch::kube {

std::vector<std::string> AgentConditionsOf(const nlohmann::json& node) {
  std::vector<std::string> out;
  if (!node.is_object()) return out;
  const auto status = node.find("status");
  if (status == node.end() || !status->is_object()) return out;
  const auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return out;
  for (const nlohmann::json& c : *conditions) {
    if (!c.is_object() || !c.contains("type") || !c["type"].is_string()) continue;
    const std::string type = c["type"].get<std::string>();
    if (std::find(kAgentConditionTypes.begin(), kAgentConditionTypes.end(), type) !=
        kAgentConditionTypes.end()) {
      out.push_back(type);
    }
  }
  return out;
}

nlohmann::json DeleteConditionsPatch(const std::vector<std::string>& types) {
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& t : types) list.push_back({{"type", t}, {"$patch", "delete"}});
  return {{"status", {{"conditions", list}}}};
}

}  // namespace efawatch::kube
