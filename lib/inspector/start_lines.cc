// SPDX-License-Identifier: Apache-2.0
#include "lib/inspector/start_lines.h"

#include "lib/common/number.h"

namespace efawatch::inspector {
namespace {

constexpr std::string_view kVersion = "NCCL Inspector Plugin - Version: ";
constexpr std::string_view kSetting = "NCCL_INSPECTOR_";
constexpr std::string_view kSettingsHeader = "NCCL Inspector Environment Variables:";
constexpr std::string_view kNotSet = "(not set), default=";
constexpr size_t kMaxSettings = 64;  // the plugin prints 15; a hostile log gets no more room

std::string_view Trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  // The envelope may close after the text: a docker json line's `\n","stream":...`.
  if (const size_t esc = v.find("\\n"); esc != std::string_view::npos) v = v.substr(0, esc);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r' || v.back() == '\n' ||
                        v.back() == '"' || v.back() == '\t')) {
    v.remove_suffix(1);
  }
  return v;
}

std::string Setting(const InspectorStart& s, const char* name) {
  const auto it = s.settings.find(name);
  return it == s.settings.end() ? std::string() : it->second;
}

}  // namespace

bool InspectorStart::Enabled() const { return Setting(*this, "NCCL_INSPECTOR_ENABLE") == "1"; }

bool InspectorStart::Prometheus() const {
  return Setting(*this, "NCCL_INSPECTOR_PROM_DUMP") == "1";
}

int64_t InspectorStart::IntervalUs() const {
  return common::ParseInt(Setting(*this, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS"), -1,
                          int64_t{1} << 40)
      .value_or(-1);
}

int64_t InspectorStart::EffectiveIntervalUs() const {
  const int64_t us = IntervalUs();
  return Prometheus() && us >= 0 && us < kPromMinIntervalUs ? kPromMinIntervalUs : us;
}

std::string InspectorStart::DumpDir() const {
  const auto it = defaulted.find("NCCL_INSPECTOR_DUMP_DIR");
  if (it != defaulted.end() && it->second) return {};
  return Setting(*this, "NCCL_INSPECTOR_DUMP_DIR");
}

std::string_view InspectorStart::ModeName() const {
  return Prometheus() ? "Prometheus textfiles" : "JSON Lines";
}

bool FeedStartLine(std::string_view line, InspectorStart* s) {
  if (const size_t v = line.find(kVersion); v != std::string_view::npos) {
    s->loaded = true;
    s->version = std::string(Trim(line.substr(v + kVersion.size())).substr(0, 64));
    return true;
  }
  if (line.find(kSettingsHeader) != std::string_view::npos) return true;
  // "  NCCL_INSPECTOR_X = value": the spaces around '=' tell it from an environment echo
  // ("NCCL_INSPECTOR_X=value", a launcher's or a shell's), which says nothing about the plugin.
  const size_t at = line.find(kSetting);
  if (at == std::string_view::npos) return false;
  const size_t eq = line.find(" = ", at);
  if (eq == std::string_view::npos) return false;
  const std::string_view name = line.substr(at, eq - at);
  for (const char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  std::string_view value = Trim(line.substr(eq + 3));
  bool defaulted = false;
  if (value.starts_with(kNotSet)) {
    value.remove_prefix(kNotSet.size());
    defaulted = true;
  }
  if (s->settings.size() >= kMaxSettings && !s->settings.contains(std::string(name))) return true;
  s->settings[std::string(name)] = std::string(value.substr(0, 256));
  s->defaulted[std::string(name)] = defaulted;
  return true;
}

}  // namespace efawatch::inspector
