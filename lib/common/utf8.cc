// SPDX-License-Identifier: Apache-2.0
#include "lib/common/utf8.h"

#include <cstdint>
#include <cstring>

namespace efawatch::common {
namespace {

// The length of the well-formed sequence at s[i], or 0 when the byte there starts none
// (RFC 3629, section 4).
size_t SequenceAt(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  const size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return 0;
  uint32_t cp = c & (0x7Fu >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return len;
}

// How many bytes at the start of `s` are ASCII. The high bits of 32 bytes are or-ed together
// and tested once (the compiler makes that a vector loop): nearly every line the analyzer
// parses is ASCII throughout, and a test per 8-byte word was 9 % of the instructions of
// `efawatch analyze` on an all-NCCL log (callgrind, bench/analyze.sh's log).
size_t AsciiPrefix(std::string_view s) {
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  const char* p = s.data();
  const size_t n = s.size();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, sizeof(w));
    if (((w[0] | w[1] | w[2] | w[3]) & kHigh) != 0) break;
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, sizeof(w));
    if ((w & kHigh) != 0) break;
  }
  while (i < n && static_cast<unsigned char>(p[i]) < 0x80) ++i;
  return i;
}

// The index of the first byte that starts no well-formed sequence, or s.size().
size_t FirstInvalid(std::string_view s) {
  // ASCII runs, which are nearly all log text, skip the sequence decoder: the analyzer checks
  // every line it parses.
  size_t i = AsciiPrefix(s);
  while (i < s.size()) {
    const size_t len = SequenceAt(s, i);
    if (len == 0) return i;
    i += len;
    i += AsciiPrefix(s.substr(i));
  }
  return s.size();
}

}  // namespace

bool IsValidUtf8(std::string_view s) { return FirstInvalid(s) == s.size(); }

std::string ToValidUtf8(std::string_view s) {
  size_t i = FirstInvalid(s);
  std::string out(s.substr(0, i));
  if (i == s.size()) return out;
  out.reserve(s.size() + 8);
  while (i < s.size()) {
    const size_t len = SequenceAt(s, i);
    if (len == 0) {
      out.append("\xEF\xBF\xBD");
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

bool MakeValidUtf8(std::string* s) {
  if (FirstInvalid(*s) == s->size()) return false;
  *s = ToValidUtf8(*s);
  return true;
}

std::string_view Utf8Prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t end = max_bytes;
  // Step back over continuation bytes to the start of the character that the cut would split;
  // a well-formed character is at most 4 bytes, so at most 3 steps.
  for (int k = 0; k < 3 && end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80; ++k) {
    --end;
  }
  return s.substr(0, end);
}

}  // namespace efawatch::common
