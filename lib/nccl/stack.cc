// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/stack.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace efawatch::nccl {
namespace {

constexpr std::string_view kOfiPlugin = "aws-ofi-nccl";

// Settings that differ between the ranks of one healthy job, or only change what NCCL prints:
// in the fingerprint they would make every pod look different.
bool PerRankOrDebug(std::string_view name) {
  return name == "NCCL_HOSTID" || name.starts_with("NCCL_DEBUG") || name == "NCCL_COMM_ID" ||
         name == "NCCL_RAS_ADDR";
}

bool Labelled(std::string_view name) {
  return std::find(kLabelledSettings.begin(), kLabelledSettings.end(), name) !=
         kLabelledSettings.end();
}

}  // namespace

bool Stack::Known() const {
  return !nccl_version.empty() || !net_plugin.empty() || !settings.empty();
}

Stack StackOf(const Report& report) {
  Stack s;
  const Verdict& v = report.summary.verdict;
  s.nccl_version = v.nccl_version;
  // The verdict writes "none" or "unknown" for a provider no line named: both are "" here, so
  // the rules compare only providers a log showed.
  if (v.ofi_provider != "none" && v.ofi_provider != "unknown") s.ofi_provider = v.ofi_provider;
  s.gdr = std::string(NameOf(v.gdr));
  for (const Process& p : report.processes) {
    // NCCL names a plugin it loaded by the plugin's own name ("AWS Libfabric", "Libfabric",
    // "IBext"); aws-ofi-nccl prints its package and version ("Initializing aws-ofi-nccl
    // 1.9.1-aws", <= 1.7.0 "Using ..."). One name for aws-ofi-nccl, whichever line a version
    // printed, so two pods of one job compare.
    const bool ofi = p.network_family == "OFI" || !p.net_plugin_version.empty() ||
                     std::string_view(p.net_plugin).starts_with(kOfiPlugin);
    if (s.net_plugin.empty() || (ofi && s.net_plugin != kOfiPlugin)) {
      if (ofi) {
        s.net_plugin = std::string(kOfiPlugin);
      } else if (!p.net_plugin.empty()) {
        s.net_plugin = p.net_plugin;
      }
    }
    if (s.net_plugin_version.empty()) s.net_plugin_version = p.net_plugin_version;
    for (const auto& setting : p.settings) {
      const std::string& name = setting.first;  // captured below: not a structured binding
      if (s.settings.size() >= kMaxStackSettings) break;
      const bool have = std::any_of(s.settings.begin(), s.settings.end(),
                                    [&](const auto& kv) { return kv.first == name; });
      if (!have) s.settings.push_back(setting);
    }
  }
  std::sort(s.settings.begin(), s.settings.end());
  return s;
}

void FillFromEarlier(Stack& s, const Stack& earlier) {
  for (auto [mine, theirs] : {std::pair{&s.nccl_version, &earlier.nccl_version},
                              std::pair{&s.net_plugin, &earlier.net_plugin},
                              std::pair{&s.net_plugin_version, &earlier.net_plugin_version},
                              std::pair{&s.ofi_provider, &earlier.ofi_provider}}) {
    if (mine->empty()) *mine = *theirs;
  }
  if (s.gdr.empty() || s.gdr == NameOf(Gdr::kUnknown)) {
    if (!earlier.gdr.empty()) s.gdr = earlier.gdr;
  }
  for (const auto& setting : earlier.settings) {
    const std::string& name = setting.first;  // captured below: not a structured binding
    if (s.settings.size() >= kMaxStackSettings) break;
    if (SettingValue(s, name).empty() &&
        std::none_of(s.settings.begin(), s.settings.end(),
                     [&](const auto& kv) { return kv.first == name; })) {
      s.settings.push_back(setting);
    }
  }
  std::sort(s.settings.begin(), s.settings.end());
}

std::string_view SettingValue(const Stack& stack, std::string_view name) {
  for (const auto& [n, v] : stack.settings) {
    if (n == name) return v;
  }
  return {};
}

std::string SettingsFingerprint(const Stack& stack) {
  // FNV-1a, 64 bits (Fowler/Noll/Vo; offset basis and prime from the published parameters),
  // folded to 32: a label, not a security measure. Settings are sorted by StackOf.
  uint64_t h = 14695981039346656037ull;
  bool any = false;
  const auto mix = [&h](std::string_view text) {
    for (const char c : text) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
  };
  for (const auto& [name, value] : stack.settings) {
    if (Labelled(name) || PerRankOrDebug(name)) continue;
    any = true;
    mix(name);
    mix("=");
    mix(value);
    mix("\n");
  }
  if (!any) return {};
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<uint32_t>(h ^ (h >> 32)));
  return buf;
}

}  // namespace efawatch::nccl
