// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/nccl/record_scanner.h"
#include "lib/nccl/unwrap.h"

// Cuts one job's log into the share each node's agent would see: one piece per host name of
// the NCCL records (the first record of a line decides). nccl-tests placement lines
// ("#  Rank 3 ... on HOST device 3") go to HOST. Lines that name no host (version banners,
// launcher output, blank lines before WARNs) go to every piece, as context the job shares.
// Used by split_test.cc and by the split_by_host tool (split_by_host_main.cc).
namespace efawatch::nccl::testing {

// The host a line belongs to, or "" when it names none.
inline std::string HostOfLine(std::string_view raw) {
  std::string scratch;
  std::string_view line = CleanLine(raw, &scratch);
  // Container runtimes wrap the text; CleanLine does not unwrap CRI or docker json-file records,
  // but the record scanner finds records anywhere in the line.
  std::vector<Record> records;
  FindRecords(line, &records);
  for (const Record& r : records) {
    if (!r.host.empty()) return std::string(r.host);
  }
  if (!line.empty() && line[0] == '#' && line.find(" Rank ") != std::string_view::npos) {
    size_t on = line.find(" on ");
    size_t device = line.find(" device ");
    if (on != std::string_view::npos && device != std::string_view::npos && device > on) {
      std::string_view host = line.substr(on + 4, device - on - 4);
      while (!host.empty() && host.front() == ' ') host.remove_prefix(1);
      while (!host.empty() && host.back() == ' ') host.remove_suffix(1);
      return std::string(host);
    }
  }
  return "";
}

// Host name -> the lines of its piece, in the order of the log.
inline std::map<std::string, std::vector<std::string>> SplitByHost(
    const std::vector<std::string>& lines) {
  std::vector<std::pair<std::string, const std::string*>> tagged;
  std::map<std::string, std::vector<std::string>> pieces;
  for (const std::string& l : lines) {
    std::string host = HostOfLine(l);
    if (!host.empty()) pieces[host];
    tagged.emplace_back(std::move(host), &l);
  }
  for (const auto& [host, line] : tagged) {
    if (!host.empty()) {
      pieces[host].push_back(*line);
    } else {
      for (auto& [h, piece] : pieces) piece.push_back(*line);
    }
  }
  return pieces;
}

}  // namespace efawatch::nccl::testing
