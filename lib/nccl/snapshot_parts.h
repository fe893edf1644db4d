// SPDX-License-Identifier: Apache-2.0
#pragma once

// The parts of Analyzer::Snapshot (snapshot.cc), each in its own file: per-process facts and the
// node-count reasoning of a scope (scope.cc), the findings (findings.cc). Internal to lib/nccl.

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "lib/nccl/state.h"
#include "lib/nccl/types.h"

namespace efawatch::nccl::internal {

// Per-process facts derived once.
struct Derived {
  const ProcState* p = nullptr;
  std::string version;
  std::string cuda;
  std::string network;
  std::string family;
  std::string provider;
  bool provider_inferred = false;
  std::string gdr;  // on / off / partial / unknown
  bool hmem_needs_rdma = false;
  bool tcp = false;
  bool socket_channels = false;
  bool net_channels = false;
  // `network` is Socket on the NET/Socket interface list alone (DiscountSocketListings).
  bool socket_by_listing = false;
  int scope = 0;
};

// What a scope (all processes, or one source) proves about the number of nodes the job spans.
// Rules are tried in tiers (docs/nccl-findings.md, "Node count"): all ranks in one process; then
// the proofs of several nodes; then the proofs of one node; then host names, the weakest.
enum class NodeCount { kUnknown, kSingle, kMulti };

struct Scope {
  std::vector<Derived*> procs;
  std::vector<const SourceState*> sources;
  NodeCount count = NodeCount::kUnknown;
  std::string rule;  // the rule that decided `count`
  Ev proof;          // the line it rests on
  int nodes = -1;
  int ranks = -1;
  bool any_net_channels = false;
  bool any_socket_channels = false;
  std::string inter_node;

  bool single() const { return count == NodeCount::kSingle; }
  bool multi() const { return count == NodeCount::kMulti; }
};

/// The first of `evs` that is set, else the first.
inline const Ev& FirstSet(std::initializer_list<const Ev*> evs) {
  for (const Ev* e : evs) {
    if (e->set()) return *e;
  }
  return **evs.begin();
}

/// The facts of one process. `socket_listing_counts`: whether NCCL's Socket interface list alone
/// selects the Socket net (DiscountSocketListings decides it per scope).
Derived Derive(const State& st, const ProcState& p, bool socket_listing_counts = true);
/// Decides what the scope proves about its node count (docs/nccl-findings.md, "Node count").
void AnalyzeScope(Scope* s);
/// The scope's inter-node transport: "NET/Socket", "NET/IB", "none(single node)", "unknown", ...
std::string ScopeInterNode(const Scope& s);
/// The evidence record of an analyzer line reference.
Evidence ToEvidence(const State& st, const Ev& ev);
/// Every finding of the processes (each judged in its scope) and of the sources, in order.
void AddFindings(const State& st, std::map<int, Scope>& scopes, const std::vector<Derived>& derived,
                 std::vector<Finding>* out);

}  // namespace efawatch::nccl::internal
