// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for ParseRequestHead (daemon/export/request_head.h), the first code a client's
// bytes reach on the plain-HTTP port. Besides ASan/UBSan it checks what the transport relies on:
// a complete head lies within the input and the bound, ends where its blank line ends (no shorter
// prefix is complete), parses alike when cut from the rest, and names a path; an incomplete one
// is within the bound; a refusal carries one of the statuses the transport answers with.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/export/request_head.h"

using efawatch::exporter::HeadParse;
using efawatch::exporter::ParseRequestHead;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The first byte picks the bound, so that both sides of it are reached with small inputs.
  if (size == 0) return 0;
  const size_t max = 16 + data[0] * 16;
  // A copy the exact size of the input: the parser's reads must stay inside it (ASan).
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const HeadParse p = ParseRequestHead(input, max);
  switch (p.outcome) {
    case HeadParse::Outcome::kIncomplete:
      if (input.size() > max) __builtin_trap();
      break;
    case HeadParse::Outcome::kBad:
      if (p.status != 400 && p.status != 431 && p.status != 505) __builtin_trap();
      if (p.why.empty()) __builtin_trap();
      break;
    case HeadParse::Outcome::kComplete: {
      const auto& h = p.head;
      if (h.size == 0 || h.size > input.size() || h.size > max) __builtin_trap();
      if (h.path.empty() || h.path[0] != '/' || h.method.empty()) __builtin_trap();
      if (h.path.find_first_of(" \r\n?") != std::string::npos) __builtin_trap();
      const std::string head = input.substr(0, h.size);
      const HeadParse again = ParseRequestHead(head, max);
      if (again.outcome != HeadParse::Outcome::kComplete || again.head.size != h.size ||
          again.head.path != h.path || again.head.content_length != h.content_length ||
          again.head.keep_alive != h.keep_alive) {
        __builtin_trap();
      }
      if (ParseRequestHead(head.substr(0, h.size - 1), max).outcome ==
          HeadParse::Outcome::kComplete) {
        __builtin_trap();
      }
      break;
    }
  }
  return 0;
}
