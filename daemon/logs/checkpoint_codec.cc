// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/checkpoint_codec.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "daemon/logs/json_shape.h"

namespace efawatch::logs {
namespace {

// `in[name]` when it holds a T, else `fallback`: nlohmann's value() throws on a type mismatch,
// and a checkpoint is input like any other. Enumerations are stored by name.
template <typename T>
T Get(const nlohmann::json& in, const char* name, T fallback = T{}) {
  if (!in.is_object()) return fallback;
  auto it = in.find(name);
  if (it == in.end()) return fallback;
  if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : fallback;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else if constexpr (nccl::NamedEnum<T>) {
    return it->is_string() ? nccl::FromName<T>(it->template get<std::string>()) : fallback;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    T out;
    if (!it->is_array()) return fallback;
    for (const auto& e : *it) {
      if (e.is_string()) out.push_back(e.template get<std::string>());
    }
    return out;
  } else if constexpr (std::is_unsigned_v<T>) {
    return it->is_number_unsigned() ? it->template get<T>() : fallback;
  } else {
    return it->is_number_integer() ? it->template get<T>() : fallback;
  }
}

}  // namespace

void VerdictToJson(const nccl::Verdict& v, nlohmann::json& out) {
  nccl::ForEachField(v, [&](const char* name, const auto& field) {
    if constexpr (nccl::NamedEnum<std::decay_t<decltype(field)>>) {
      out[name] = std::string(nccl::NameOf(field));
    } else {
      out[name] = field;
    }
  });
}

nccl::Verdict VerdictFromJson(const nlohmann::json& in) {
  nccl::Verdict v;
  nccl::ForEachField(v, [&](const char* name, auto& field) {
    field = Get<std::decay_t<decltype(field)>>(in, name, field);
  });
  return v;
}

nlohmann::json CommunicatorsToJson(const std::vector<CommunicatorSeries>& comms) {
  nlohmann::json out = nlohmann::json::array();
  for (const CommunicatorSeries& c : comms) {
    out.push_back({{"id", c.id},
                   {"nranks", c.nranks},
                   {"nnodes", c.nnodes},
                   {"transport", c.transport},
                   {"provider", c.provider}});
  }
  return out;
}

std::vector<CommunicatorSeries> CommunicatorsFromJson(const nlohmann::json& in) {
  std::vector<CommunicatorSeries> out;
  if (!in.is_array()) return out;
  for (const nlohmann::json& e : in) {
    CommunicatorSeries c;
    c.id = Get<std::string>(e, "id");
    if (c.id.empty()) continue;
    c.nranks = Get<int>(e, "nranks");
    c.nnodes = Get<int>(e, "nnodes");
    c.transport = Get<std::string>(e, "transport");
    c.provider = Get<std::string>(e, "provider");
    out.push_back(std::move(c));
  }
  return out;
}

// The container's stack (absent in checkpoints written before it was kept: an empty stack).
nlohmann::json StackToJson(const nccl::Stack& s) {
  nlohmann::json settings = nlohmann::json::array();
  for (const auto& [name, value] : s.settings) settings.push_back({name, value});
  return {{"nccl_version", s.nccl_version},
          {"net_plugin", s.net_plugin},
          {"net_plugin_version", s.net_plugin_version},
          {"ofi_provider", s.ofi_provider},
          {"gdr", s.gdr},
          {"settings", settings}};
}

nccl::Stack StackFromJson(const nlohmann::json& in) {
  nccl::Stack s;
  if (!in.is_object()) return s;
  s.nccl_version = Get<std::string>(in, "nccl_version");
  s.net_plugin = Get<std::string>(in, "net_plugin");
  s.net_plugin_version = Get<std::string>(in, "net_plugin_version");
  s.ofi_provider = Get<std::string>(in, "ofi_provider");
  s.gdr = Get<std::string>(in, "gdr");
  const nlohmann::json settings = in.value("settings", nlohmann::json::array());
  if (!settings.is_array()) return s;
  for (const nlohmann::json& kv : settings) {
    if (s.settings.size() >= nccl::kMaxStackSettings) break;
    if (kv.is_array() && kv.size() == 2 && kv[0].is_string() && kv[1].is_string()) {
      s.settings.emplace_back(kv[0].get<std::string>(), kv[1].get<std::string>());
    }
  }
  std::sort(s.settings.begin(), s.settings.end());
  return s;
}

nlohmann::json FindingToJson(const common::Finding& f) {
  return {{"kind", f.kind},
          {"severity", static_cast<int>(f.severity)},
          {"subject", f.subject},
          {"message", f.message},
          {"file", f.evidence.source},
          {"line", f.evidence.line},
          {"text", f.evidence.text},
          {"namespace", f.namespace_name},
          {"pod", f.pod}};
}

common::Finding FindingFromJson(const nlohmann::json& in) {
  common::Finding f;
  f.kind = Get<std::string>(in, "kind");
  const int severity = Get<int>(in, "severity");
  f.severity = severity >= static_cast<int>(common::Severity::kInfo) &&
                       severity <= static_cast<int>(common::Severity::kCritical)
                   ? static_cast<common::Severity>(severity)
                   : common::Severity::kInfo;
  f.subject = Get<std::string>(in, "subject");
  f.message = Get<std::string>(in, "message");
  f.evidence.source = Get<std::string>(in, "file");
  f.evidence.line = Get<uint64_t>(in, "line");
  f.evidence.text = Get<std::string>(in, "text");
  f.namespace_name = Get<std::string>(in, "namespace");  // absent in older checkpoints: ""
  f.pod = Get<std::string>(in, "pod");
  return f;
}

nlohmann::json ContainerToJson(const SavedContainer& c) {
  const ContainerVerdict& x = c.verdict;
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : c.findings) findings.push_back(FindingToJson(f));
  nlohmann::json e = {{"key", c.key},
                      {"path", x.source.path.string()},
                      {"namespace", x.source.namespace_name},
                      {"pod", x.source.pod},
                      {"uid", x.source.uid},
                      {"container", x.source.container},
                      {"origin", OriginName(x.source.origin)},
                      {"run", x.source.run},
                      {"files", x.files},
                      {"lines", x.lines},
                      {"nccl_lines", x.nccl_lines},
                      {"malformed_lines", x.malformed_lines},
                      {"findings", findings},
                      {"communicator_series", CommunicatorsToJson(x.communicators)},
                      {"stack", StackToJson(x.stack)}};
  VerdictToJson(x.nccl, e);
  return e;
}

SavedContainer ContainerFromJson(const nlohmann::json& e) {
  SavedContainer c;
  c.key = Get<std::string>(e, "key");
  LogSource& s = c.verdict.source;
  s.path = Get<std::string>(e, "path");
  s.origin = OriginFromName(Get<std::string>(e, "origin"));
  s.run = Get<std::string>(e, "run");
  s.format = s.origin == Origin::kContainerLog ? Format::kCri : Format::kPlain;
  s.namespace_name = Get<std::string>(e, "namespace");
  s.pod = Get<std::string>(e, "pod");
  s.uid = Get<std::string>(e, "uid");
  s.container = Get<std::string>(e, "container");
  c.verdict.lines = Get<uint64_t>(e, "lines");
  c.verdict.nccl_lines = Get<uint64_t>(e, "nccl_lines");
  c.verdict.malformed_lines = Get<uint64_t>(e, "malformed_lines");
  c.verdict.files = Get<uint64_t>(e, "files");
  c.verdict.nccl = VerdictFromJson(e);
  c.verdict.communicators = CommunicatorsFromJson(e.value("communicator_series", nlohmann::json()));
  c.verdict.stack = StackFromJson(e.value("stack", nlohmann::json()));  // absent: ""
  for (const auto& f : e.value("findings", nlohmann::json::array())) {
    c.findings.push_back(FindingFromJson(f));
  }
  return c;
}

// The shape ContainerToJson writes, checked before any of it is read.
bool ContainersHaveShape(const nlohmann::json& j) {
  using K = JsonKind;
  if (!AllHaveShape(j, {{"key", K::kString},
                        {"path", K::kString},
                        {"namespace", K::kString},
                        {"pod", K::kString},
                        {"uid", K::kString},
                        {"container", K::kString},
                        {"origin", K::kString},
                        {"run", K::kString},
                        {"files", K::kUnsigned},
                        {"lines", K::kUnsigned},
                        {"nccl_lines", K::kUnsigned},
                        {"malformed_lines", K::kUnsigned},
                        {"findings", K::kArray},
                        {"communicator_series", K::kArray}})) {
    return false;
  }
  for (const auto& e : j) {
    if (e.contains("findings") && !AllHaveShape(e["findings"], {{"kind", K::kString},
                                                                {"severity", K::kInteger},
                                                                {"subject", K::kString},
                                                                {"message", K::kString},
                                                                {"file", K::kString},
                                                                {"line", K::kUnsigned},
                                                                {"text", K::kString}})) {
      return false;
    }
  }
  return true;
}

}  // namespace efawatch::logs
