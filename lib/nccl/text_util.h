// SPDX-License-Identifier: Apache-2.0
#pragma once

// Internal to efawatch_nccl: small string_view helpers shared by the analyzer's .cc files.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The few helpers every line goes through are inlined whatever the caller's size: left to the
// compiler, splitting the line handlers into small functions (for readability) turned them into
// calls, and the analyzer ran 9% more instructions (callgrind on bench/analyze.sh's log).
#define EFAWATCH_ALWAYS_INLINE [[gnu::always_inline]] inline

namespace efawatch::nccl::internal {

// The first of bytes `a` and `b` in s[i, n), or n; 16 bytes at a time. For the runs of plain
// text between a record's quotes and escapes, which a byte loop crossed at ~3 instructions a
// byte (a docker json-file record's text, bench/analyze.sh's docker-json shape).
inline size_t FindEitherByte(const char* s, size_t n, size_t i, char a, char b) {
#if defined(__SSE2__)
  const __m128i va = _mm_set1_epi8(a);
  const __m128i vb = _mm_set1_epi8(b);
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)));
    if (m != 0) return i + static_cast<size_t>(std::countr_zero(static_cast<unsigned>(m)));
  }
#endif
  while (i < n && s[i] != a && s[i] != b) ++i;
  return i;
}

// Byte loops instead of memcmp: the operands are a few bytes long and a libc call per
// comparison showed up as the top item of the profile.
inline bool SameBytes(const char* a, const char* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// Equality. Up to 32 bytes (host names, process keys, pointers, keywords) by overlapping word
// loads, no call and no loop; longer operands by memcmp.
EFAWATCH_ALWAYS_INLINE bool Eq(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  if (n > 32) return memcmp(x, y, n) == 0;
  if (n > 16) {
    uint64_t w[8];
    memcpy(&w[0], x, 16);
    memcpy(&w[2], x + n - 16, 16);
    memcpy(&w[4], y, 16);
    memcpy(&w[6], y + n - 16, 16);
    return ((w[0] ^ w[4]) | (w[1] ^ w[5]) | (w[2] ^ w[6]) | (w[3] ^ w[7])) == 0;
  }
  if (n >= 8) {
    uint64_t x0, y0, x1, y1;
    memcpy(&x0, x, 8);
    memcpy(&y0, y, 8);
    memcpy(&x1, x + n - 8, 8);
    memcpy(&y1, y + n - 8, 8);
    return ((x0 ^ y0) | (x1 ^ y1)) == 0;
  }
  if (n >= 4) {
    uint32_t x0, y0, x1, y1;
    memcpy(&x0, x, 4);
    memcpy(&y0, y, 4);
    memcpy(&x1, x + n - 4, 4);
    memcpy(&y1, y + n - 4, 4);
    return ((x0 ^ y0) | (x1 ^ y1)) == 0;
  }
  return SameBytes(x, y, n);
}

// A cheap first test before comparing short keys such as communicator pointers. Eight bytes per
// step: a byte-wise hash (FNV-1a) chained a multiply per byte, whose latency made it a tenth of
// the communicator line handler. The multiplier is the 64-bit finalizer constant of
// MurmurHash3; any odd constant with well-mixed bits would do, the hash never leaves the process.
inline uint64_t HashBytes(std::string_view s) {
  constexpr uint64_t kMul = 0xff51afd7ed558ccdull;
  uint64_t h = s.size() * kMul;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
  }
  if (i == s.size()) return h;
  uint64_t tail = 0;
  if (s.size() >= 8) {
    memcpy(&tail, s.data() + s.size() - 8, 8);  // the last eight bytes, overlapping
  } else {
    for (size_t k = 0; k < s.size(); ++k) {
      tail |= uint64_t{static_cast<unsigned char>(s[k])} << (8 * k);
    }
  }
  h = (h ^ tail) * kMul;
  return h ^ (h >> 29);
}

inline bool StartsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && SameBytes(s.data(), p.data(), p.size());
}

// Overloads for string literals: with the length a constant, the compiler turns memcmp into a
// few integer compares (no call, no byte loop). Most keyword tests in the handlers are these.
template <size_t N>
inline bool StartsWith(std::string_view s, const char (&p)[N]) {
  return s.size() >= N - 1 && memcmp(s.data(), p, N - 1) == 0;
}

template <size_t N>
inline bool Eq(std::string_view a, const char (&b)[N]) {
  return a.size() == N - 1 && memcmp(a.data(), b, N - 1) == 0;
}

// Substring search: memchr (SIMD in glibc) on the needle's first non-space byte, then a compare.
// Several times faster than glibc memmem for the short needles used here.
// `anchor` picks the needle byte handed to memchr (default: the first non-space one); a rare
// byte means fewer false starts.
EFAWATCH_ALWAYS_INLINE size_t FindIn(std::string_view hay, std::string_view needle, size_t from = 0,
                                     size_t anchor = std::string_view::npos) {
  if (needle.empty() || from >= hay.size() || hay.size() - from < needle.size()) {
    return std::string_view::npos;
  }
  size_t k = 0;
  if (anchor < needle.size()) {
    k = anchor;
  } else {
    while (k + 1 < needle.size() && needle[k] == ' ') ++k;
  }
  const char* base = hay.data();
  const char* end = base + hay.size() - (needle.size() - 1 - k);  // last position for needle[k]
  const char* p = base + from + k;
  while (p < end) {
    p = static_cast<const char*>(memchr(p, needle[k], static_cast<size_t>(end - p)));
    if (p == nullptr) return std::string_view::npos;
    const char* start = p - k;
    if (SameBytes(start, needle.data(), needle.size())) {
      return static_cast<size_t>(start - base);
    }
    ++p;
  }
  return std::string_view::npos;
}

EFAWATCH_ALWAYS_INLINE bool Contains(std::string_view hay, std::string_view needle) {
  return FindIn(hay, needle) != std::string_view::npos;
}

// The parser reads the format's words, never counted offsets: "the text after `marker`"
// (After), "the text before and after it" (Split), "`s` without `prefix`" (Consume).
// After: sets `*rest` to the text after the first `marker` in `s` and returns true; false (and
// `*rest` untouched) when `s` has no `marker`.
inline bool After(std::string_view s, std::string_view marker, std::string_view* rest) {
  const size_t at = FindIn(s, marker);
  if (at == std::string_view::npos) return false;
  *rest = s.substr(at + marker.size());
  return true;
}

// The text after the first `marker`, or "" when there is none.
inline std::string_view After(std::string_view s, std::string_view marker) {
  std::string_view rest;
  return After(s, marker, &rest) ? rest : std::string_view();
}

// Splits `s` at its first `marker` into what is before and after it; false when there is none.
inline bool Split(std::string_view s, std::string_view marker, std::string_view* before,
                  std::string_view* after) {
  const size_t at = FindIn(s, marker);
  if (at == std::string_view::npos) return false;
  *before = s.substr(0, at);
  *after = s.substr(at + marker.size());
  return true;
}

// Removes `prefix` from the front of `*s` when it is there.
inline bool Consume(std::string_view* s, std::string_view prefix) {
  if (!StartsWith(*s, prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

inline bool IsDigitChar(char c) { return c >= '0' && c <= '9'; }

// Leading decimal integer of `s` (after spaces); -1 when there is none. Saturates at 1e9.
EFAWATCH_ALWAYS_INLINE int ParseInt(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  if (i >= s.size() || !IsDigitChar(s[i])) return -1;
  int64_t v = 0;
  for (; i < s.size() && IsDigitChar(s[i]); ++i) {
    v = v * 10 + (s[i] - '0');
    if (v > 1'000'000'000) return 1'000'000'000;
  }
  return static_cast<int>(v);
}

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Index of the first ' ' or '\t' at or after `i`, or s.size(). Eight bytes per step (the
// "has zero byte" test of https://graphics.stanford.edu/~seander/bithacks.html#ZeroInWord):
// tokens are short, so this mostly costs one step per token instead of a loop per byte. The
// test can flag bytes after the first match, never before it, so the lowest flag is exact on
// a little-endian machine.
inline size_t FindBlank(std::string_view s, size_t i) {
  const size_t n = s.size();
  if constexpr (std::endian::native == std::endian::little) {
    constexpr uint64_t kOnes = 0x0101010101010101ull;
    constexpr uint64_t kHigh = 0x8080808080808080ull;
    while (i + 8 <= n) {
      uint64_t w;
      memcpy(&w, s.data() + i, 8);
      const uint64_t sp = w ^ (kOnes * ' ');
      const uint64_t tab = w ^ (kOnes * '\t');
      const uint64_t hit = (((sp - kOnes) & ~sp) | ((tab - kOnes) & ~tab)) & kHigh;
      if (hit != 0) return i + static_cast<size_t>(__builtin_ctzll(hit) >> 3);
      i += 8;
    }
  }
  while (i < n && s[i] != ' ' && s[i] != '\t') ++i;
  return i;
}

// The next whitespace-separated token at or after `*pos`; advances `*pos`.
inline std::string_view NextToken(std::string_view s, size_t* pos) {
  size_t i = *pos;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  size_t b = i;
  i = FindBlank(s, i);
  *pos = i;
  return s.substr(b, i - b);
}

// One "iface:addr<port>" item of an interface list, "[0]" index removed.
struct IfItem {
  std::string_view iface;
  std::string_view addr;
};

// Fixed capacity: NCCL lists at most MAX_IFS = 16 interfaces (src/include/socket.h).
struct IfList {
  IfItem items[16];
  size_t size = 0;
  bool empty() const { return size == 0; }
  const IfItem* begin() const { return items; }
  const IfItem* end() const { return items + size; }
  const IfItem& operator[](size_t i) const { return items[i]; }
  void push_back(IfItem item) { items[size++] = item; }
};

// Parses the interface lists NCCL prints after "Bootstrap : Using", "NET/Socket : Using",
// "NET : Using interface": " [0]eth0:10.0.0.2<0> [1]lo:127.0.0.1<0>" or " eth0:10.0.0.2<0>".
inline IfList ParseIfList(std::string_view s, size_t max_items = 16) {
  IfList out;
  if (max_items > 16) max_items = 16;
  size_t pos = 0;
  while (out.size < max_items) {
    std::string_view tok = NextToken(s, &pos);
    if (tok.empty()) break;
    if (tok[0] == '[') {
      size_t close = tok.find(']');
      if (close == std::string_view::npos) continue;
      tok.remove_prefix(close + 1);
    }
    std::string_view iface, addr;
    if (!Split(tok, ":", &iface, &addr) || iface.empty()) continue;
    addr = addr.substr(0, addr.find('<'));
    out.push_back({iface, addr});
  }
  return out;
}

// 127.0.0.0/8, ::1 and the lo interface (and its aliases "lo:1").
inline bool IsLoopback(std::string_view iface, std::string_view addr) {
  if (iface == "lo" || StartsWith(iface, "lo:")) return true;
  if (StartsWith(addr, "127.")) return true;
  if (addr == "::1" || StartsWith(addr, "::1%")) return true;
  return false;
}

// True when an NCCL_SOCKET_IFNAME value makes NCCL pick the loopback interface: a positive
// (non-"^") list holding an entry that matches "lo" ("lo", "=lo", "lo0").
inline bool IfnameSelectsLoopback(std::string_view value) {
  value = Trim(value);
  while (!value.empty() && (value.front() == '"' || value.front() == '\'')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '"' || value.back() == '\'' || value.back() == '.')) {
    value.remove_suffix(1);
  }
  if (value.empty() || value.front() == '^') return false;
  if (value.front() == '=') value.remove_prefix(1);
  size_t b = 0;
  while (b <= value.size()) {
    size_t e = value.find(',', b);
    if (e == std::string_view::npos) e = value.size();
    std::string_view item = Trim(value.substr(b, e - b));
    if (item == "lo" ||
        (StartsWith(item, "lo") && item.size() <= 4 && item.size() > 2 && IsDigitChar(item[2]))) {
      return true;
    }
    b = e + 1;
  }
  return false;
}

// NCCL net name -> family: "Socket", "IB" (IB, IBext, IBext_v8, RDMA plugins), "OFI"
// (aws-ofi-nccl: "AWS Libfabric", "Libfabric", "OFI"), or "other" (GPUDirectTCPX, FasTrak ...).
inline std::string NetFamily(std::string_view net) {
  if (net.empty()) return "";
  if (net == "Socket") return "Socket";
  if (StartsWith(net, "IB") || Contains(net, "RDMA")) return "IB";
  if (Contains(net, "Libfabric") || net == "OFI" || StartsWith(net, "AWS")) return "OFI";
  return "other";
}

// libfabric providers that move data over TCP/UDP instead of RDMA.
inline bool IsTcpProvider(std::string_view provider) {
  return StartsWith(provider, "tcp") || StartsWith(provider, "sockets") ||
         StartsWith(provider, "udp") || provider == "shm";
}

}  // namespace efawatch::nccl::internal
