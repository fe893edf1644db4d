#include "daemon/logs/checkpoint_codec.h"

#include <string>
#include <type_traits>

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

nlohmann::json FindingToJson(const common::Finding& f) {
  return {{"kind", f.kind},
          {"severity", static_cast<int>(f.severity)},
          {"subject", f.subject},
          {"message", f.message},
          {"file", f.evidence.source},
          {"line", f.evidence.line},
          {"text", f.evidence.text}};
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
  return f;
}

}  // namespace efawatch::logs
