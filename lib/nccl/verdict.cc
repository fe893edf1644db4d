// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/verdict.h"

#include <algorithm>

#include "lib/nccl/types.h"

namespace efawatch::nccl {
namespace {

std::string NodesText(const Verdict& v) {
  std::string t;
  if (v.ranks > 0) t += std::to_string(v.ranks) + " ranks";
  if (v.nodes > 0) t += (t.empty() ? "" : " on ") + std::to_string(v.nodes) + " nodes";
  return t.empty() ? std::string("the job uses") : t + " use";
}

// Where the job's traffic goes, as far as the log shows it.
std::string Where(const Verdict& v) {
  const bool ofi = v.family == NetFamily::kOFI;
  std::string where;
  if (v.transport == "none(single node)") {
    where = "single node, no inter-node traffic";
  } else if (v.nodes_evidence == NodesEvidence::kUnknown) {
    where = "node count unknown (the log does not show how many nodes the job spans)";
    if (!v.network.empty()) {
      where += ", network " + v.network;
      if (ofi) where += " (" + v.ofi_provider + ")";
    }
  } else if (v.transport == "unknown") {
    where = "inter-node transport unknown (the log does not show it)";
  } else {
    where = "inter-node traffic on " + v.transport;
    if (ofi) where += " (" + v.ofi_provider + ")";
    if (v.gdr != Gdr::kUnknown) where += ", GDR " + std::string(NameOf(v.gdr));
  }
  return where;
}

}  // namespace

std::string VerdictHeadline(const Verdict& v) {
  const std::string tcp_net = v.family == NetFamily::kOFI
                                  ? "the OFI provider '" + v.ofi_provider + "' (TCP)"
                                  : std::string("NET/Socket");
  if (v.tcp_certain) {
    return "TCP FALLBACK: " + NodesText(v) + " " + tcp_net +
           " for inter-node traffic instead of EFA/IB RDMA";
  }
  if (v.loopback_certain) {
    return "LOOPBACK: " + NodesText(v) + " the loopback interface between nodes";
  }
  if (!v.failure.empty()) return "FAILED: " + v.failure;
  const std::string where = Where(v);
  std::string warnings;
  for (const std::string& kind : v.warning_kinds) {
    warnings += (warnings.empty() ? "" : ", ") + kind;
  }
  if (v.tcp_fallback && !v.tcp_suspected) {
    return "TCP (DELIBERATE): " + where + "; warnings: " + warnings;
  }
  if (v.tcp_fallback) {
    if (v.tcp_deliberate) {
      return "TCP (DELIBERATE, SUSPECTED): " + tcp_net + " is selected by configuration; " + where +
             "; warnings: " + warnings;
    }
    return "SUSPECTED TCP FALLBACK: " + tcp_net + " is selected; " + where +
           "; warnings: " + warnings;
  }
  if (!warnings.empty()) return "WARNING: " + where + "; " + warnings;
  // Without transport evidence there is nothing to call OK; an RDMA net selected on a node of
  // unknown count is (a TCP or loopback net always leaves a warning above).
  if (v.transport == "unknown") {
    const bool rdma = v.family == NetFamily::kIB || v.family == NetFamily::kOFI;
    if (v.nodes_evidence == NodesEvidence::kUnknown && rdma) return "OK: " + where;
    return "UNKNOWN: " + where;
  }
  return "OK: " + where;
}

std::string ReportHeadline(const Report& report) {
  if (!report.HasNcclOutput()) {
    return "NO NCCL OUTPUT: " + std::to_string(report.summary.lines) +
           " lines read, none from NCCL; set NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) in "
           "the job's environment, or give the file NCCL_DEBUG_FILE names";
  }
  return VerdictHeadline(report.summary.verdict);
}

void FillFromEarlier(Verdict& v, const Verdict& earlier) {
  for (auto [mine, theirs] : {std::pair{&v.tcp_fallback, &earlier.tcp_fallback},
                              {&v.tcp_certain, &earlier.tcp_certain},
                              {&v.tcp_suspected, &earlier.tcp_suspected},
                              {&v.tcp_deliberate, &earlier.tcp_deliberate},
                              {&v.loopback_misuse, &earlier.loopback_misuse},
                              {&v.loopback_certain, &earlier.loopback_certain},
                              {&v.net_plugin_missing, &earlier.net_plugin_missing},
                              {&v.gdr_disabled, &earlier.gdr_disabled}}) {
    *mine = *mine || *theirs;
  }
  // A run with no network evidence of its own yet reads as ofi_provider "none" (no OFI seen):
  // the earlier provider stands then, like any field this run has not shown.
  const bool no_network = v.network.empty() || v.network == "unknown";
  if (no_network && v.ofi_provider == "none") v.ofi_provider.clear();
  for (auto [mine, theirs] : {std::pair{&v.network, &earlier.network},
                              {&v.transport, &earlier.transport},
                              {&v.ofi_provider, &earlier.ofi_provider},
                              {&v.nccl_version, &earlier.nccl_version},
                              {&v.failure, &earlier.failure}}) {
    if (mine->empty() || *mine == "unknown") *mine = *theirs;
  }
  if (v.family == NetFamily::kUnknown) v.family = earlier.family;
  if (v.gdr == Gdr::kUnknown) v.gdr = earlier.gdr;
  if (v.nodes_evidence == NodesEvidence::kUnknown) v.nodes_evidence = earlier.nodes_evidence;
  for (const std::string& kind : earlier.warning_kinds) {
    if (std::ranges::find(v.warning_kinds, kind) == v.warning_kinds.end()) {
      v.warning_kinds.push_back(kind);
    }
  }
  v.nodes = std::max(v.nodes, earlier.nodes);
  v.ranks = std::max(v.ranks, earlier.ranks);
  v.processes = std::max(v.processes, earlier.processes);
  v.communicators = std::max(v.communicators, earlier.communicators);
  v.warnings += earlier.warnings;
  v.errors += earlier.errors;
}

}  // namespace efawatch::nccl
