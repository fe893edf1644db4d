// SPDX-License-Identifier: Apache-2.0
// Built in every configuration: analyzing a log needs no GPU, so it is tested everywhere.

#include <fstream>
#include <set>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/verdict.h"
#include "probes/collective/nccl_backend.h"

namespace efawatch::collective {

NcclObservation ObserveNcclLog(const std::filesystem::path& path, uint64_t offset) {
  NcclObservation o;
  o.log_file = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return o;
  in.seekg(static_cast<std::streamoff>(offset));
  nccl::Analyzer analyzer;
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) analyzer.Feed(path.filename().string(), ++n, line);
  const nccl::Report report = analyzer.Snapshot();
  o.verdict = report.summary.verdict;
  std::set<std::string> kinds;
  for (const auto& f : report.findings) kinds.insert(f.kind);
  for (const auto& k : kinds) o.findings.push_back(k);
  return o;
}

}  // namespace efawatch::collective
