// Built in every configuration: analyzing a log needs no GPU, so it is tested everywhere.

#include <fstream>
#include <set>

#include "lib/nccl/analyzer.h"
#include "probes/collective/nccl_backend.h"

namespace efawatch::collective {

v1::NcclObservation ObserveNcclLog(const std::filesystem::path& path, uint64_t offset) {
  v1::NcclObservation o;
  o.set_log_file(path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) return o;
  in.seekg(static_cast<std::streamoff>(offset));
  nccl::Analyzer analyzer;
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) analyzer.Feed(path.filename().string(), ++n, line);
  const nccl::Report report = analyzer.Snapshot();
  const nccl::Summary& s = report.summary;
  o.set_nccl_version(s.nccl_version);
  o.set_network(s.network);
  o.set_transport(s.inter_node_transport);
  o.set_ofi_provider(s.ofi_provider);
  o.set_tcp_fallback(s.tcp_fallback);
  o.set_loopback_misuse(s.loopback_misuse);
  std::set<std::string> kinds;
  for (const auto& f : report.findings) kinds.insert(f.kind);
  for (const auto& k : kinds) o.add_findings(k);
  return o;
}

}  // namespace efawatch::collective
