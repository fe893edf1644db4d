// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/block_scanner.h"

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>

#include "lib/nccl/text_util.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace efawatch::nccl {
namespace {

using internal::Hit;

using internal::FindIn;

constexpr size_t kNone = std::string_view::npos;

bool At(const char* s, size_t n, size_t pos, std::string_view needle) {
  return pos <= n && n - pos >= needle.size() && memcmp(s + pos, needle.data(), needle.size()) == 0;
}

// The byte of each needle the scan looks for: the rarest one in ordinary log text, or a pair
// (previous byte, this byte) where no single byte is rare enough. Verify() below tells whether
// the needle really is there. "NCCL" is found by its 'C' after an 'N', not by its 'N': every
// line of Python's logging ("... - INFO - ...") has an 'N', and each took the vector scan out of
// its loop (pylog, bench/analyze.sh).
constexpr std::array<bool, 256> kAnchor = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : {'C', ' ', 'I', '#', '\0', '\x1b', '{', 'P', ':', 'r', 't', 'a', 'j'}) {
    t[c] = true;
  }
  return t;
}();

// An escape sequence that cannot hide a needle: any escape sequence that starts its line, or a
// CSI ("ESC [ parameters final", what colour codes are) that ends it (or is followed by another
// escape sequence, judged in turn). CleanLine() removes it, and the text on either side stays as
// the raw line has it, so a needle of the cleaned line is one of the raw line: whatever form a
// sequence at a line's start has, what RemoveAnsi() deletes of it is a prefix of the line (an
// OSC runs to its BEL or the next ESC, which it takes along). A console colouring whole lines
// ("ESC[36m...ESC[0m") thus sends only its NCCL lines to the per-line path. `n` ends the block
// (or the line). Inlined into the scan: such a log has two per line (ansi, bench/analyze.sh).
EFAWATCH_ALWAYS_INLINE bool HarmlessEscape(const char* s, size_t n, size_t pos) {
  if (pos == 0 || s[pos - 1] == '\n') return true;
  if (pos + 8 <= n) {
    // A colour code fits in 8 bytes: its parameter bytes (top three bits 001) are found in one
    // word, not byte by byte (a console colouring lines ends each with one).
    uint64_t w = 0;
    memcpy(&w, s + pos, sizeof(w));
    if (((w >> 8) & 0xff) != '[') return false;
    const uint64_t not_param = (w ^ 0x2020202020202020ULL) & 0xE0E0E0E0E0E0E0E0ULL & ~0xFFFFULL;
    if (not_param != 0) {
      const auto j = static_cast<unsigned>(__builtin_ctzll(not_param)) / 8;
      const auto final_byte = static_cast<unsigned char>(w >> (8 * j));
      if (final_byte < 0x40 || final_byte > 0x7e) return false;
      const size_t after = pos + j + 1;
      return after == n || s[after] == '\n' || s[after] == '\x1b';
    }
  }
  size_t i = pos + 1;
  if (i >= n || s[i] != '[') return false;
  ++i;
  // Parameter and intermediate bytes 0x20-0x3f, then the final byte 0x40-0x7e.
  while (i < n && static_cast<unsigned char>(s[i] - 0x20) < 0x20) ++i;
  if (i >= n || static_cast<unsigned char>(s[i] - 0x40) > 0x3e) return false;
  ++i;
  return i == n || s[i] == '\n' || s[i] == '\x1b';
}

// A docker json-file record whose text holds no escape, `{"log":"<text>\n","stream":"...`: the
// line's first backslash ends the text with its newline. The per-line path would decode it to
// <text> exactly as the raw bytes read, which the scan covers in place, so the record is no
// candidate by its '{'. Records with escapes (a quote, a tab, ESC as \u001b, NUL as \u0000),
// split records (no "\n" at the end) and any other '{' line are.
constexpr std::string_view kDockerHead = "{\"log\":\"";
constexpr std::string_view kDockerEnd = "\\n\",\"stream\":\"";

// Whether the line that starts at s[pos] is such a record, in one pass to its first backslash
// or newline instead of one to its end and one to the backslash. The line-by-line scans' test;
// the AVX2 scan finds each line's first backslash in its own pass (DockerCandidate()).
bool PlainDockerRecordAt(const char* s, size_t n, size_t pos) {
  if (!At(s, n, pos, kDockerHead)) return false;
  const size_t b = internal::FindEitherByte(s, n, pos + kDockerHead.size(), '\\', '\n');
  return b < n && s[b] == '\\' && At(s, n, b, kDockerEnd);
}

// The same test where the line's first backslash is known: the line starting at s[start] has
// its first backslash at s[at], or none before its newline at s[at]. (The head holds no
// backslash, so the line's first one is the first after it.)
EFAWATCH_ALWAYS_INLINE bool DockerCandidate(const char* s, size_t n, size_t start, size_t at) {
  return s[start] == '{' &&
         (s[at] != '\\' || !At(s, n, start, kDockerHead) || !At(s, n, at, kDockerEnd));
}

// Whether a needle of IsCandidateLine() covers s[pos] (an anchor byte). No needle holds a
// newline, so a match lies inside the line that holds `pos`.
EFAWATCH_ALWAYS_INLINE bool Verify(const char* s, size_t n, size_t pos, bool json) {
  // Before the switch's jump table: a log coloured line by line has two escapes per line.
  if (s[pos] == '\x1b') return !HarmlessEscape(s, n, pos);
  // And a docker json-file log has a '{' at each line's start.
  if (s[pos] == '{') {
    return json && (pos == 0 || s[pos - 1] == '\n') && !PlainDockerRecordAt(s, n, pos);
  }
  switch (s[pos]) {
    case 'C':
      return pos >= 1 && At(s, n, pos - 1, "NCCL");
    case ' ':
      // "] INFO " by its space after ']', " WARN " by its space after 'N'.
      return pos >= 1 && ((s[pos - 1] == ']' && At(s, n, pos - 1, "] INFO ")) ||
                          (s[pos - 1] == 'N' && pos >= 5 && At(s, n, pos - 5, " WARN ")));
    case 'I':
      // "FI_" by its 'I' after an 'F': a lone 'F' is on every CRI line ("stdout F "), which
      // took the vector scan out of its loop once per line.
      return pos >= 1 && At(s, n, pos - 1, "FI_");
    case '#':
    case '\0':
      return true;
    case 'P':
      return pos >= 1 && At(s, n, pos - 1, " P ");
    case ':':
      return pos >= 9 && At(s, n, pos - 9, "libfabric:");
    case 'r':
      return pos >= 1 && At(s, n, pos - 1, "[repeated ");
    case 't':
    case 'a':
    case 'j':
      return pos >= 1 && s[pos - 1] == ':' &&
             (At(s, n, pos - 1, ":task_") || At(s, n, pos - 1, ":actor_name:") ||
              At(s, n, pos - 1, ":job_id:"));
    default:
      return false;
  }
}

// Byte by byte over s[from, end) where `line_start` starts the line holding `from`.
Hit ScanBytes(const char* s, size_t n, size_t from, size_t end, size_t line_start,
              size_t long_line_bytes, uint64_t newlines, bool json) {
  for (size_t pos = from; pos < end; ++pos) {
    const unsigned char c = static_cast<unsigned char>(s[pos]);
    if (c == '\n') {
      ++newlines;
      line_start = pos + 1;
      continue;
    }
    if (pos - line_start == long_line_bytes || (kAnchor[c] && Verify(s, n, pos, json))) {
      return {pos, newlines};
    }
  }
  return {n, newlines};
}

// Line by line with the reference predicate: where the vector scan is not available.
Hit ScanLines(const char* s, size_t n, size_t from, size_t long_line_bytes, bool json) {
  uint64_t newlines = 0;
  while (from < n) {
    const void* nl = memchr(s + from, '\n', n - from);
    const size_t end = nl == nullptr ? n : static_cast<size_t>(static_cast<const char*>(nl) - s);
    if (IsCandidateLine(std::string_view(s + from, end - from), long_line_bytes, json)) {
      return {from, newlines};
    }
    if (nl == nullptr) break;
    ++newlines;
    from = end + 1;
  }
  return {n, newlines};
}

// Where the line after the last newline of `nl` (not 0), the newline mask of the bytes at
// s[i], starts (with kWidth 32 the upper half is clear).
EFAWATCH_ALWAYS_INLINE size_t AfterLastNewline(size_t i, uint64_t nl) {
  return i + 64 - static_cast<size_t>(std::countl_zero(nl));
}

// The bit work of the `kWidth` (32 or 64) bytes at s[i] for the vector scan: `mask` holds
// their anchor bytes, `nl_mask` their newlines and `records` the bytes where a line's docker
// record test is due (FirstBackslashes(); 0 where no line is json) (the bits above kWidth
// clear). True with `*hit` set when one of them is a candidate's; else the newlines are counted
// and `*line_start` carried on.
template <size_t kWidth>
EFAWATCH_ALWAYS_INLINE bool StepBits(const char* s, size_t n, size_t i, uint64_t mask,
                                     uint64_t nl_mask, uint64_t records, size_t long_line_bytes,
                                     bool json, size_t* line_start, uint64_t* newlines, Hit* hit) {
  // The line running into these bytes is too long at line_start + long_line_bytes, unless it
  // ends first (a later line in them is shorter than kWidth bytes). Only there: an anchor byte at
  // line_start + long_line_bytes of a later line is no overlong line (a differential fuzz input
  // found one).
  size_t long_at = SIZE_MAX;
  if (*line_start + long_line_bytes < i + kWidth) {
    const size_t q = *line_start + long_line_bytes;
    const size_t first_nl =
        nl_mask == 0 ? i + kWidth : i + static_cast<size_t>(__builtin_ctzll(nl_mask));
    if (q >= i && q < first_nl) {
      mask |= uint64_t{1} << (q - i);
      long_at = q;
    }
  }
  mask |= records;
  while (mask != 0) {
    const auto bit = static_cast<unsigned>(__builtin_ctzll(mask));
    const size_t pos = i + bit;
    bool candidate;
    if (((records >> bit) & 1) != 0) {
      // The line holding `pos` starts after the last newline below it, or where the line
      // running into these bytes started.
      const uint64_t below = bit == 0 ? 0 : nl_mask & ((uint64_t{1} << bit) - 1);
      const size_t start = below == 0 ? *line_start : AfterLastNewline(i, below);
      candidate = DockerCandidate(s, n, start, pos);
    } else {
      candidate = pos == long_at || Verify(s, n, pos, json);
    }
    if (candidate) {
      const uint64_t below = bit == 0 ? 0 : nl_mask & ((uint64_t{1} << bit) - 1);
      *hit = {pos, *newlines + static_cast<uint64_t>(__builtin_popcountll(below))};
      return true;
    }
    mask &= mask - 1;
  }
  if (nl_mask != 0) {
    *newlines += static_cast<uint64_t>(__builtin_popcountll(nl_mask));
    *line_start = AfterLastNewline(i, nl_mask);
  }
  return false;
}

#if defined(__x86_64__)
// The anchors of kAnchor but '{' in seven groups, one bit each: a group matches a byte when the
// byte is in `cur` and the byte before it is in `prev` (empty: any byte). A byte's groups are
// looked up by its two nibbles (two table lookups, ANDed; the "shufti" technique of Hyperscan),
// so a group also matches the other bytes made of its bytes' nibbles (0x0b, 0x10, 'd', 'q', 'z'):
// Verify() rejects them, and they are rare in logs. A '{' at a line's start is text in a file
// whose lines cannot be docker json-file records, and is judged at the line's first backslash in
// one whose lines can (ScanAvx2()).
struct Group {
  std::string_view cur;
  std::string_view prev;
};
constexpr std::array<Group, 8> kGroups = {{
    {"C ", "N"},  // "NC", "N "; by the nibbles also "N@", "N#", "N3"
    {"#", ""},
    {std::string_view("\0\x1b", 2), ""},
    {"P", " "},
    {":", "c"},
    {"rI", "[F"},  // "[repeated " by 'r', "FI_" by 'I'; by the nibbles also "Fr", "[B"
    {"taj", ":"},
    {" ", "]"},  // "] INFO " by "] ": last, so that its bit is each byte's top bit (Step())
}};
// The same anchors for a log coloured line by line (ScanAvx2<kColour>), whose top bit marks the
// escapes HarmlessEscapeBits() judges instead of "] " (back in the first group): a compare for
// ESC less every 32 bytes there.
constexpr std::array<Group, 8> kColourGroups = [] {
  std::array<Group, 8> g = kGroups;
  g[0].prev = "N]";                      // "] " by the first group again
  g[2].cur = std::string_view("\0", 1);  // ESC is the eighth
  g[7] = {"\x1b", ""};
  return g;
}();
static_assert(kGroups[0].prev == "N" && kGroups[2].cur == std::string_view("\0\x1b", 2),
              "kColourGroups moves ESC and \"] \" from these groups");
static_assert(kGroups[7].prev == "]" && kColourGroups[7].cur == "\x1b",
              "Step() reads the legacy pairs or the escapes from the bytes' top bits");

// The 16-entry table of group bits for the low (`shift` 0) or high (4) nibble of `cur` or
// `prev` bytes. A group without a `prev` has its bit in every entry of the `prev` tables (any
// byte before it will do): folded into the tables rather than applied to every 32 bytes.
constexpr std::array<uint8_t, 16> NibbleTable(const std::array<Group, 8>& groups, bool of_prev,
                                              int shift) {
  std::array<uint8_t, 16> t{};
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto bit = static_cast<uint8_t>(1u << g);
    if (of_prev && groups[g].prev.empty()) {
      for (uint8_t& e : t) e |= bit;
      continue;
    }
    for (char c : of_prev ? groups[g].prev : groups[g].cur) {
      t[(static_cast<unsigned char>(c) >> shift) & 0x0f] |= bit;
    }
  }
  return t;
}
struct NibbleTables {
  std::array<uint8_t, 16> cur_lo, cur_hi, prev_lo, prev_hi;
};
constexpr NibbleTables TablesOf(const std::array<Group, 8>& groups) {
  return {NibbleTable(groups, false, 0), NibbleTable(groups, false, 4),
          NibbleTable(groups, true, 0), NibbleTable(groups, true, 4)};
}
constexpr NibbleTables kTables = TablesOf(kGroups);
constexpr NibbleTables kColourTables = TablesOf(kColourGroups);

__attribute__((target("avx2"))) inline __m256i Table(const std::array<uint8_t, 16>& t) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.data())));
}

// The group bits of each byte whose nibbles are `lo` and `hi`.
__attribute__((target("avx2"), always_inline)) inline __m256i Groups(__m256i lo, __m256i hi,
                                                                     __m256i lo_table,
                                                                     __m256i hi_table) {
  return _mm256_and_si256(_mm256_shuffle_epi8(lo_table, lo), _mm256_shuffle_epi8(hi_table, hi));
}

// The constants of Step().
struct Masks {
  __m256i cur_lo, cur_hi, prev_lo, prev_hi, low4, newline, backslash, zero;
};
// What Step() finds in 32 bytes, one bit each.
struct StepMasks {
  uint32_t anchors;      // anchor bytes (a byte and the one before it)
  uint32_t newlines;     // '\n'
  uint32_t backslashes;  // '\\' (only where lines may be docker json-file records)
  uint32_t top;          // the ' ' of "] ", or with kColourTables ESC (among the anchors)
};
// The masks of the 32 bytes at `at`. `*prev_groups` holds, in its last byte, the `prev` group
// bits of at[-1] (PrevGroupsOf()), and gets those of at[0, 32) for the next step: the byte before
// each byte is classified once, by the nibbles of its own load, and moved up one place, instead
// of from a second load one byte back (17 operations every 32 bytes instead of 21, one load
// fewer among them). `kJson`: also the backslashes (FirstBackslashes()).
template <bool kJson>
__attribute__((target("avx2"), always_inline)) inline StepMasks Step(const char* at, const Masks& k,
                                                                     __m256i* prev_groups) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
  const __m256i lo = _mm256_and_si256(a, k.low4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(a, 4), k.low4);
  const __m256i as_prev = Groups(lo, hi, k.prev_lo, k.prev_hi);
  // as_prev moved up one byte, at[-1]'s bits entering at byte 0.
  const __m256i before =
      _mm256_alignr_epi8(as_prev, _mm256_permute2x128_si256(*prev_groups, as_prev, 0x21), 15);
  *prev_groups = as_prev;
  const __m256i m = _mm256_and_si256(Groups(lo, hi, k.cur_lo, k.cur_hi), before);
  StepMasks out{};
  out.anchors = ~static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(m, k.zero)));
  out.newlines = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, k.newline)));
  out.top = static_cast<uint32_t>(_mm256_movemask_epi8(m));  // group 7: the top bit
  if constexpr (kJson) {
    out.backslashes =
        static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, k.backslash)));
  }
  return out;
}

// A vector whose last byte holds the `prev` group bits of `c`, for the first Step().
__attribute__((target("avx2"), always_inline)) inline __m256i PrevGroupsOf(const NibbleTables& t,
                                                                           char c) {
  const auto u = static_cast<unsigned char>(c);
  return _mm256_set1_epi8(static_cast<char>(t.prev_lo[u & 0x0f] & t.prev_hi[u >> 4]));
}

// Where, among `kWidth` bytes with backslashes `bs` and newlines `nl`, a line's docker record
// test is due: at the line's first backslash, or at its newline where it has none. `*seeking`
// is 1 where the line running into these bytes has had no backslash in the bytes before (as
// where a line starts), else 0, and gets the same for the next bytes. One addition (with
// carry) finds them all: each newline (and a seeking line's carry) adds 1 at the bottom of the
// run of non-backslash bytes it starts, and the carry runs up that run and stops at its first
// backslash, setting that bit; a newline the carry reaches is set too (1 + 1 + carry), one it
// does not reach is cleared (1 + 1). So a docker json-file log, where every line is a record
// and every record's first backslash ends its text, costs a few operations every 64 bytes and
// one test per line, instead of a search from each line's '{' to its first backslash, which
// was a fifth of `efawatch analyze` on such a log (docker-json, bench/analyze.sh).
template <size_t kWidth>
EFAWATCH_ALWAYS_INLINE uint64_t FirstBackslashes(uint64_t bs, uint64_t nl, unsigned char* seeking) {
  if constexpr (kWidth == 64) {
    unsigned long long sum = 0;  // NOLINT(google-runtime-int): the intrinsic's type
    *seeking = _addcarry_u64(*seeking, ~bs, nl, &sum);
    return sum & (bs | nl);
  } else {
    const uint64_t sum = (~bs & 0xffffffffULL) + nl + *seeking;
    *seeking = static_cast<unsigned char>(sum >> 32);
    return sum & (bs | nl) & 0xffffffffULL;
  }
}

// Bit j of each: the byte at[j] of the 32 at `at` is '[', '0' or 'm'.
struct ColourBits {
  uint32_t bracket, zero, m;
};
__attribute__((target("avx2"), always_inline)) inline uint32_t Equal(__m256i a, char c) {
  return static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, _mm256_set1_epi8(c))));
}
__attribute__((target("avx2"), always_inline)) inline ColourBits Colour(const char* at) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
  return {Equal(a, '['), Equal(a, '0'), Equal(a, 'm')};
}

// The escapes among the 64 bytes at s[i] (i >= 1) that are harmless for certain: the escape
// starts its line, or it is the reset code "ESC[0m" or "ESC[m" with a newline after it (a
// console colouring whole lines ends each with one). Both are what HarmlessEscape() passes
// over; an escape these masks cannot judge (another code, or one that runs past the 64 bytes)
// keeps its anchor bit and goes through Verify() as before. `nl`: the 64 bytes' newlines, `esc`
// their escapes (Step() with kColourTables), `nl_before`: 1 where s[i - 1] is a newline. Three
// more compares and masks for each 32 bytes, which a log without colour codes should not pay
// (measured against masks built from four more loads a step instead: fewer instructions, but
// slower).
__attribute__((target("avx2"), always_inline)) inline uint64_t HarmlessEscapeBits(
    const char* s, size_t i, uint64_t nl, uint64_t esc, uint64_t nl_before) {
  const ColourBits lo = Colour(s + i);
  const ColourBits hi = Colour(s + i + 32);
  const uint64_t bracket = lo.bracket | uint64_t{hi.bracket} << 32;
  const uint64_t zero = lo.zero | uint64_t{hi.zero} << 32;
  const uint64_t m = lo.m | uint64_t{hi.m} << 32;
  const uint64_t line_start = nl << 1 | nl_before;
  // Where "m\n" starts, then where "0m\n" or "m\n" does: the two resets share their end, so
  // one "[" test covers both (half the operations of testing each code whole).
  const uint64_t m_end = m & (nl >> 1);
  const uint64_t code_end = m_end | (zero & (m_end >> 1));
  return esc & (line_start | ((bracket >> 1) & (code_end >> 2)));
}

// The "] " pairs among the `kWidth` (32 or 64) bytes at s[i] (`legacy`, Step()) that cannot
// start legacy "] INFO ": the byte after them is no 'I'. A pod name that kubectl --prefix or
// stern puts before each line ("[pod/name/container] ") ends in one on every line, and each
// took the scan out of its loop to Verify() it (~2 ns a line, kubectl-prefix,
// bench/analyze.sh); only windows holding such a pair pay for the compare. The last byte's pair
// is kept: its next byte lies beyond.
template <size_t kWidth>
__attribute__((target("avx2"), always_inline)) inline uint64_t LegacyPairsToSkip(const char* s,
                                                                                 size_t i,
                                                                                 uint64_t legacy) {
  uint64_t capital_i = Equal(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)), 'I');
  if constexpr (kWidth == 64) {
    capital_i |=
        uint64_t{Equal(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32)), 'I')}
        << 32;
  }
  return legacy & ~(capital_i >> 1) & ~(uint64_t{1} << (kWidth - 1));
}

// 32 bytes per step: one mask of the anchor bytes (a byte and the one before it, Step()) and
// one of the newlines; only the set bits are looked at one by one.
// `from` starts a line. Positions the vector loop cannot cover (the first byte of the block,
// the tail) go through ScanBytes(), which applies the same rules.
// `kColour`: the escapes HarmlessEscapeBits() judges are left out of the mask (on where the
// block starts with an escape). `kJson`: the lines may be docker json-file records; a line's '{'
// is no anchor, and its record test runs at its first backslash (FirstBackslashes()).
template <bool kColour, bool kJson>
__attribute__((target("avx2"), noinline)) Hit ScanAvx2(const char* s, size_t n, size_t from,
                                                       size_t long_line_bytes) {
  uint64_t newlines = 0;
  size_t line_start = from;
  size_t i = from;
  if (i == 0) {
    Hit h = ScanBytes(s, n, 0, n < 1 ? n : 1, 0, long_line_bytes, 0, kJson);
    if (h.pos != n) return h;
    newlines = h.newlines;
    line_start = newlines != 0 ? 1 : 0;
    i = 1;
  }
  // A '{' at a line's start is text where a file's lines cannot be docker json-file records
  // (Trainer's metric dicts, JSON-lines logging), and judged at the line's first backslash where
  // they can: either way its group is left out of the mask.
  constexpr const NibbleTables& t = kColour ? kColourTables : kTables;
  const Masks k{Table(t.cur_lo),        Table(t.cur_hi),        Table(t.prev_lo),
                Table(t.prev_hi),       _mm256_set1_epi8(0x0f), _mm256_set1_epi8('\n'),
                _mm256_set1_epi8('\\'), _mm256_setzero_si256()};
  __m256i prev_groups = PrevGroupsOf(t, s[i - 1]);
  uint64_t nl_before = s[i - 1] == '\n' ? 1 : 0;  // kColour: s[i - 1] is a newline
  // 1 while the line at line_start has had no backslash yet: its record test is still due.
  unsigned char seeking = 1;
  // The masks of the 64 bytes at s[i]: the anchors left after the filters, the newlines and the
  // record events (0 where no line is json).
  struct Window {
    uint64_t mask, nl, records;
  };
  auto window = [&](size_t at) __attribute__((target("avx2"), always_inline)) {
    const StepMasks m0 = Step<kJson>(s + at, k, &prev_groups);
    const StepMasks m1 = Step<kJson>(s + at + 32, k, &prev_groups);
    Window w{m0.anchors | uint64_t{m1.anchors} << 32, m0.newlines | uint64_t{m1.newlines} << 32, 0};
    const uint64_t top = m0.top | uint64_t{m1.top} << 32;
    if constexpr (kColour) {
      if (top != 0) w.mask &= ~HarmlessEscapeBits(s, at, w.nl, top, nl_before);
      nl_before = w.nl >> 63;
    } else if (top != 0) {
      w.mask &= ~LegacyPairsToSkip<64>(s, at, top);
    }
    if constexpr (kJson) {
      w.records =
          FirstBackslashes<64>(m0.backslashes | uint64_t{m1.backslashes} << 32, w.nl, &seeking);
    }
    return w;
  };
  // Four steps at a time: where none of the 128 bytes is an anchor or a record event and no line
  // can grow too long in them, the bit work (newline count, line start) runs once per 128 bytes;
  // else StepBits() takes each half. Two steps at a time did that once per 64 bytes instead of
  // once per 32, about a sixth of the loop's instructions on a log of chatter (callgrind,
  // bench/analyze.sh's 2 %-NCCL logs); four save a further ~10 instructions every 128 bytes.
  while (i + 128 <= n) {
    const Window a = window(i);
    const Window b = window(i + 64);
    if (((a.mask | a.records | b.mask | b.records) == 0) &&
        line_start + long_line_bytes >= i + 128) {
      newlines += static_cast<uint64_t>(std::popcount(a.nl) + std::popcount(b.nl));
      if (b.nl != 0) {
        line_start = AfterLastNewline(i + 64, b.nl);
      } else if (a.nl != 0) {
        line_start = AfterLastNewline(i, a.nl);
      }
      i += 128;
      continue;
    }
    Hit hit{};
    if (StepBits<64>(s, n, i, a.mask, a.nl, a.records, long_line_bytes, kJson, &line_start,
                     &newlines, &hit) ||
        StepBits<64>(s, n, i + 64, b.mask, b.nl, b.records, long_line_bytes, kJson, &line_start,
                     &newlines, &hit)) {
      return hit;
    }
    i += 128;
  }
  while (i + 64 <= n) {
    const Window w = window(i);
    Hit hit{};
    if (StepBits<64>(s, n, i, w.mask, w.nl, w.records, long_line_bytes, kJson, &line_start,
                     &newlines, &hit)) {
      return hit;
    }
    i += 64;
  }
  while (i + 32 <= n) {
    const StepMasks m = Step<kJson>(s + i, k, &prev_groups);
    uint64_t mask = m.anchors;
    if (!kColour && m.top != 0) mask &= ~LegacyPairsToSkip<32>(s, i, m.top);
    uint64_t records = 0;
    if constexpr (kJson) records = FirstBackslashes<32>(m.backslashes, m.newlines, &seeking);
    Hit hit{};
    if (StepBits<32>(s, n, i, mask, m.newlines, records, long_line_bytes, kJson, &line_start,
                     &newlines, &hit)) {
      return hit;
    }
    i += 32;
  }
  // The line running into the tail, when its first backslash is not behind: ScanBytes() judges
  // a record by its '{', which lies behind.
  if constexpr (kJson) {
    if (seeking && line_start < i && s[line_start] == '{' &&
        !PlainDockerRecordAt(s, n, line_start)) {
      return {line_start, newlines};
    }
  }
  return ScanBytes(s, n, i, n, line_start, long_line_bytes, newlines, kJson);
}

bool HaveAvx2() {
  static const bool have = __builtin_cpu_supports("avx2");
  return have;
}
#endif

std::atomic<internal::ScanLevel> forced_level{internal::ScanLevel::kBest};

#if defined(__x86_64__)
bool UseAvx2() {
  return HaveAvx2() && forced_level.load(std::memory_order_relaxed) != internal::ScanLevel::kLines;
}

// A log coloured line by line starts every line, and so every block, with an escape.
__attribute__((target("avx2"))) Hit ScanAvx2(const char* s, size_t n, size_t from,
                                             size_t long_line_bytes, bool json) {
  if ((from < n && s[from] == '\x1b') ||
      forced_level.load(std::memory_order_relaxed) == internal::ScanLevel::kColour) {
    return json ? ScanAvx2<true, true>(s, n, from, long_line_bytes)
                : ScanAvx2<true, false>(s, n, from, long_line_bytes);
  }
  return json ? ScanAvx2<false, true>(s, n, from, long_line_bytes)
              : ScanAvx2<false, false>(s, n, from, long_line_bytes);
}
#endif

}  // namespace

namespace internal {

void ForceScanLevel(ScanLevel level) { forced_level.store(level, std::memory_order_relaxed); }

std::string_view ScanName() {
#if defined(__x86_64__)
  if (UseAvx2()) {
    return forced_level.load(std::memory_order_relaxed) == ScanLevel::kColour ? "avx2-colour"
                                                                              : "avx2";
  }
#endif
  return "lines";
}

Hit NextCandidate(const char* s, size_t n, size_t from, size_t long_line_bytes, bool json) {
#if defined(__x86_64__)
  // The pair anchors look one byte back and the long-line check assumes a line longer than
  // one step is found by the step it ends in; below 64 bytes the line scan is exact anyway.
  if (long_line_bytes >= 64 && UseAvx2()) return ScanAvx2(s, n, from, long_line_bytes, json);
#endif
  return ScanLines(s, n, from, long_line_bytes, json);
}

}  // namespace internal

bool IsCandidateLine(std::string_view line, size_t long_line_bytes, bool json) {
  if (line.size() > long_line_bytes) return true;
  if (line.empty()) return false;
  if (json && line[0] == '{' && !PlainDockerRecordAt(line.data(), line.size(), 0)) {
    return true;
  }
  for (char c : {'\0', '#'}) {
    if (memchr(line.data(), c, line.size()) != nullptr) return true;
  }
  for (size_t i = line.find('\x1b'); i != std::string_view::npos; i = line.find('\x1b', i + 1)) {
    if (!HarmlessEscape(line.data(), line.size(), i)) return true;
  }
  for (std::string_view needle : {"NCCL", "] INFO ", " WARN ", "FI_", "libfabric:", " P ",
                                  "[repeated ", ":task_", ":actor_name:", ":job_id:"}) {
    if (FindIn(line, needle) != kNone) return true;
  }
  return false;
}

}  // namespace efawatch::nccl
