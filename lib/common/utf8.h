// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

// Text hygiene for strings that come from outside (pod logs, peers, requests): JSON, Prometheus
// label values and proto3 `string` fields all require UTF-8, and each of their writers rejects
// (or throws on) anything else. Thread-safe: pure functions.
namespace efawatch::common {

/// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
bool IsValidUtf8(std::string_view s);

/// `s` with every byte that does not start a well-formed sequence replaced by U+FFFD.
std::string ToValidUtf8(std::string_view s);

/// Makes `*s` valid UTF-8 in place; returns true when it had to change it. Valid input (the
/// common case) costs one scan and no allocation.
bool MakeValidUtf8(std::string* s);

/// The longest prefix of `s` of at most `max_bytes` bytes that does not end inside a multi-byte
/// character, so that cutting valid text leaves valid text.
std::string_view Utf8Prefix(std::string_view s, size_t max_bytes);

}  // namespace efawatch::common
