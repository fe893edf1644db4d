// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace efawatch::exporter {

/// The bearer token a file holds, for `Authorization: Bearer <token>` checks. The file is read at
/// every check, so a rotated token works at once without a restart, however it was replaced (a
/// Kubernetes Secret update swaps a symlink, an editor writes in place). A stat-based cache would
/// miss an in-place rewrite of the same size within one timestamp tick; the file is small and a
/// check happens once a scrape, so reading it is the simpler and exact choice. Surrounding
/// whitespace (a trailing newline) is not part of the token.
///
/// Fails closed: while the file is missing, unreadable or empty every request is refused, so
/// deleting the file revokes access. Changes are logged once each. The class is thread-safe.
class BearerTokenFile {
 public:
  /// InvalidArgument when the file cannot be read or holds no token.
  static absl::StatusOr<std::unique_ptr<BearerTokenFile>> Create(std::string path);

  /// True when `authorization` (an Authorization header's value) is "Bearer <the current token>".
  /// The scheme is matched without regard to case (RFC 7235), the token in constant time.
  bool Allows(std::string_view authorization);

 private:
  explicit BearerTokenFile(std::string path) : path_(std::move(path)) {}
  // The file's token now ("" when there is none). Needs mu_.
  std::string Read();

  const std::string path_;
  std::mutex mu_;
  std::string last_;  // guarded by mu_; the token last read, to log changes once
};

}  // namespace efawatch::exporter
