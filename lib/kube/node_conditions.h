// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

/// The NodeConditions efawatchd sets on its node (daemon/signals), named once for the agent that
/// sets them and the CLI that clears them on uninstall (`efawatch node-conditions --clear`).
/// Plain functions over JSON values: no I/O, thread-safe.
namespace efawatch::kube {

inline constexpr char kEfaHealthy[] = "EfaHealthy";
inline constexpr char kFabricReachable[] = "FabricReachable";
/// True once the node's fabric checks pass (daemon/signals/fabric_ready.h): what a
/// NodeReadinessRule waits for before it lifts the node's taint (docs/node-readiness.md).
inline constexpr char kFabricReady[] = "FabricReady";
/// Every condition type the agent writes; a type added to the agent belongs here too, or an
/// uninstall leaves it behind.
inline constexpr std::array<std::string_view, 3> kAgentConditionTypes = {
    kEfaHealthy, kFabricReachable, kFabricReady};

/// The agent's condition types that `node` (a v1 Node object) carries in status.conditions, in
/// the order it lists them; empty for a node without them or an object of another shape.
std::vector<std::string> AgentConditionsOf(const nlohmann::json& node);

/// A strategic merge patch of a node's status that deletes the conditions of `types` (the list
/// merges on `type`; `$patch: delete` removes an element) and leaves every other condition as it
/// is, kubelet's Ready among them.
nlohmann::json DeleteConditionsPatch(const std::vector<std::string>& types);

}  // namespace efawatch::kube
