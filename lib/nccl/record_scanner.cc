// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/record_scanner.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "lib/nccl/text_util.h"
#include "lib/nccl/unwrap.h"

namespace efawatch::nccl {
namespace {

// The 1024-byte NCCL record buffer (src/debug.cc) bounds a real prefix, so backward scans
// never need to look further than this.
constexpr size_t kMaxPrefixScan = 1024;
constexpr size_t kMaxHost = 255;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t'; }

size_t Find(std::string_view hay, std::string_view needle, size_t from) {
  return internal::FindIn(hay, needle, from);
}

// "NCCL " searched on its 'L': messages are full of 'N' ("NET/...", "NCCL_...") but rarely
// hold an upper-case L.
size_t FindMarker(std::string_view line, size_t from) {
  return internal::FindIn(line, "NCCL ", from, 3);
}

std::string_view RTrim(std::string_view s) {
  while (!s.empty() && (IsSpace(s.back()) || s.back() == '|' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// True when line[0, end) holds nothing but blanks.
bool OnlyBlanksBefore(std::string_view line, size_t end) {
  for (size_t i = 0; i < end; ++i) {
    if (!IsSpace(line[i])) return false;
  }
  return true;
}

// Parses digits ending right before `end` (exclusive), not before `floor`. Returns the index
// of the first digit or npos.
size_t DigitsBefore(std::string_view line, size_t end, size_t floor, uint32_t* value) {
  size_t i = end;
  while (i > floor && IsDigit(line[i - 1]) && end - i < 10) --i;
  if (i == end) return std::string_view::npos;
  uint64_t v = 0;
  for (size_t k = i; k < end; ++k) v = v * 10 + static_cast<uint64_t>(line[k] - '0');
  if (v > UINT32_MAX) return std::string_view::npos;
  *value = static_cast<uint32_t>(v);
  return i;
}

// `line[close]` is ']' of a "[dev]" field; returns the index of '[' or npos.
size_t DevBracket(std::string_view line, size_t close, size_t floor, int* dev) {
  uint32_t v = 0;
  size_t first = DigitsBefore(line, close, floor, &v);
  if (first == std::string_view::npos || first == floor || line[first - 1] != '[') {
    return std::string_view::npos;
  }
  *dev = static_cast<int>(v > 1'000'000 ? 1'000'000 : v);
  return first - 1;
}

// Parses "host:pid:tid" ending right before `end` (the space before "[dev]").
// Returns the index where the host starts, or npos.
size_t HostPrefix(std::string_view line, size_t end, size_t floor, Record* r) {
  uint32_t tid = 0;  // checked, not kept
  uint32_t pid = 0;
  size_t t = DigitsBefore(line, end, floor, &tid);
  if (t == std::string_view::npos || t <= floor || line[t - 1] != ':')
    return std::string_view::npos;
  size_t pid_end = t - 1;
  size_t p = DigitsBefore(line, pid_end, floor, &pid);
  if (p == std::string_view::npos || p <= floor || line[p - 1] != ':')
    return std::string_view::npos;
  size_t host_end = p - 1;
  size_t h = host_end;
  // A hostname holds no whitespace and no ':' (wrappers such as "[1,0]<stdout>:" or
  // "[trainer0|0]:" end in ':'), and no '|' (console separators).
  while (h > floor && host_end - h < kMaxHost) {
    char c = line[h - 1];
    if (IsSpace(c) || c == ':' || c == '|') break;
    --h;
  }
  // A log viewer's timestamp glued to the host ("...16:39:51.208-07:00ip-10-1-2-3:79:79"): the
  // scan stopped at the time's last ':'. CleanLine strips such a time only at the line's start,
  // so behind another wrapper it reaches here; the host begins where the time ends.
  if (h > floor && line[h - 1] == ':') {
    size_t token = h - 1;
    while (token > floor && !IsSpace(line[token - 1]) && line[token - 1] != '|') --token;
    const size_t time_end = token + TimestampLength(line.substr(token, host_end - token));
    if (time_end >= token + 16 && time_end > h && time_end < host_end) h = time_end;
  }
  if (h == host_end) return std::string_view::npos;
  r->host = line.substr(h, host_end - h);
  r->proc_key = line.substr(h, pid_end - h);
  r->pid = pid;
  return h;
}

// Fills the prefix fields of `r` for a marker (" NCCL INFO" etc.) at `marker`. `floor` is the
// earliest index the prefix may use. Returns the prefix start, or npos when the marker is not a
// record (e.g. "grep 'NCCL INFO'" in a shell command).
size_t ParsePrefix(std::string_view line, size_t marker, size_t floor, bool needs_location,
                   Record* r) {
  if (floor == 0 && OnlyBlanksBefore(line, marker)) {
    // The line begins at "NCCL INFO" / "NCCL WARN": the prefix is gone (a pasted excerpt, a log
    // shipper that cut it). A record without a process, device or location.
    r->dev = -1;
    return marker;
  }
  if (marker == 0 || marker <= floor || !IsSpace(line[marker - 1])) return std::string_view::npos;
  size_t end = marker - 1;  // the space before NCCL / INFO / WARN
  size_t lo = end > kMaxPrefixScan + floor ? end - kMaxPrefixScan : floor;
  size_t open = std::string_view::npos;
  if (!needs_location) {
    if (end == 0 || line[end - 1] != ']') return std::string_view::npos;
    open = DevBracket(line, end - 1, lo, &r->dev);
    if (open == std::string_view::npos) return std::string_view::npos;
  } else {
    // WARN: "[dev] <location> NCCL WARN". The location is free-form (C++ signatures hold
    // spaces and parentheses), so look for the nearest "[digits] " to its left.
    for (size_t i = end; i > lo + 1; --i) {
      if (line[i - 1] == ' ' && line[i - 2] == ']') {
        int dev = -1;
        size_t o = DevBracket(line, i - 2, lo, &dev);
        if (o != std::string_view::npos) {
          open = o;
          r->dev = dev;
          r->location = line.substr(i, end - i);
          break;
        }
      }
    }
    if (open == std::string_view::npos) {
      // Prefix trimmed by the user: keep the location, no process.
      size_t s = floor;
      while (s < end && IsSpace(line[s])) ++s;
      r->location = line.substr(s, end - s);
      return s;
    }
  }
  if (open > floor && IsSpace(line[open - 1])) {
    size_t h = HostPrefix(line, open - 1, lo, r);
    if (h != std::string_view::npos) return h;
  }
  return open;
}

// The length of an upper-case word of 3 to 8 letters at `at`, followed by a space, that is not a
// level this reader knows or NCCL's CALL; 0 otherwise.
size_t UnknownLevelWord(std::string_view line, size_t at) {
  size_t e = at;
  while (e < line.size() && e - at < 9 && line[e] >= 'A' && line[e] <= 'Z') ++e;
  const size_t len = e - at;
  if (len < 3 || len > 8 || e >= line.size() || line[e] != ' ') return 0;
  const std::string_view w = line.substr(at, len);
  if (w == "INFO" || w == "WARN" || w == "TRACE" || w == "CALL") return 0;
  return len;
}

bool Matches(std::string_view line, size_t at, std::string_view word) {
  if (line.size() < at + word.size()) return false;
  if (line.compare(at, word.size(), word) != 0) return false;
  size_t after = at + word.size();
  return after == line.size() || IsSpace(line[after]);
}

void Finish(std::string_view line, size_t prefix_start, size_t msg_start, Record* r) {
  r->message = line.substr(msg_start < line.size() ? msg_start : line.size());
  r->full = line.substr(prefix_start);
}

void CloseMessage(std::string_view line, size_t next_prefix, std::vector<Record>* out) {
  if (out->empty()) return;
  Record& prev = out->back();
  size_t msg_start = static_cast<size_t>(prev.message.data() - line.data());
  size_t full_start = static_cast<size_t>(prev.full.data() - line.data());
  if (next_prefix < msg_start) next_prefix = msg_start;
  prev.message = RTrim(line.substr(msg_start, next_prefix - msg_start));
  prev.full = line.substr(full_start, msg_start + prev.message.size() - full_start);
}

void AddUnique(std::vector<Record>* out, const Record& r) {
  for (const Record& o : *out) {
    if (o.full == r.full && o.message == r.message) return;
  }
  out->push_back(r);
}

void FindLegacy(std::string_view line, std::vector<Record>* out) {
  // NCCL <= 2.2: "host:pid:tid [dev] INFO msg" and "host:pid:tid [dev] file:line WARN msg".
  size_t floor = 0;
  for (size_t at = Find(line, "] INFO ", 0); at != std::string_view::npos;
       at = Find(line, "] INFO ", at + 7)) {
    Record r;
    r.legacy = true;
    size_t start = ParsePrefix(line, at + 2, floor, false, &r);
    if (start == std::string_view::npos || r.host.empty()) continue;
    CloseMessage(line, start, out);
    Finish(line, start, at + 7, &r);
    r.message = RTrim(r.message);
    out->push_back(r);
    floor = at + 7;
  }
  if (!out->empty()) return;
  size_t at = Find(line, " WARN ", 0);
  if (at == std::string_view::npos) return;
  Record r;
  r.legacy = true;
  r.level = Level::kWarn;
  size_t start = ParsePrefix(line, at + 1, 0, true, &r);
  if (start == std::string_view::npos || r.host.empty()) return;
  Finish(line, start, at + 6, &r);
  r.message = RTrim(r.message);
  out->push_back(r);
}

// Bytes that end a host name in a record prefix: ':', whitespace, '|'. One table load per byte
// instead of four comparisons.
constexpr std::array<bool, 256> kHostStop = [] {
  std::array<bool, 256> t{};
  t[':'] = t[' '] = t['\t'] = t['|'] = true;
  return t;
}();

// Index of the first host-stop byte in line[0, limit), or `limit`. Eight bytes per step (the
// "has zero byte" test of https://graphics.stanford.edu/~seander/bithacks.html#ZeroInWord, once
// per stop byte): host names are 10-60 bytes, and a table load per byte was the top line of the
// scanner's profile. The test may flag bytes after the first match, never before it.
size_t HostStopAt(std::string_view line, size_t limit) {
  size_t i = 0;
  if constexpr (std::endian::native == std::endian::little) {
    constexpr uint64_t kOnes = 0x0101010101010101ull;
    constexpr uint64_t kHigh = 0x8080808080808080ull;
    auto zero_bytes = [](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
    while (i + 8 <= limit) {
      uint64_t w;
      memcpy(&w, line.data() + i, 8);
      const uint64_t hit = zero_bytes(w ^ (kOnes * ':')) | zero_bytes(w ^ (kOnes * ' ')) |
                           zero_bytes(w ^ (kOnes * '\t')) | zero_bytes(w ^ (kOnes * '|'));
      if (hit != 0) return i + static_cast<size_t>(std::countr_zero(hit) >> 3);
      i += 8;
    }
  }
  while (i < limit && !kHostStop[static_cast<unsigned char>(line[i])]) ++i;
  return i;
}

// Parses up to `max` decimal digits at line[i]; returns the index after them.
size_t ParseDigits(std::string_view line, size_t i, size_t max, uint64_t* value) {
  const size_t n = std::min(line.size(), i + max);
  uint64_t v = 0;
  while (i < n) {
    const unsigned d = static_cast<unsigned char>(line[i]) - unsigned{'0'};
    if (d > 9) break;
    v = v * 10 + d;
    ++i;
  }
  *value = v;
  return i;
}

#if defined(__SSE2__)
// The value of the `len` (1-8) decimal digits that end right before s[end]: all digits at once
// ("Quickly parsing eight digits",
// https://lemire.me/blog/2022/01/21/swar-explained-parsing-eight-digits/), the bytes before the
// number replaced by '0'. Read straight from the line (a copy on the stack made the load wait
// for the stores before it); a number ending in the first eight bytes is gathered byte by byte.
EFAWATCH_ALWAYS_INLINE uint64_t EightDigits(const char* s, size_t end, size_t len) {
  constexpr uint64_t kZeros = 0x3030303030303030ull;
  uint64_t w = kZeros;
  if (end >= 8) {
    memcpy(&w, s + end - 8, 8);
  } else {
    // Shifted in from the top, so s[end - 1] lands in the last byte, as a load would put it.
    for (size_t i = 0; i < end; ++i)
      w = (w >> 8) | uint64_t{static_cast<unsigned char>(s[i])} << 56;
  }
  const uint64_t keep = ~uint64_t{0} << (8 * (8 - len));
  w = ((w & keep) | (kZeros & ~keep)) - kZeros;
  w = w * 10 + (w >> 8);
  return (((w & 0x000000ff000000ffull) * (100 + (1000000ull << 32))) +
          (((w >> 16) & 0x000000ff000000ffull) * (1 + (10000ull << 32)))) >>
         32;
}

// ForwardInfoPrefix() on the first 48 bytes at once (three SSE2 compares per byte class
// instead of a loop per field). Answers only where the answer is certain from those bytes and
// every number has at most eight digits; kUndecided sends the line to the scalar parser.
constexpr size_t kUndecided = std::string_view::npos - 1;
size_t ForwardInfoPrefixSse2(std::string_view line, Record* r) {
  constexpr size_t kSpan = 48;
  const char* s = line.data();
  uint64_t stop = 0, colon = 0, digit = 0;
  for (size_t k = 0; k < kSpan; k += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k));
    const __m128i c = _mm_cmpeq_epi8(v, _mm_set1_epi8(':'));
    const __m128i st = _mm_or_si128(_mm_or_si128(c, _mm_cmpeq_epi8(v, _mm_set1_epi8(' '))),
                                    _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                                                 _mm_cmpeq_epi8(v, _mm_set1_epi8('|'))));
    const __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    const __m128i dg = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d);
    stop |= uint64_t{static_cast<uint32_t>(_mm_movemask_epi8(st))} << k;
    colon |= uint64_t{static_cast<uint32_t>(_mm_movemask_epi8(c))} << k;
    digit |= uint64_t{static_cast<uint32_t>(_mm_movemask_epi8(dg))} << k;
  }
  // The first non-digit at or after `from` (kSpan or more: not within the bytes looked at).
  auto digits_end = [&](size_t from) {
    return static_cast<size_t>(std::countr_zero(~digit & (~uint64_t{0} << from)));
  };
  if (stop == 0) return kUndecided;  // a host name longer than the span
  const auto host_end = static_cast<size_t>(std::countr_zero(stop));
  if (host_end == 0 || ((colon >> host_end) & 1) == 0) return std::string_view::npos;
  const size_t pid_end = digits_end(host_end + 1);
  const size_t tid_end = pid_end + 1 < kSpan ? digits_end(pid_end + 1) : kSpan;
  const size_t dev_end = tid_end + 2 < kSpan ? digits_end(tid_end + 2) : kSpan;
  if (dev_end + 1 >= kSpan) return kUndecided;
  const size_t pid_len = pid_end - host_end - 1;
  const size_t tid_len = tid_end - pid_end - 1;
  const size_t dev_len = dev_end - tid_end - 2;
  if (pid_len > 8 || tid_len > 8) return kUndecided;
  // What the scalar parser rejects, in its order: a missing number or the wrong byte after it
  // (a number longer than its limit ends at a digit, also the wrong byte).
  if (pid_len == 0 || s[pid_end] != ':' || tid_len == 0 || s[tid_end] != ' ' ||
      s[tid_end + 1] != '[' || dev_len == 0 || dev_len > 7 || s[dev_end] != ']' ||
      s[dev_end + 1] != ' ') {
    return std::string_view::npos;
  }
  const size_t n = line.size();
  const size_t i = dev_end + 2;
  if (n - i < 9 || memcmp(s + i, "NCCL INFO", 9) != 0) return std::string_view::npos;
  if (n - i > 9 && s[i + 9] != ' ') return std::string_view::npos;
  r->host = line.substr(0, host_end);
  r->proc_key = line.substr(0, pid_end);
  r->pid = static_cast<uint32_t>(EightDigits(s, pid_end, pid_len));
  // The thread id is checked (digits, at most eight here) but not read: nothing uses it. Most
  // devices are one digit.
  r->dev = dev_len == 1 ? s[dev_end - 1] - '0' : static_cast<int>(EightDigits(s, dev_end, dev_len));
  r->level = Level::kInfo;
  return i + 9 + (n - i > 9 ? 1 : 0);
}
#endif

// The common case: the line starts with "host:pid:tid [dev] NCCL INFO ". Parsed forwards in one
// pass; returns the message start or npos (then the general search runs).
size_t ForwardInfoPrefix(std::string_view line, Record* r, bool vector = true) {
#if defined(__SSE2__)
  if (vector && line.size() >= 48) {
    const size_t msg = ForwardInfoPrefixSse2(line, r);
    if (msg != kUndecided) return msg;
  }
#endif
  const size_t n = line.size();
  const size_t host_limit = n < kMaxHost ? n : kMaxHost;
  size_t i = HostStopAt(line, host_limit);
  if (i == 0 || i >= n || line[i] != ':') return std::string_view::npos;
  size_t host_end = i++;
  uint64_t pid = 0, tid = 0, dev = 0;
  size_t b = i;
  i = ParseDigits(line, i, 10, &pid);
  if (i == b || i >= n || line[i] != ':') return std::string_view::npos;
  size_t pid_end = i++;
  b = i;
  i = ParseDigits(line, i, 10, &tid);
  if (i == b || i + 1 >= n || line[i] != ' ' || line[i + 1] != '[') return std::string_view::npos;
  i += 2;
  b = i;
  i = ParseDigits(line, i, 7, &dev);
  if (i == b || i + 1 >= n || line[i] != ']' || line[i + 1] != ' ') return std::string_view::npos;
  i += 2;
  if (n - i < 9 || memcmp(line.data() + i, "NCCL INFO", 9) != 0) return std::string_view::npos;
  if (n - i > 9 && line[i + 9] != ' ') return std::string_view::npos;
  if (pid > UINT32_MAX || tid > UINT32_MAX) return std::string_view::npos;
  r->host = line.substr(0, host_end);
  r->proc_key = line.substr(0, pid_end);
  r->pid = static_cast<uint32_t>(pid);
  r->dev = static_cast<int>(dev);
  r->level = Level::kInfo;
  return i + 9 + (n - i > 9 ? 1 : 0);
}

}  // namespace

namespace internal {

size_t ParseInfoPrefix(std::string_view line, Record* r, bool vector) {
  return ForwardInfoPrefix(line, r, vector);
}

}  // namespace internal

size_t FindRecords(std::string_view line, std::vector<Record>* out) {
  size_t floor = 0;
  size_t at = 0;
  {
    // Parsed in place, into the record the last line left (a vector of one, mostly): building a
    // fresh Record zeroes 104 bytes with `rep stos`, whose start-up cost was a sixth of this
    // function. ForwardInfoPrefix() writes nothing unless it succeeds, and then sets every
    // prefix field; the rest are set here.
    out->resize(1);
    Record& r = out->front();
    size_t msg = ForwardInfoPrefix(line, &r);
    if (msg != std::string_view::npos) {
      r.legacy = false;
      r.location = {};
      Finish(line, 0, msg, &r);
      floor = msg;
      at = msg;
    } else {
      out->clear();
    }
  }
  at = FindMarker(line, at);
  while (at != std::string_view::npos) {
    size_t word = at + 5;
    Record r;
    bool ok = true;
    if (Matches(line, word, "INFO")) {
      r.level = Level::kInfo;
    } else if (Matches(line, word, "WARN")) {
      r.level = Level::kWarn;
    } else if (Matches(line, word, "TRACE")) {
      r.level = Level::kTrace;
    } else {
      ok = false;
    }
    size_t msg_start = word + (r.level == Level::kTrace ? 6 : 5);
    if (!ok) {
      // A level word this reader does not know (one a later NCCL added), behind the same
      // "host:pid:tid [dev] " prefix as INFO: read like an INFO line, so its message still
      // counts, rather than dropped. Only with the device bracket, and never NCCL's CALL
      // traces, whose message is an API call, not a log message.
      const size_t len = UnknownLevelWord(line, word);
      if (len > 0 && at >= 2 && line[at - 2] == ']') {
        ok = true;
        r.level = Level::kInfo;
        msg_start = word + len + 1;
      }
    }
    if (ok) {
      size_t start = ParsePrefix(line, at, floor, r.level != Level::kInfo, &r);
      if (start != std::string_view::npos) {
        CloseMessage(line, start, out);
        Finish(line, start, msg_start, &r);
        AddUnique(out, r);
        floor = msg_start;
        at = FindMarker(line, msg_start);
        continue;
      }
    }
    at = FindMarker(line, at + 5);
  }
  if (!out->empty()) {
    // The last record runs to the end of the line.
    Record& last = out->back();
    last.message = RTrim(last.message);
    size_t full_start = static_cast<size_t>(last.full.data() - line.data());
    size_t msg_start = static_cast<size_t>(last.message.data() - line.data());
    last.full = line.substr(full_start, msg_start + last.message.size() - full_start);
    return out->size();
  }
  FindLegacy(line, out);
  return out->size();
}

void SplitVersion(std::string_view text, std::string_view* version, std::string_view* cuda) {
  if (!internal::Split(text, "+cuda", version, cuda)) {
    *version = text;
    *cuda = {};
  }
}

bool FindVersionBanner(std::string_view line, std::string_view* version, std::string_view* cuda) {
  constexpr std::string_view kBanner = "NCCL version ";
  for (size_t at = Find(line, kBanner, 0); at != std::string_view::npos;
       at = Find(line, kBanner, at + kBanner.size())) {
    size_t s = at + kBanner.size();
    if (s >= line.size() || !IsDigit(line[s])) continue;
    size_t e = s;
    while (e < line.size() && !IsSpace(line[e]) && line[e] != ',' && e - s < 64) ++e;
    std::string_view token = line.substr(s, e - s);
    if (token.find("+cuda") == std::string_view::npos) continue;
    SplitVersion(token, version, cuda);
    return true;
  }
  return false;
}

}  // namespace efawatch::nccl
