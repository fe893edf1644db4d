// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/bearer_token.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/common/read_file.h"
#include "spdlog/spdlog.h"

namespace efawatch::exporter {
namespace {

// Compares in time that depends on the lengths only, so a caller cannot learn the token a byte
// at a time from how long a refusal takes.
bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<BearerTokenFile>> BearerTokenFile::Create(std::string path) {
  std::unique_ptr<BearerTokenFile> f(new BearerTokenFile(std::move(path)));
  std::lock_guard lock(f->mu_);
  if (f->Read().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-bearer-token-file=", f->path_, ": holds no token"));
  }
  return f;
}

std::string BearerTokenFile::Read() {
  auto text = common::ReadWholeFile(path_);
  std::string token = text.ok() ? std::string(absl::StripAsciiWhitespace(*text)) : "";
  if (token != last_) {
    if (token.empty()) {
      spdlog::warn("metrics: bearer token file {} is missing or empty: every scrape is refused",
                   path_);
    } else {
      spdlog::info("metrics: bearer token {} from {}", last_.empty() ? "read" : "changed", path_);
    }
    last_ = token;
  }
  return token;
}

bool BearerTokenFile::Allows(std::string_view authorization) {
  // Debian's abseil has its own string_view, not std's.
  const absl::string_view header(authorization.data(), authorization.size());
  constexpr absl::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(header.substr(0, kScheme.size()), kScheme)) {
    return false;
  }
  const absl::string_view stripped = absl::StripAsciiWhitespace(header.substr(kScheme.size()));
  const std::string_view given(stripped.data(), stripped.size());
  std::lock_guard lock(mu_);
  const std::string token = Read();
  return !token.empty() && ConstantTimeEqual(given, token);
}

}  // namespace efawatch::exporter
