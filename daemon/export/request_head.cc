// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/request_head.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace efawatch::exporter {
namespace {

// More fields than any client of ours sends (curl sends 3, Prometheus 5): a bound on the work one
// head costs, besides its size.
constexpr size_t kMaxFields = 100;

// RFC 9110 5.6.2: tchar.
bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos;
}

bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

// Visible ASCII only: no space or control character may sit inside a target.
bool IsTargetText(absl::string_view s) {
  for (char c : s) {
    if (c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

HeadParse Bad(int status, std::string why) {
  HeadParse p;
  p.outcome = HeadParse::Outcome::kBad;
  p.status = status;
  p.why = std::move(why);
  return p;
}

// "/a/b?q" or "http://host:port/a/b?q" -> "/a/b"; nullopt for any other form.
std::optional<std::string> PathOf(absl::string_view target) {
  if (!IsTargetText(target)) return std::nullopt;
  if (absl::StartsWithIgnoreCase(target, "http://") ||
      absl::StartsWithIgnoreCase(target, "https://")) {
    target.remove_prefix(target.find("//") + 2);
    const size_t slash = target.find_first_of("/?");
    if (slash == absl::string_view::npos) return std::string("/");
    target.remove_prefix(slash);
    if (target.front() == '?') return std::string("/");
  }
  if (target.empty() || target.front() != '/') return std::nullopt;
  return std::string(target.substr(0, target.find('?')));
}

// Parses the request line into `head`; the why of a 400 (or 505) otherwise.
std::optional<HeadParse> RequestLine(absl::string_view line, RequestHead& head) {
  const std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || !IsToken(parts[0])) return Bad(400, "malformed request line");
  head.method = std::string(parts[0]);
  auto path = PathOf(parts[1]);
  if (!path) return Bad(400, "request target is not a path");
  head.path = *std::move(path);
  const absl::string_view version = parts[2];
  if (version == "HTTP/1.1") {
    head.minor_version = 1;
  } else if (version == "HTTP/1.0") {
    head.minor_version = 0;
    head.keep_alive = false;
  } else if (version.size() == 8 && absl::StartsWith(version, "HTTP/") &&
             absl::ascii_isdigit(static_cast<unsigned char>(version[5])) && version[6] == '.' &&
             absl::ascii_isdigit(static_cast<unsigned char>(version[7]))) {
    // HTTP/1.2 and up would be answered as 1.1 (RFC 9110 6.2); other majors are not HTTP/1.
    if (version[5] != '1') return Bad(505, "HTTP version not supported");
    head.minor_version = 1;
  } else {
    return Bad(400, "malformed HTTP version");
  }
  return std::nullopt;
}

// One "name: value" field into `head`.
std::optional<HeadParse> Field(absl::string_view line, RequestHead& head, bool& saw_length) {
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos || !IsToken(line.substr(0, colon))) {
    return Bad(400, "malformed header field");
  }
  const absl::string_view name = line.substr(0, colon);
  const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
  if (absl::EqualsIgnoreCase(name, "content-length")) {
    uint64_t n = 0;
    const bool digits =
        !value.empty() && value.find_first_not_of("0123456789") == absl::string_view::npos;
    if (!digits || value.size() > 18 || !absl::SimpleAtoi(value, &n)) {
      return Bad(400, "malformed Content-Length");
    }
    if (saw_length && head.content_length != n) return Bad(400, "conflicting Content-Length");
    saw_length = true;
    head.content_length = n;
  } else if (absl::EqualsIgnoreCase(name, "transfer-encoding")) {
    head.transfer_encoding = true;
  } else if (absl::EqualsIgnoreCase(name, "connection")) {
    for (absl::string_view option : absl::StrSplit(value, ',')) {
      option = absl::StripAsciiWhitespace(option);
      if (absl::EqualsIgnoreCase(option, "close")) head.keep_alive = false;
      if (absl::EqualsIgnoreCase(option, "keep-alive") && head.minor_version == 0) {
        head.keep_alive = true;
      }
    }
  } else if (absl::EqualsIgnoreCase(name, "expect")) {
    head.expect_continue = absl::EqualsIgnoreCase(value, "100-continue");
  } else if (absl::EqualsIgnoreCase(name, "authorization") && head.authorization.empty()) {
    head.authorization = std::string(value);
  }
  return std::nullopt;
}

}  // namespace

HeadParse ParseRequestHead(std::string_view text, size_t max_head_bytes) {
  const absl::string_view data(text.data(), text.size());
  size_t pos = 0;
  // Empty lines before the request line are skipped (clients may send one after a POST body).
  while (pos < data.size() && (data[pos] == '\n' || (data[pos] == '\r' && pos + 1 < data.size() &&
                                                     data[pos + 1] == '\n'))) {
    pos += data[pos] == '\r' ? 2 : 1;
  }
  HeadParse p;
  RequestHead& head = p.head;
  bool saw_line = false, saw_length = false;
  size_t fields = 0;
  while (true) {
    const size_t nl = data.find('\n', pos);
    if (nl == absl::string_view::npos || nl + 1 > max_head_bytes) {
      if (data.size() > max_head_bytes || (nl != absl::string_view::npos)) {
        return Bad(431, "request head too large");
      }
      return HeadParse{};  // incomplete
    }
    absl::string_view line = data.substr(pos, nl - pos);
    pos = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != absl::string_view::npos || line.find('\0') != absl::string_view::npos) {
      return Bad(400, "stray CR or NUL in the request head");
    }
    if (!saw_line) {
      if (auto bad = RequestLine(line, head)) return *bad;
      saw_line = true;
      continue;
    }
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') return Bad(400, "folded header field");
    if (++fields > kMaxFields) return Bad(431, "too many header fields");
    if (auto bad = Field(line, head, saw_length)) return *bad;
  }
  if (head.transfer_encoding && saw_length) {
    return Bad(400, "both Content-Length and Transfer-Encoding");
  }
  head.size = pos;
  p.outcome = HeadParse::Outcome::kComplete;
  return p;
}

}  // namespace efawatch::exporter
