// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/comm_line.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "lib/nccl/text_util.h"

namespace efawatch::nccl {
namespace {

// What a token says about the token after it.
enum Key : uint8_t {
  kNone,
  kComm,
  kRank,
  kNranks,
  kNnodes,
  kCudaDev,
  kBusId,
  kCommId,
  kLocalRanks,
  kAbort,
  kInit
};

}  // namespace

namespace internal {
// What the vector pass found: where each key's value is (offset, length; length 0: none) and
// the statuses. Bytes, not string_views: zeroing eleven views cost a `rep stos` per line.
struct CommLineSlots {
  uint8_t at[kInit + 1] = {}, size[kInit + 1] = {};
  bool start = false, complete = false, abort = false;
};
}  // namespace internal

namespace {

// A word's first eight bytes as a little-endian number, for comparing short tokens at once.
constexpr uint64_t WordOf(std::string_view s) {
  uint64_t w = 0;
  for (size_t i = 0; i < s.size() && i < 8; ++i) {
    w |= uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
  }
  return w;
}
// The keys by (first eight bytes, length) in a table of 64 slots: one multiply, one load and
// one compare per token instead of a switch on the length (measured 79 against 84 ns a line).
// kMul is any multiplier that puts the keys in distinct slots (checked at compile time).
struct Slot {
  uint64_t word = 0;
  std::string_view name;
  Key key = kNone;
};
constexpr std::pair<std::string_view, Key> kKeys[] = {
    {"comm", kComm},     {"rank", kRank},     {"nranks", kNranks},
    {"nRanks", kNranks}, {"nNodes", kNnodes}, {"cudaDev", kCudaDev},
    {"busId", kBusId},   {"commId", kCommId}, {"localRanks", kLocalRanks},
    {"Abort", kAbort},   {"Init", kInit},     {"-", kInit}};
constexpr uint64_t kMul = 0xc4ceb9fe1a85ec53ull;
constexpr size_t SlotOf(uint64_t word, size_t len) { return ((word + len) * kMul) >> 58; }
constexpr std::array<Slot, 64> kTable = [] {
  std::array<Slot, 64> t{};
  for (const auto& [name, key] : kKeys) {
    Slot& s = t[SlotOf(WordOf(name), name.size())];
    if (s.key != kNone) throw "two keys share a slot: pick another kMul";
    s = {WordOf(name), name, key};
  }
  return t;
}();

// What key `token` is, given its first eight bytes (zero-padded) as `word`. Inlined by force:
// with two callers GCC called it from the vector loop (86 instead of 79 ns a line).
EFAWATCH_ALWAYS_INLINE Key ClassifyWord(std::string_view token, uint64_t word) {
  const Slot& s = kTable[SlotOf(word, token.size())];
  if (s.word != word || s.name.size() != token.size()) return kNone;
  return token.size() <= 8 || token == s.name ? s.key : kNone;
}

// The same for any token; one table serves both parsers. Values (ranks, counts, pointers, ids)
// start with a digit; no key does.
Key Classify(std::string_view token) {
  if (token.empty() || internal::IsDigitChar(token[0])) return kNone;
  uint64_t word = 0;
  memcpy(&word, token.data(), token.size() < 8 ? token.size() : 8);
  return ClassifyWord(token, word);
}

constexpr size_t kFastBytes = CommLineParser::kShapeBytes;

#if defined(__SSE2__)
constexpr uint64_t kStart = WordOf("START");
// The first eight bytes of the `len`-byte token at `p`, zero-padded; `p` has eight readable bytes.
EFAWATCH_ALWAYS_INLINE uint64_t WordAt(const char* p, size_t len) {
  uint64_t w;
  memcpy(&w, p, 8);
  return len < 8 ? w & (~uint64_t{0} >> (64 - 8 * len)) : w;
}
constexpr uint64_t kComplete = WordOf("COMPLETE");

// One bit per byte of `v`: the blanks (' ', '\t') and the digits. Shared by the vector pass,
// BlankBits() and SameButNumbers().
EFAWATCH_ALWAYS_INLINE uint32_t BlankBytes(__m128i v) {
  return static_cast<uint32_t>(_mm_movemask_epi8(
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\t')))));
}
EFAWATCH_ALWAYS_INLINE uint32_t DigitBytes(__m128i v) {
  const __m128i off = _mm_sub_epi8(v, _mm_set1_epi8('0'));
  return static_cast<uint32_t>(
      _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(off, _mm_set1_epi8(9)), off)));
}

// The first blank in a word after word `w` of a blank bitmap whose last word is all blanks: a
// token may span several words (one of over 64 bytes: no real line has one, a fuzzer's may).
EFAWATCH_ALWAYS_INLINE size_t NextBlankAfterWord(const uint64_t* blank, size_t w) {
  do {
    ++w;
  } while (blank[w] == 0);
  return w * 64 + static_cast<size_t>(std::countr_zero(blank[w]));
}

using Slots = internal::CommLineSlots;

CommLine FromSlots(std::string_view m, const Slots& s) {
  CommLine out;
  auto value = [&](Key k) { return m.substr(s.at[k], s.size[k]); };
  auto number = [&](Key k) { return s.size[k] == 0 ? -1 : internal::ParseInt(value(k)); };
  out.ptr = value(kComm);
  out.comm_id = value(kCommId);
  out.bus_id = value(kBusId);
  out.rank = number(kRank);
  out.nranks = number(kNranks);
  out.nnodes = number(kNnodes);
  out.cuda_dev = number(kCudaDev);
  out.local_ranks = number(kLocalRanks);
  out.start = s.start;
  out.complete = s.complete;
  out.abort = s.abort;
  return out;
}

// ParseCommLine() for a message of at most kFastBytes: the message is copied into a buffer
// padded with blanks, one pass of SSE2 compares marks its blanks and digits, and the loop
// visits tokens by bit scans. Only tokens that do not start with a digit are classified (the
// values between them are taken by position). Same result as ParseCommLineByTokens(); on the
// communicator lines of bench/analyze.sh's log 89 ns a line, against 115 for the earlier form
// of this loop (which listed every token's start and end first) and 148 for the token parser.
// Returns false for a message of more than 64 tokens (the rest is not looked at).
bool ParseShort(std::string_view m, Slots* out) {
  constexpr size_t kWords = kFastBytes / 64;
  alignas(16) char buf[kFastBytes + 16];
  memcpy(buf, m.data(), m.size());
  memset(buf + m.size(), ' ', sizeof(buf) - m.size());
  // Each word is built in registers and stored once (or-ing into the stored word made every
  // step wait for the store before it).
  uint64_t blank[kWords + 1], digit[kWords + 1];
  const size_t used = (m.size() + 63) / 64;  // words holding message bytes
  for (size_t w = used; w <= kWords; ++w) {
    blank[w] = ~uint64_t{0};
    digit[w] = 0;
  }
  for (size_t w = 0; w < used; ++w) {
    uint64_t b = 0, d = 0;
    for (size_t k = 0; k < 64; k += 16) {
      const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(buf + w * 64 + k));
      b |= uint64_t{BlankBytes(v)} << k;
      d |= uint64_t{DigitBytes(v)} << k;
    }
    blank[w] = b;
    digit[w] = d;
  }
  // The first "comm" and the first "rank" with a number count.
  uint8_t* at = out->at;
  uint8_t* size = out->size;
  bool takes[kInit + 1] = {false, true, true, true, true, true, true, true, true, false, false};
  Key prev = kNone;
  // Tokens are visited by a bit scan over where they start (a non-blank after a blank); each
  // one's end is the next blank bit, found from its own start, so no token waits for the one
  // before it.
  size_t tokens = 0;
  uint64_t carry = 1;  // the byte before the message counts as a blank
  for (size_t w = 0; w < used; ++w) {
    const uint64_t after_blank = (blank[w] << 1) | carry;
    carry = blank[w] >> 63;
    for (uint64_t x = ~blank[w] & after_blank; x != 0; x &= x - 1) {
      if (tokens++ == 64) break;  // as ParseCommLineByTokens()
      const size_t bit = static_cast<size_t>(std::countr_zero(x));
      const size_t pos = w * 64 + bit;
      size_t end;
      if (const uint64_t rest = blank[w] >> bit; rest != 0) {
        end = pos + static_cast<size_t>(std::countr_zero(rest));
      } else {  // the token runs into a later word; the padding word is all blanks
        end = NextBlankAfterWord(blank, w);
      }
      const size_t len = end - pos;
      const bool is_digit = ((digit[w] >> bit) & 1) != 0;
      const uint64_t word = WordAt(buf + pos, len);
      if (takes[prev]) {  // the previous key's value
        at[prev] = static_cast<uint8_t>(pos);
        size[prev] = static_cast<uint8_t>(len);
        if (prev == kComm || (prev == kRank && is_digit)) takes[prev] = false;
        prev = is_digit ? kNone : ClassifyWord({buf + pos, len}, word);
        continue;
      }
      if (is_digit) {  // a number is neither a key nor a status
        prev = kNone;
        continue;
      }
      if (len >= 5 && (word & 0xffffffffffull) == kStart) {
        out->start = true;
      } else if (len >= 8 && word == kComplete) {
        if (prev == kAbort) out->abort = true;
        if (prev == kInit) out->complete = true;
      }
      prev = ClassifyWord({buf + pos, len}, word);
    }
    if (tokens > 64) break;
  }
  return tokens <= 64;
}
#endif

#if defined(__SSE2__)
// The keys whose values are CommLine fields, in Shape::field's order.
constexpr Key kFieldKeys[] = {kComm,   kCommId, kBusId,   kRank,
                              kNranks, kNnodes, kCudaDev, kLocalRanks};
#endif

}  // namespace

CommLine ParseCommLine(std::string_view m) {
#if defined(__SSE2__)
  if (m.size() <= kFastBytes) {
    Slots slots;
    ParseShort(m, &slots);
    return FromSlots(m, slots);
  }
#endif
  return internal::ParseCommLineByTokens(m);
}

#if defined(__SSE2__)
// The shape of `m`, whose vector pass gave `slots`: false where it cannot be kept (more numbers
// than a shape holds, or a field read from a token that is not a number, such as "comm (nil)").
bool CommLineParser::Build(std::string_view m, const Slots& slots, Shape* s, Numbers* nums) {
  size_t text = 0, numbers = 0;
  for (size_t i = 0, n = m.size(); i < n;) {
    const size_t blanks = i;
    while (i < n && (m[i] == ' ' || m[i] == '\t')) ++i;
    memcpy(s->text.data() + text, m.data() + blanks, i - blanks);
    text += i - blanks;
    if (i == n) break;
    const size_t token = i;
    while (i < n && m[i] != ' ' && m[i] != '\t') ++i;
    if (internal::IsDigitChar(m[token])) {
      if (numbers == kMaxNumbers) return false;
      s->fixed_end[numbers] = static_cast<uint8_t>(text);
      nums->at[numbers] = static_cast<uint8_t>(token);
      nums->len[numbers++] = static_cast<uint8_t>(i - token);
    } else {
      memcpy(s->text.data() + text, m.data() + token, i - token);
      text += i - token;
    }
  }
  s->fixed_end[numbers] = static_cast<uint8_t>(text);
  s->numbers = static_cast<uint8_t>(numbers);
  for (size_t f = 0; f < std::size(kFieldKeys); ++f) {
    const Key k = kFieldKeys[f];
    s->field[f] = -1;
    if (slots.size[k] == 0) continue;
    for (size_t j = 0; j < numbers; ++j) {
      if (nums->at[j] == slots.at[k]) s->field[f] = static_cast<int8_t>(j);
    }
    if (s->field[f] < 0) return false;
  }
  s->start = slots.start;
  s->complete = slots.complete;
  s->abort = slots.abort;
  return true;
}

// Where the blanks (' ', '\t') of `m` (16 to kFastBytes bytes) are: bit i of blank[w] is byte
// 64w + i; bytes past the end count as blanks. SSE2 compares straight over the message, the
// last 16 bytes by a load that ends at its end (never past it).
void BlankBits(std::string_view m, uint64_t blank[kFastBytes / 64 + 1]) {
  const size_t n = m.size();
  const char* const d = m.data();
  for (size_t w = 0; w <= kFastBytes / 64; ++w) blank[w] = ~uint64_t{0};
  auto blanks_at = [&](size_t at) {
    return uint64_t{BlankBytes(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d + at)))};
  };
  auto put = [&](size_t at, uint64_t bits) {  // 16 bits for bytes [at, at + 16), at % 16 == 0
    const size_t shift = at % 64;
    blank[at / 64] = (blank[at / 64] & ~(uint64_t{0xffff} << shift)) | (bits & 0xffff) << shift;
  };
  size_t c = 0;
  for (; c + 16 <= n; c += 16) put(c, blanks_at(c));
  if (c < n) put(c, blanks_at(n - 16) >> (16 - (n - c)) | uint64_t{0xffff} << (n - c));
}

// Whether `m` (with BlankBits() `blank`) has shape `s`: its fixed text, and a number (a token
// starting with a digit, up to the next blank) where the shape has one. The fixed text around a
// number ends and starts with a blank (or the message's start and end), so a match splits `m`
// into the same tokens, of the same kinds, as the line the shape was made from: the vector
// pass would go through the same steps and read its fields from the same tokens.
bool CommLineParser::Match(const Shape& s, std::string_view m, const uint64_t* blank,
                           Numbers* nums) {
  const size_t n = m.size();
  const char* const d = m.data();
  size_t p = 0, from = 0;
  for (size_t i = 0;; ++i) {
    const size_t len = s.fixed_end[i] - from;
    if (n - p < len || !internal::Eq({d + p, len}, {s.text.data() + from, len})) return false;
    p += len;
    from = s.fixed_end[i];
    if (i == s.numbers) break;
    if (p == n || !internal::IsDigitChar(d[p])) return false;
    // The number ends at the next blank: a bit scan (hex pointers and ids are 14-18 bytes; a
    // loop over their bytes was a third of this function).
    const size_t w = p / 64, bit = p % 64;
    const uint64_t rest = blank[w] >> bit;  // bit 0 is p itself, a digit
    const size_t end = std::min(n, rest != 0 ? p + static_cast<size_t>(std::countr_zero(rest))
                                             : NextBlankAfterWord(blank, w));
    nums->at[i] = static_cast<uint8_t>(p);
    nums->len[i] = static_cast<uint8_t>(end - p);
    p = end;
  }
  return p == n;
}

// Whether `m`, as long as s.last, differs from it only where SameButNumbers() in the header
// says. 16 bytes at a time: the bytes that differ, that are blanks, that are no digits.
bool CommLineParser::SameButNumbers(const Shape& s, std::string_view m) {
  const size_t n = m.size();
  const char* const a = m.data();
  const char* const b = s.last.data();
  // Bytes [at + drop, at + 16) against the masks at bit (at + drop) % 64 of their word.
  auto chunk = [&](size_t at, unsigned drop) {
    const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + at));
    const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + at));
    const uint32_t differ =
        ~static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(va, vb))) & 0xffff;
    if (differ >> drop == 0) return true;
    const uint32_t blank = BlankBytes(va);
    const uint32_t digit = DigitBytes(va);
    const size_t pos = at + drop;
    const auto inside = static_cast<uint32_t>(s.inside[pos / 64] >> (pos % 64)) << drop;
    const auto first = static_cast<uint32_t>(s.first[pos / 64] >> (pos % 64)) << drop;
    const uint32_t bad = (differ & ~inside) | (differ & blank) | (differ & first & ~digit);
    return (bad & 0xffff) >> drop == 0;
  };
  size_t c = 0;
  for (; c + 16 <= n; c += 16) {
    if (!chunk(c, 0)) return false;
  }
  // The last bytes by a load that ends at the message's end: its first 16 - (n - c) bytes were
  // checked already.
  return c == n || chunk(n - 16, static_cast<unsigned>(16 - (n - c)));
}

CommLine CommLineParser::Read(const Shape& s, std::string_view m, const Numbers& nums) {
  CommLine out;
  auto view = [&](size_t f) {
    if (s.field[f] < 0) return std::string_view();
    const auto k = static_cast<size_t>(static_cast<uint8_t>(s.field[f]));
    return m.substr(nums.at[k], nums.len[k]);
  };
  auto integer = [&](size_t f) { return s.field[f] < 0 ? -1 : internal::ParseInt(view(f)); };
  out.ptr = view(0);
  out.comm_id = view(1);
  out.bus_id = view(2);
  out.rank = integer(3);
  out.nranks = integer(4);
  out.nnodes = integer(5);
  out.cuda_dev = integer(6);
  out.local_ranks = integer(7);
  out.start = s.start;
  out.complete = s.complete;
  out.abort = s.abort;
  return out;
}

void CommLineParser::Remember(Shape* s, std::string_view m, const Numbers& nums) {
  memcpy(s->last.data(), m.data(), m.size());
  s->last_size = m.size();
  s->inside = {};
  s->first = {};
  s->last_numbers = nums;
  for (size_t i = 0; i < s->numbers; ++i) {
    s->first[nums.at[i] / 64] |= uint64_t{1} << (nums.at[i] % 64);
    for (size_t k = nums.at[i]; k < size_t{nums.at[i]} + nums.len[i]; ++k) {
      s->inside[k / 64] |= uint64_t{1} << (k % 64);
    }
  }
}
#endif

CommLine CommLineParser::Parse(std::string_view m) {
#if defined(__SSE2__)
  // Shorter than one vector load: parsed in full ("rank 0 nranks 4", NCCL 2.3, is the only
  // such real line).
  if (m.size() > kFastBytes || m.size() < 16) return ParseCommLine(m);
  Numbers nums;
  if (count_ != 0) {
    // Most lines: the last shape again, numbers of the same lengths.
    Shape& recent = (*shapes_)[last_];
    if (m.size() == recent.last_size && SameButNumbers(recent, m)) {
      memcpy(recent.last.data(), m.data(), m.size());
      ++hits_;
      return Read(recent, m, recent.last_numbers);
    }
    uint64_t blank[kFastBytes / 64 + 1];
    BlankBits(m, blank);
    for (size_t k = 0, i = last_; k < count_; ++k, i = i + 1 == count_ ? 0 : i + 1) {
      Shape& s = (*shapes_)[i];
      if (Match(s, m, blank, &nums)) {
        Remember(&s, m, nums);
        last_ = i;
        ++hits_;
        return Read(s, m, nums);
      }
    }
  }
  Slots slots;
  const bool whole = ParseShort(m, &slots);
  Shape shape;
  if (whole && Build(m, slots, &shape, &nums)) {
    if (shapes_ == nullptr) shapes_ = std::make_unique<std::array<Shape, kShapes>>();
    Remember(&shape, m, nums);
    (*shapes_)[next_] = shape;
    last_ = next_;
    next_ = next_ + 1 == kShapes ? 0 : next_ + 1;
    if (count_ < kShapes) ++count_;
  }
  return FromSlots(m, slots);
#else
  return ParseCommLine(m);
#endif
}

namespace internal {

CommLine ParseCommLineByTokens(std::string_view m) {
  CommLine out;
  if (m.size() > kMaxCommLineBytes) m = m.substr(0, kMaxCommLineBytes);
  bool seen_comm = false;
  Key prev = kNone;
  size_t pos = 0;
  for (int guard = 0; guard < 64; ++guard) {
    const std::string_view tok = internal::NextToken(m, &pos);
    if (tok.empty()) break;
    if (prev == kComm && !seen_comm) {
      out.ptr = tok;
      seen_comm = true;
    } else if (prev == kRank && out.rank < 0) {
      out.rank = internal::ParseInt(tok);
    } else if (prev == kNranks) {
      out.nranks = internal::ParseInt(tok);
    } else if (prev == kNnodes) {
      out.nnodes = internal::ParseInt(tok);
    } else if (prev == kCudaDev) {
      out.cuda_dev = internal::ParseInt(tok);
    } else if (prev == kBusId) {
      out.bus_id = tok;
    } else if (prev == kCommId) {
      out.comm_id = tok;
    } else if (prev == kLocalRanks) {
      out.local_ranks = internal::ParseInt(tok);
    } else if (internal::StartsWith(tok, "START")) {
      out.start = true;
    } else if (internal::StartsWith(tok, "COMPLETE")) {
      if (prev == kAbort) {
        out.abort = true;
      } else if (prev == kInit) {
        out.complete = true;
      }
    }
    prev = Classify(tok);
  }
  return out;
}

}  // namespace internal

}  // namespace efawatch::nccl
