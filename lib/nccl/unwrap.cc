// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/unwrap.h"

#include <cstdint>
#include <cstring>

#include "lib/nccl/text_util.h"

namespace efawatch::nccl {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool Digits(std::string_view s, size_t at, size_t n) {
  if (s.size() < at + n) return false;
  for (size_t i = at; i < at + n; ++i) {
    if (!IsDigit(s[i])) return false;
  }
  return true;
}

// UTF-8 box drawing (U+2500..U+257F) is E2 94 xx / E2 95 xx.
size_t BoxCharAt(std::string_view s, size_t i) {
  if (i + 3 <= s.size() && static_cast<unsigned char>(s[i]) == 0xE2 &&
      (static_cast<unsigned char>(s[i + 1]) == 0x94 ||
       static_cast<unsigned char>(s[i + 1]) == 0x95)) {
    return 3;
  }
  return 0;
}

bool BoxCharEndsAt(std::string_view s) { return s.size() >= 3 && BoxCharAt(s, s.size() - 3) == 3; }

void RemoveAnsi(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    // The text between escape sequences is copied in one piece, not byte by byte: coloured
    // consoles put a few codes on long lines.
    const void* esc = memchr(in.data() + i, '\x1b', in.size() - i);
    const size_t e =
        esc == nullptr ? in.size() : static_cast<size_t>(static_cast<const char*>(esc) - in.data());
    out->append(in.data() + i, e - i);
    if (e == in.size()) break;
    i = e + 1;
    if (i < in.size() && in[i] == '[') {
      // CSI: parameters and intermediates, then one final byte in 0x40..0x7E.
      ++i;
      while (i < in.size() && !(in[i] >= 0x40 && in[i] <= 0x7E)) ++i;
      if (i < in.size()) ++i;
    } else if (i < in.size() && in[i] == ']') {
      // OSC: up to BEL or ESC backslash.
      while (i < in.size() && in[i] != '\x07' && in[i] != '\x1b') ++i;
      if (i < in.size()) ++i;
    } else if (i < in.size()) {
      ++i;
    }
  }
}

// "[1,23]<stdout>:" / "[1,0]<stderr>:"
size_t MpiTagLength(std::string_view s) {
  if (s.empty() || s[0] != '[') return 0;
  size_t close = s.find("]<", 0);
  if (close == std::string_view::npos || close > 24) return 0;
  for (size_t i = 1; i < close; ++i) {
    if (!IsDigit(s[i]) && s[i] != ',') return 0;
  }
  std::string_view rest = s.substr(close + 1);
  for (std::string_view tag : {"<stdout>:", "<stderr>:"}) {
    if (rest.substr(0, tag.size()) == tag) return close + 1 + tag.size();
  }
  return 0;
}

// "(RayTrainWorker pid=83498) ", "(pid=21775, ip=10.221.0.5) "
size_t RayPrefixLength(std::string_view s) {
  if (s.empty() || s[0] != '(') return 0;
  size_t close = s.find(')');
  if (close == std::string_view::npos || close > 160) return 0;
  if (s.substr(0, close).find("pid=") == std::string_view::npos) return 0;
  return close + 1;
}

// Ray's log deduplication (on by default, off with RAY_DEDUP_LOGS=0) prints one line for many
// similar ones and appends " [repeated <N>x across cluster]"; the first such line also gets a
// hint in parentheses. Removes both and returns N through `repeated`; N is never part of the
// record's text (it would read as a field of the NCCL message).
std::string_view StripRayRepeat(std::string_view line, uint64_t* repeated) {
  constexpr std::string_view kHint = " (Ray deduplicates logs";
  constexpr std::string_view kHead = " [repeated ";
  constexpr std::string_view kTail = "x across cluster]";
  if (line.ends_with(')')) {
    // Ray prints the hint right after the suffix's ']', with the first folded line only. Found
    // from that ']' back, not by searching the whole line for the hint: one line in fifteen of
    // an NCCL log ends in ')' ("... (v4)", "... (found 4 nics)").
    if (const void* close = memrchr(line.data(), ']', line.size()); close != nullptr) {
      const auto at = static_cast<size_t>(static_cast<const char*>(close) - line.data()) + 1;
      if (line.substr(at).starts_with(kHint)) line = line.substr(0, at);
    }
  }
  while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
  if (!line.ends_with(kTail)) return line;
  const size_t head = line.rfind(kHead);
  if (head == std::string_view::npos) return line;
  const size_t digits = head + kHead.size();
  const size_t end = line.size() - kTail.size();
  if (end <= digits || end - digits > 9 || !Digits(line, digits, end - digits)) return line;
  uint64_t n = 0;
  for (size_t i = digits; i < end; ++i) n = n * 10 + static_cast<uint64_t>(line[i] - '0');
  *repeated = n;
  return line.substr(0, head);
}

}  // namespace

size_t TimestampLength(std::string_view s) {
  // YYYY-MM-DD
  if (!Digits(s, 0, 4) || s.size() < 10 || s[4] != '-' || !Digits(s, 5, 2) || s[7] != '-' ||
      !Digits(s, 8, 2)) {
    return 0;
  }
  size_t i = 10;
  if (i >= s.size() || (s[i] != 'T' && s[i] != ' ')) return i;
  if (!Digits(s, i + 1, 2) || s.size() < i + 6 || s[i + 3] != ':' || !Digits(s, i + 4, 2)) {
    return i;
  }
  i += 6;
  if (i + 3 <= s.size() && s[i] == ':' && Digits(s, i + 1, 2)) i += 3;
  if (i < s.size() && (s[i] == '.' || s[i] == ',') && i + 1 < s.size() && IsDigit(s[i + 1])) {
    ++i;
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i + 6 <= s.size() && (s[i] == '+' || s[i] == '-') && Digits(s, i + 1, 2) &&
             s[i + 3] == ':' && Digits(s, i + 4, 2)) {
    i += 6;
  }
  return i;
}

bool ParseCri(std::string_view line, CriRecord* out) {
  if (line.empty() || !IsDigit(line[0])) return false;
  std::string_view time, rest;
  if (!internal::Split(line, " ", &time, &rest) || time.size() < 20 || time.size() > 40) {
    return false;
  }
  if (TimestampLength(line) != time.size() || line[10] != 'T') return false;
  if (rest.size() < 8) return false;
  std::string_view stream = rest.substr(0, 6);
  if (stream != "stdout" && stream != "stderr") return false;
  if (rest[6] != ' ' || (rest[7] != 'P' && rest[7] != 'F')) return false;
  if (rest.size() > 8 && rest[8] != ' ') return false;
  out->time = time;
  out->stream = stream;
  out->partial = rest[7] == 'P';
  out->text = rest.size() > 9 ? rest.substr(9) : std::string_view();
  return true;
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool Hex4(std::string_view s, size_t at, uint32_t* v) {
  if (s.size() < at + 4) return false;
  *v = 0;
  for (size_t i = at; i < at + 4; ++i) {
    int h = HexValue(s[i]);
    if (h < 0) return false;
    *v = (*v << 4) | static_cast<uint32_t>(h);
  }
  return true;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

bool ParseDockerJson(std::string_view line, std::string* text, bool* partial) {
  if (line.empty() || line[0] != '{') return false;
  constexpr std::string_view kKey = "\"log\":";
  size_t k = line.find(kKey);
  if (k == std::string_view::npos) return false;
  size_t i = k + kKey.size();
  while (i < line.size() && line[i] == ' ') ++i;
  if (i >= line.size() || line[i] != '"') return false;
  ++i;
  text->clear();
  while (i < line.size()) {
    char c = line[i];
    if (c == '"') {
      *partial = text->empty() || text->back() != '\n';
      while (!text->empty() && (text->back() == '\n' || text->back() == '\r')) text->pop_back();
      return true;
    }
    if (c != '\\') {
      // The text up to the next quote or escape in one piece: a record is mostly plain text.
      const size_t e = internal::FindEitherByte(line.data(), line.size(), i + 1, '"', '\\');
      text->append(line.data() + i, e - i);
      i = e;
      continue;
    }
    if (i + 1 >= line.size()) return false;
    char e = line[i + 1];
    i += 2;
    switch (e) {
      case 'n':
        text->push_back('\n');
        break;
      case 't':
        text->push_back('\t');
        break;
      case 'r':
        text->push_back('\r');
        break;
      case 'b':
        text->push_back('\b');
        break;
      case 'f':
        text->push_back('\f');
        break;
      case '/':
      case '\\':
      case '"':
        text->push_back(e);
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!Hex4(line, i, &cp)) return false;
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          uint32_t lo = 0;
          if (i + 6 <= line.size() && line[i] == '\\' && line[i + 1] == 'u' &&
              Hex4(line, i + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        AppendUtf8(cp, text);
        break;
      }
      default:
        return false;
    }
  }
  return false;  // no closing quote
}

std::string_view CleanLine(std::string_view line, std::string* scratch, bool may_hold_ansi,
                           RayWrapping* ray) {
  if (may_hold_ansi && !line.empty() && memchr(line.data(), '\x1b', line.size()) != nullptr) {
    RemoveAnsi(line, scratch);
    line = *scratch;
  }
  // The common line needs no cleaning. Checked first, as every line comes here.
  if (IsCleanAsIs(line)) return line;
  // Starting and ending the same way but for a final ']' or ')': at most Ray's suffix to strip.
  if (!line.empty()) {
    const unsigned char first = static_cast<unsigned char>(line.front()) | 0x20;
    const unsigned char last = static_cast<unsigned char>(line.back());
    if (first >= 'a' && first <= 'z' && (last == ']' || last == ')')) {
      uint64_t repeated = 0;
      line = StripRayRepeat(line, &repeated);
      if (ray != nullptr && repeated != 0) ray->repeated = repeated;
      return line;
    }
  }
  // Trailing: newline, CR, padding, TUI frames.
  for (;;) {
    if (!line.empty() &&
        (line.back() == '\r' || line.back() == '\n' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    } else if (BoxCharEndsAt(line)) {
      line.remove_suffix(3);
    } else {
      break;
    }
  }
  if (line.ends_with(']') || line.ends_with(')')) {
    uint64_t repeated = 0;
    line = StripRayRepeat(line, &repeated);
    if (ray != nullptr && repeated != 0) ray->repeated = repeated;
  }
  // Leading wrappers; a few rounds because they nest ("  | <time> | [1,0]<stdout>:").
  for (int round = 0; round < 6; ++round) {
    size_t i = 0;
    for (;;) {
      if (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
        ++i;
      } else if (size_t b = BoxCharAt(line, i); b != 0) {
        i += b;
      } else if (line.substr(i).starts_with("\xEF\xBB\xBF")) {
        i += 3;  // a byte-order mark (a file saved by a Windows editor): else part of the host
      } else {
        break;
      }
    }
    line.remove_prefix(i);
    if (line.empty()) break;
    size_t n = 0;
    if (line[0] == '|') {
      n = 1;
    } else if (IsDigit(line[0])) {
      n = TimestampLength(line);
      if (n != 0 && n < 16) n = 0;  // a bare date is not a wrapper
    } else if (line[0] == '[') {
      n = MpiTagLength(line);
    } else if (line[0] == '(') {
      n = RayPrefixLength(line);
      if (n != 0 && ray != nullptr) ray->prefix = line.substr(0, n);
    }
    if (n == 0) break;
    line.remove_prefix(n);
  }
  return line;
}

std::string_view RayPrefixBefore(std::string_view before_record) {
  while (!before_record.empty() && (before_record.back() == ' ' || before_record.back() == '\t')) {
    before_record.remove_suffix(1);
  }
  if (before_record.empty() || before_record.back() != ')') return {};
  const size_t open = before_record.rfind('(');
  if (open == std::string_view::npos) return {};
  const std::string_view prefix = before_record.substr(open);
  return RayPrefixLength(prefix) == prefix.size() ? prefix : std::string_view();
}

bool IsRayMarkerLine(std::string_view line) {
  if (line.empty() || line[0] != ':') return false;
  for (std::string_view m :
       {":task_name:", ":actor_name:", ":job_id:", ":task_attempt_start:", ":task_attempt_end:"}) {
    if (line.starts_with(m)) return true;
  }
  return false;
}

void PartialJoiner::AddPartial(std::string_view piece) {
  size_t room = max_bytes_ > buffer_.size() ? max_bytes_ - buffer_.size() : 0;
  if (piece.size() > room) {
    piece = piece.substr(0, room);
    truncated_ = true;
  }
  buffer_.append(piece);
}

std::string_view PartialJoiner::Complete(std::string_view last, bool* truncated) {
  if (buffer_.empty() && !truncated_) {
    *truncated = false;
    return last;
  }
  AddPartial(last);
  *truncated = truncated_;
  truncated_ = false;
  joined_.swap(buffer_);
  buffer_.clear();
  return joined_;
}

}  // namespace efawatch::nccl
