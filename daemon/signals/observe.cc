// SPDX-License-Identifier: Apache-2.0
#include "daemon/signals/observe.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "daemon/signals/fabric_ready.h"
#include "lib/kube/node_conditions.h"

namespace efawatch::signals {
namespace {

// The message of `subject`'s finding of `kind`, with its evidence line; empty when none.
std::string FindingText(const std::vector<common::Finding>& findings, const std::string& subject,
                        common::FindingKind kind) {
  for (const common::Finding& f : findings) {
    if (f.subject != subject || !f.Is(kind)) continue;
    std::string text = f.message;
    if (!f.evidence.empty()) {
      absl::StrAppend(&text, " (", f.evidence.source,
                      f.evidence.line > 0 ? absl::StrCat(":", f.evidence.line) : "", ": ",
                      f.evidence.text, ")");
    }
    return text;
  }
  return {};
}

// `type`, False with the first critical finding of `kinds` as its reason and all of them as its
// message; True with `ok_reason` otherwise.
NodeCondition Condition(const std::vector<common::Finding>& findings, const char* type,
                        std::initializer_list<common::FindingKind> kinds, const char* ok_reason,
                        const char* ok_message) {
  NodeCondition c{type, true, ok_reason, ok_message};
  std::string messages;
  for (const common::Finding& f : findings) {
    if (f.severity != common::Severity::kCritical ||
        std::ranges::none_of(kinds, [&f](common::FindingKind k) { return f.Is(k); })) {
      continue;
    }
    if (c.ok) c.reason = CamelCase(f.kind);
    c.ok = false;
    absl::StrAppend(&messages, messages.empty() ? "" : "; ", f.kind, " ", f.subject, ": ",
                    f.message);
  }
  if (!c.ok) c.message = messages;
  return c;
}

}  // namespace

std::string CamelCase(std::string_view kind) {
  std::string out;
  bool upper = true;
  for (char ch : kind) {
    if (ch == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  return out;
}

Observation Observe(const state::NodeState& state, const std::vector<common::Finding>& findings) {
  Observation out;
  for (const logs::ContainerVerdict& v : *state.pods) {
    // An Event needs the pod's uid (kubectl describe selects on it): container logs have it.
    if (v.gone || v.nccl_lines == 0 || v.source.uid.empty()) continue;
    const std::string subject = v.source.PodKey() + "/" + v.source.container;
    for (auto [on, kind] : {std::pair{v.nccl.tcp_fallback && !v.nccl.tcp_deliberate,
                                      common::FindingKind::kTcpFallback},
                            {v.nccl.loopback_misuse, common::FindingKind::kLoopbackMisuse},
                            {v.nccl.net_plugin_missing, common::FindingKind::kNetPluginMissing}}) {
      if (!on) continue;
      out.pods.push_back({v.source.namespace_name, v.source.pod, v.source.uid, v.source.container,
                          kind, FindingText(findings, subject, kind)});
    }
  }
  // Node conditions: only those this node can judge (EFA present or expected; a mesh running).
  const NodeCondition efa =
      Condition(findings, kube::kEfaHealthy,
                {common::FindingKind::kEfaAdminQueueStuck, common::FindingKind::kEfaDeviceGone,
                 common::FindingKind::kEfaDevicesMissing},
                "EfaDevicesHealthy", "efawatch sees no EFA device fault");
  if (state.efa_devices > 0 || !efa.ok) out.conditions.push_back(efa);
  if (state.mesh_running) {
    out.conditions.push_back(Condition(findings, kube::kFabricReachable,
                                       {common::FindingKind::kMeshSelfSuspect}, "MeshPeersAnswer",
                                       "this node's fabric ping mesh peers answer"));
  }
  if (auto ready = FabricReadyOf(state)) out.conditions.push_back(*std::move(ready));
  return out;
}

}  // namespace efawatch::signals
