// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

// Reading the checkpoint's JSON without trusting it: a checkpoint is input like any other (a
// disk fills, an older agent wrote it, someone edits it), and nlohmann's accessors throw on a
// type mismatch. Pure functions; never throw.
namespace efawatch::logs {

/// `in[name]` when `in` is an object holding a string (an unsigned integer) there, else ""
/// (0).
std::string JsonString(const nlohmann::json& in, const char* name);
uint64_t JsonUint(const nlohmann::json& in, const char* name);

/// The JSON type a checkpoint field must have when present.
enum class JsonKind { kString, kUnsigned, kInteger, kBool, kArray, kObject };
struct JsonField {
  const char* name;
  JsonKind kind;
};

/// True when `in` is an object and each of `fields` present in it has the kind given. Absent
/// fields read as their defaults; a field of another type means the file is not a checkpoint
/// this agent wrote (or it was damaged), and the loader sets it aside instead of guessing.
bool HasShape(const nlohmann::json& in, std::initializer_list<JsonField> fields);
/// True when `in` is an array whose every element HasShape(fields).
bool AllHaveShape(const nlohmann::json& in, std::initializer_list<JsonField> fields);

}  // namespace efawatch::logs
