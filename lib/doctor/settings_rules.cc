// SPDX-License-Identifier: Apache-2.0
// The settings rows of `efawatch doctor`, moved here from checks.cc so the admission webhook
// reads the same table; their ids, statuses and wording are unchanged (doctor_test holds them).
#include "lib/doctor/settings_rules.h"

#include <cstdlib>
#include <sstream>

namespace efawatch::doctor {
namespace {

std::string Get(const SettingsEnv& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

Check Make(std::string_view id, Status s, std::string summary, std::string evidence,
           std::string fix = "") {
  return {.id = std::string(id),
          .status = s,
          .summary = std::move(summary),
          .evidence = std::move(evidence),
          .fix = s == Status::kPass || s == Status::kSkip ? "" : std::move(fix)};
}

Check SocketIfname(const SettingsEnv& env, const SettingsContext& /*context*/) {
  constexpr std::string_view kId = "settings.nccl_socket_ifname";
  const std::string v = Get(env, "NCCL_SOCKET_IFNAME");
  if (v.empty()) {
    return Make(kId, Status::kPass, "NCCL_SOCKET_IFNAME unset (NCCL skips lo and docker*)", "");
  }
  // "^lo,docker" excludes; "=lo" or "lo" selects (prefix match).
  const bool excludes = v.front() == '^';
  std::string list = v.substr(excludes || v.front() == '=' ? 1 : 0);
  bool selects_bad = false;
  std::istringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!excludes && (item.starts_with("lo") || item.starts_with("docker"))) selects_bad = true;
  }
  if (selects_bad) {
    return Make(kId, Status::kFail,
                "NCCL_SOCKET_IFNAME selects loopback or a docker bridge: a multi-node job cannot "
                "bootstrap",
                "NCCL_SOCKET_IFNAME=" + v,
                "set NCCL_SOCKET_IFNAME=^lo,docker (or the node's interface, e.g. eth0)");
  }
  return Make(kId, Status::kPass, "interface selection is routable", "NCCL_SOCKET_IFNAME=" + v);
}

Check ForcedTcp(const SettingsEnv& env, const SettingsContext& context) {
  constexpr std::string_view kId = "settings.nccl_net";
  std::string why;
  if (Get(env, "NCCL_IB_DISABLE") == "1") why = "NCCL_IB_DISABLE=1";
  if (Get(env, "NCCL_NET") == "Socket") {
    why += (why.empty() ? "" : ", ") + std::string("NCCL_NET=Socket");
  }
  if (why.empty()) return Make(kId, Status::kPass, "nothing forces NCCL onto TCP", "");
  return Make(kId, context.efa ? Status::kFail : Status::kWarn,
              "settings force NCCL onto TCP sockets", why,
              "unset NCCL_IB_DISABLE and NCCL_NET (aws-ofi-nccl registers as the net)");
}

Check FiProvider(const SettingsEnv& env, const SettingsContext& context) {
  constexpr std::string_view kId = "settings.fi_provider";
  if (env.count("FI_PROVIDER") == 0) return Make(kId, Status::kPass, "FI_PROVIDER unset", "");
  const std::string v = Get(env, "FI_PROVIDER");
  if (v == "efa") return Make(kId, Status::kPass, "FI_PROVIDER=efa", v);
  return Make(kId, context.efa ? Status::kFail : Status::kWarn,
              "FI_PROVIDER selects a provider other than efa: libfabric traffic goes over TCP",
              "FI_PROVIDER=" + v, "set FI_PROVIDER=efa (or unset it)");
}

Check NcclDebug(const SettingsEnv& env, const SettingsContext& /*context*/) {
  constexpr std::string_view kId = "settings.nccl_debug";
  const std::string v = Get(env, "NCCL_DEBUG");
  if (v == "INFO" || v == "TRACE") {
    return Make(kId, Status::kPass, "NCCL_DEBUG=" + v + ": the agent sees it", v);
  }
  return Make(kId, Status::kWarn,
              "NCCL_DEBUG is not INFO: the agent cannot see which transport the job uses",
              v.empty() ? "unset" : "NCCL_DEBUG=" + v, "set NCCL_DEBUG=INFO in the job");
}

Check Overrides(const SettingsEnv& env, const SettingsContext& /*context*/) {
  constexpr std::string_view kId = "settings.nccl_overrides";
  std::string set;
  for (const char* name : {"NCCL_PROTO", "NCCL_ALGO"}) {
    if (env.count(name) > 0) {
      set += (set.empty() ? "" : ", ") + std::string(name) + "=" + Get(env, name);
    }
  }
  if (set.empty()) return Make(kId, Status::kPass, "no overrides", "");
  return Make(kId, Status::kWarn, "NCCL's protocol or algorithm choice is overridden", set,
              "remove the override unless a measurement asked for it");
}

}  // namespace

const std::vector<SettingsRule>& SettingsRules() {
  static const std::vector<SettingsRule> rules = {
      {"settings.nccl_socket_ifname", true, {"NCCL_SOCKET_IFNAME"}, &SocketIfname},
      {"settings.nccl_net", true, {"NCCL_IB_DISABLE", "NCCL_NET"}, &ForcedTcp},
      {"settings.fi_provider", true, {"FI_PROVIDER"}, &FiProvider},
      {"settings.nccl_debug", true, {"NCCL_DEBUG"}, &NcclDebug},
      {"settings.nccl_overrides", false, {"NCCL_PROTO", "NCCL_ALGO"}, &Overrides},
  };
  return rules;
}

const SettingsRule& SettingsRuleById(std::string_view id) {
  for (const SettingsRule& r : SettingsRules()) {
    if (r.id == id) return r;
  }
  std::abort();
}

}  // namespace efawatch::doctor
