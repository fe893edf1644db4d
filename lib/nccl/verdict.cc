#include "lib/nccl/verdict.h"

#include <algorithm>

namespace efawatch::nccl {

Verdict VerdictOf(const Report& report) {
  const Summary& s = report.summary;
  Verdict v;
  v.tcp_fallback = s.tcp_fallback;
  v.tcp_deliberate = s.tcp_deliberate;
  v.loopback_misuse = s.loopback_misuse;
  v.net_plugin_missing = s.net_plugin_missing;
  v.gdr_disabled = s.gdr_disabled;
  v.network = s.network;
  v.transport = s.inter_node_transport;
  v.ofi_provider = s.ofi_provider;
  v.nccl_version = s.nccl_version;
  v.nodes_evidence = s.nodes_evidence;
  v.processes = report.processes.size();
  for (const auto& p : report.processes) {
    v.communicators += p.communicators.size();
    v.warnings += p.warnings;
    v.errors += p.errors;
  }
  return v;
}

void FillFromEarlier(Verdict& v, const Verdict& earlier) {
  v.tcp_fallback = v.tcp_fallback || earlier.tcp_fallback;
  v.tcp_deliberate = v.tcp_deliberate || earlier.tcp_deliberate;
  v.loopback_misuse = v.loopback_misuse || earlier.loopback_misuse;
  v.net_plugin_missing = v.net_plugin_missing || earlier.net_plugin_missing;
  v.gdr_disabled = v.gdr_disabled || earlier.gdr_disabled;
  // A run with no network evidence of its own yet reads as ofi_provider "none" (no OFI seen):
  // the earlier provider stands then, like any field this run has not shown.
  const bool no_network = v.network.empty() || v.network == "unknown";
  if (no_network && v.ofi_provider == "none") v.ofi_provider.clear();
  for (auto [mine, theirs] : {std::pair{&v.network, &earlier.network},
                              {&v.transport, &earlier.transport},
                              {&v.ofi_provider, &earlier.ofi_provider},
                              {&v.nccl_version, &earlier.nccl_version},
                              {&v.nodes_evidence, &earlier.nodes_evidence}}) {
    if (mine->empty() || *mine == "unknown") *mine = *theirs;
  }
  v.processes = std::max(v.processes, earlier.processes);
  v.communicators = std::max(v.communicators, earlier.communicators);
  v.warnings += earlier.warnings;
  v.errors += earlier.errors;
}

}  // namespace efawatch::nccl
