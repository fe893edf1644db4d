// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace efawatch::exporter {

/// The head of one HTTP/1.0 or 1.1 request (RFC 9112: request line, header fields, blank line),
/// reduced to what the plain-HTTP transport acts on. Only origin-form ("/path?query") and
/// absolute-form ("http://host/path") targets are taken, as Prometheus, the kubelet and curl send.
struct RequestHead {
  std::string method;
  std::string path;  // the target's path, without query string
  int minor_version = 1;
  std::optional<uint64_t> content_length;
  bool transfer_encoding = false;  // any Transfer-Encoding: the transport reads no such body
  bool keep_alive = true;          // HTTP/1.1 unless "Connection: close"; 1.0 only with keep-alive
  bool expect_continue = false;    // "Expect: 100-continue"
  std::string authorization;       // the first Authorization field, empty when absent
  size_t size = 0;                 // bytes of the head, its blank line included
};

struct HeadParse {
  enum class Outcome { kIncomplete, kComplete, kBad };
  Outcome outcome = Outcome::kIncomplete;
  RequestHead head;  // kComplete
  int status = 0;    // kBad: the answer's status (400, 431 or 505)
  std::string why;   // kBad: for the answer's body
};

/// Parses the head at the start of `data` (a connection's bytes so far). kIncomplete while the
/// blank line has not arrived and `data` is within `max_head_bytes`; over it, 431. Strict where
/// leniency lets two parsers read one request differently (request smuggling): whitespace before
/// a field's colon, folded lines, a bare CR, Content-Length and Transfer-Encoding together, or two
/// different Content-Lengths are all 400. Empty lines before the request line are skipped (RFC
/// 9112 2.2), and a line may end in LF alone.
HeadParse ParseRequestHead(std::string_view data, size_t max_head_bytes);

}  // namespace efawatch::exporter
