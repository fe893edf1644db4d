// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/json_shape.h"

namespace efawatch::logs {
namespace {

bool IsKind(const nlohmann::json& v, JsonKind kind) {
  switch (kind) {
    case JsonKind::kString:
      return v.is_string();
    case JsonKind::kUnsigned:
      return v.is_number_unsigned();
    case JsonKind::kInteger:
      return v.is_number_integer();
    case JsonKind::kBool:
      return v.is_boolean();
    case JsonKind::kArray:
      return v.is_array();
    case JsonKind::kObject:
      return v.is_object();
  }
  return false;
}

}  // namespace

std::string JsonString(const nlohmann::json& in, const char* name) {
  if (!in.is_object()) return {};
  auto it = in.find(name);
  return it != in.end() && it->is_string() ? it->get<std::string>() : std::string();
}

uint64_t JsonUint(const nlohmann::json& in, const char* name) {
  if (!in.is_object()) return 0;
  auto it = in.find(name);
  return it != in.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

bool HasShape(const nlohmann::json& in, std::initializer_list<JsonField> fields) {
  if (!in.is_object()) return false;
  for (const JsonField& f : fields) {
    auto it = in.find(f.name);
    if (it != in.end() && !IsKind(*it, f.kind)) return false;
  }
  return true;
}

bool AllHaveShape(const nlohmann::json& in, std::initializer_list<JsonField> fields) {
  if (!in.is_array()) return false;
  for (const nlohmann::json& e : in) {
    if (!HasShape(e, fields)) return false;
  }
  return true;
}

}  // namespace efawatch::logs
