// SPDX-License-Identifier: Apache-2.0
// Derives the report from the analyzer state: the processes, their scopes (scope.cc), the
// findings (findings.cc) and the summary with its verdict. Runs at Snapshot() time only.

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/snapshot_parts.h"
#include "lib/nccl/text_util.h"

namespace efawatch::nccl {

using internal::CommState;
using internal::Derived;
using internal::ProcState;
using internal::Scope;
using internal::State;

bool Report::Has(std::string_view kind) const {
  for (const Finding& f : findings) {
    if (f.kind == kind && f.severity != Severity::kInfo) return true;
  }
  return false;
}

bool Report::HasNcclOutput() const {
  return summary.nccl_lines > 0 || !processes.empty() || !findings.empty();
}

Severity Report::MaxSeverity() const {
  Severity s = Severity::kInfo;
  for (const Finding& f : findings) s = std::max(s, f.severity);
  return s;
}

namespace {

template <typename T>
std::string MostCommon(const std::vector<T>& items) {
  std::map<std::string, int> counts;
  std::string best;
  int best_count = 0;
  for (const auto& i : items) {
    if (i.empty()) continue;
    int c = ++counts[i];
    if (c > best_count) {
      best_count = c;
      best = i;
    }
  }
  return best;
}

}  // namespace

namespace {

std::vector<Derived> DeriveAll(const State& st) {
  // Ordered by host, pid, source and last by the process key ("host:pid" as printed, e.g.
  // "node:04101" and "node:4101"): a total order, since the table's iteration order differs
  // from one analyzer to the next (a fuzzed log with two such keys came out in either order).
  std::vector<std::pair<const std::string*, const ProcState*>> procs;
  procs.reserve(st.procs.size());
  for (const auto& [key, p] : st.procs) procs.emplace_back(&key, p.get());
  std::sort(procs.begin(), procs.end(), [](const auto& x, const auto& y) {
    const ProcState* a = x.second;
    const ProcState* b = y.second;
    if (a->host != b->host) return a->host < b->host;
    if (a->pid != b->pid) return a->pid < b->pid;
    if (a->source != b->source) return a->source < b->source;
    return *x.first < *y.first;
  });
  std::vector<Derived> derived;
  derived.reserve(procs.size());
  for (const auto& [key, p] : procs) derived.push_back(Derive(st, *p));
  return derived;
}

// NCCL 2.4 prints the NET/Socket interface list in every process whatever net it then selects
// (2.4.2-2.4.7 bootstrap over the Socket net), and an excerpt may keep a process's list and lose
// its "NET/IB : Using" line. So where a process of the scope selects another net (IB, OFI ...)
// and prints the list too, showing that this job's NCCL prints it whatever it selects, a list
// alone is no Socket selection: those processes are derived again without it. A process that
// shows IB failing ("NET/IB : No device found") or sockets asked for (NCCL_IB_DISABLE=1,
// NCCL_NET=Socket) keeps it: there the list is the Socket net's.
void DiscountSocketListings(const State& st, Scope* s) {
  bool witness = false;
  for (const Derived* d : s->procs) {
    if (d->p->socket_using && !d->socket_by_listing && !d->family.empty() && !d->tcp) {
      witness = true;
    }
  }
  if (!witness) return;
  for (Derived* d : s->procs) {
    const ProcState& p = *d->p;
    if (!d->socket_by_listing || p.ib_no_device || p.ev_ib_disable.set()) continue;
    const int scope = d->scope;
    *d = Derive(st, p, false);
    d->scope = scope;
  }
}

// One scope per source (--group-by-source) or one for everything; each decides its node count.
std::map<int, Scope> BuildScopes(const State& st, std::vector<Derived>& derived) {
  std::map<int, Scope> scopes;
  for (Derived& d : derived) {
    d.scope = st.options.group_by_source ? static_cast<int>(d.p->source) : 0;
    scopes[d.scope].procs.push_back(&d);
  }
  for (size_t i = 0; i < st.sources.size(); ++i) {
    int key = st.options.group_by_source ? static_cast<int>(i) : 0;
    scopes[key].sources.push_back(st.sources[i].get());
  }
  for (auto& [key, s] : scopes) {
    DiscountSocketListings(st, &s);
    AnalyzeScope(&s);
    s.inter_node = ScopeInterNode(s);
  }
  return scopes;
}

std::string PluginState(const ProcState& p) {
  if (p.plugin_init_failed) return "init_failed";
  if (p.plugin_loaded) return "loaded";
  if (p.plugin_abi_mismatch) return "abi_mismatch";
  if (p.plugin_not_found) return "not_found";
  return "";
}

Communicator CommunicatorOf(const CommState& c, const Scope& s) {
  Communicator oc;
  oc.id = c.comm_id.empty() ? c.ptr : c.comm_id;
  oc.has_comm_id = !c.comm_id.empty();
  oc.rank = c.rank;
  oc.nranks = c.nranks;
  oc.nnodes = c.nnodes;
  if (oc.nnodes < 0 && s.nodes > 0) oc.nnodes = s.nodes;
  oc.cuda_dev = c.cuda_dev;
  oc.bus_id = c.bus_id;
  oc.init_complete = c.complete;
  oc.aborted = c.aborted;
  oc.transports = c.transports;
  return oc;
}

Process ProcessOf(const State& st, const Derived& d, const Scope& s, bool communicators) {
  const ProcState& p = *d.p;
  Process out;
  out.host = p.host;
  out.pid = p.pid;
  out.source = st.sources[p.source]->name;
  out.nccl_version = d.version;
  out.cuda_version = d.cuda;
  out.net_plugin_state = PluginState(p);
  out.net_plugin = !p.plugin_name.empty()                ? p.plugin_name
                   : !p.ofi_plugin_name.empty()          ? p.ofi_plugin_name
                   : p.ofi_seen                          ? "aws-ofi-nccl"
                   : out.net_plugin_state == "not_found" ? "none"
                                                         : "";
  if (std::string_view v = p.ofi_plugin_name; v.starts_with("aws-ofi-nccl ")) {
    v.remove_prefix(sizeof("aws-ofi-nccl ") - 1);
    out.net_plugin_version = std::string(v.substr(0, v.find(' ')));
  }
  out.network = d.network;
  out.network_family = d.family;
  out.ofi_provider = d.provider;
  out.ofi_fabric = p.fabric;
  out.ofi_nics = p.nics;
  out.instance_type = p.instance_type;
  out.bootstrap_interface = p.boot_if;
  out.bootstrap_address = p.boot_addr;
  out.gdr = d.gdr;
  out.settings = p.settings;
  out.warnings = p.warns.count;
  out.errors = p.error_chains.count + p.aborts.count + p.completions.count;
  if (!communicators) return out;
  out.communicators.reserve(p.comms.size() + (p.pending.transports.empty() ? 0 : 1));
  for (const auto& c : p.comms) out.communicators.push_back(CommunicatorOf(*c, s));
  if (!p.pending.transports.empty()) {
    Communicator oc;
    oc.id = "";  // channel lines whose communicator line was not (yet) seen
    oc.transports = p.pending.transports;
    out.communicators.push_back(std::move(oc));
  }
  return out;
}

// The summary's network, family, NCCL version and OFI provider: the most common among the
// processes, a TCP family or provider first (the problem outranks the majority).
void SummarizeNetwork(const State& st, const std::vector<Derived>& derived, Verdict* sum) {
  std::vector<std::string> families, versions, networks, providers;
  bool tcp_family = false;
  for (const Derived& d : derived) {
    families.push_back(d.family);
    versions.push_back(d.version);
    if (d.tcp && d.family == "Socket" && sum->tcp_fallback) tcp_family = true;
  }
  const std::string family = tcp_family ? "Socket" : MostCommon(families);
  sum->family = FromName<NetFamily>(family);
  for (const Derived& d : derived) {
    if (d.family == family) networks.push_back(d.network);
  }
  sum->network = MostCommon(networks);
  sum->nccl_version = MostCommon(versions);
  for (const auto& ss : st.sources) {
    if (!sum->nccl_version.empty()) break;
    sum->nccl_version = ss->banner_version;
  }
  if (sum->family != NetFamily::kOFI) {
    sum->ofi_provider = "none";
    return;
  }
  std::string tcp_provider;
  for (const Derived& d : derived) {
    providers.push_back(d.provider);
    if (internal::IsTcpProvider(d.provider)) tcp_provider = d.provider;
  }
  sum->ofi_provider = !tcp_provider.empty() ? tcp_provider : MostCommon(providers);
  if (sum->ofi_provider.empty()) {
    for (const auto& ss : st.sources) {
      for (const auto& [name, value] : ss->launcher_env) {
        if (name == "FI_PROVIDER") sum->ofi_provider = value;
      }
    }
  }
  if (sum->ofi_provider.empty()) sum->ofi_provider = "unknown";
}

Gdr SummarizeGdr(const std::vector<Derived>& derived) {
  bool on = false, off = false;
  for (const Derived& d : derived) {
    if (d.family.empty()) continue;
    if (d.gdr == "on") on = true;
    if (d.gdr == "off") off = true;
    if (d.gdr == "partial") on = off = true;
  }
  return on && off ? Gdr::kPartial : on ? Gdr::kOn : off ? Gdr::kOff : Gdr::kUnknown;
}

// The verdict's flags, from the findings (sorted, most severe first).
void SummarizeFindings(const Report& r, Verdict* v) {
  v->tcp_fallback = r.Has(kTcpFallback);
  v->loopback_misuse = r.Has(kLoopbackMisuse);
  v->net_plugin_missing = r.Has(kNetPluginMissing);
  v->gdr_disabled = r.Has(kGdrDisabled);
  for (const Finding& f : r.findings) {
    const bool critical = f.severity == Severity::kCritical;
    if (f.kind == kTcpFallback) {
      v->tcp_certain = v->tcp_certain || critical;
      v->tcp_suspected = v->tcp_suspected || f.suspected;
      v->tcp_deliberate = v->tcp_deliberate || f.by_configuration;
    } else if (f.kind == kLoopbackMisuse) {
      v->loopback_certain = v->loopback_certain || critical;
    } else if (critical && v->failure.empty()) {
      v->failure = f.kind + ": " + f.message;
    }
    const bool listed = std::ranges::find(v->warning_kinds, f.kind) != v->warning_kinds.end();
    if (f.severity == Severity::kWarning && !listed) v->warning_kinds.push_back(f.kind);
  }
}

void SummarizeCounts(const std::vector<Process>& processes, Verdict* v) {
  v->processes = processes.size();
  for (const auto& p : processes) {
    v->communicators += p.communicators.size();
    v->warnings += p.warnings;
    v->errors += p.errors;
  }
}

// The scope that tells most gives the summary its transport and node count: TCP first, then any
// NET, then single node; between scopes of equal transport, a proven count tells more than none.
void SummarizeNodes(const State& st, const std::map<int, Scope>& scopes, Summary* sum) {
  auto rank_of = [](const std::string& t) {
    if (t == "NET/Socket") return 4;
    if (t.rfind("NET/", 0) == 0) return 3;
    if (t == "none(single node)") return 2;
    return 1;
  };
  auto key_of = [&](const Scope& s) {
    return rank_of(s.inter_node) * 3 + (s.multi() ? 2 : s.single() ? 1 : 0);
  };
  const Scope* chosen = nullptr;
  for (const auto& [key, s] : scopes) {
    if (chosen == nullptr || key_of(s) > key_of(*chosen)) chosen = &s;
  }
  Verdict& v = sum->verdict;
  v.transport = "unknown";
  if (chosen != nullptr) {
    v.transport = chosen->inter_node;
    v.nodes = chosen->nodes;
    v.ranks = chosen->ranks;
    v.nodes_evidence = chosen->multi()    ? NodesEvidence::kProvenMulti
                       : chosen->single() ? NodesEvidence::kProvenSingle
                                          : NodesEvidence::kUnknown;
    sum->nodes_rule = chosen->rule;
    sum->nodes_proof = ToEvidence(st, chosen->proof);
  }
  for (const auto& [key, s] : scopes) {
    if (v.ranks < 0) v.ranks = s.ranks;
  }
}

// The most severe first, each severity in the order found (what a stable sort by severity
// gives), by moving each finding once into its severity's place: a job of 2,000 processes has
// tens of thousands of findings, and std::stable_sort moved each of them several times (1.2 % of
// `efawatch analyze` on bench/analyze.sh's all-NCCL log, callgrind).
void SortBySeverity(std::vector<Finding>* findings) {
  constexpr Severity kOrder[] = {Severity::kCritical, Severity::kWarning, Severity::kInfo};
  std::vector<Finding> sorted;
  sorted.reserve(findings->size());
  for (Severity level : kOrder) {
    for (Finding& f : *findings) {
      if (f.severity == level) sorted.push_back(std::move(f));
    }
  }
  // A severity outside the three (none is made today) keeps its place after them.
  if (sorted.size() != findings->size()) {
    for (Finding& f : *findings) {
      if (f.severity != Severity::kCritical && f.severity != Severity::kWarning &&
          f.severity != Severity::kInfo) {
        sorted.push_back(std::move(f));
      }
    }
  }
  *findings = std::move(sorted);
}

}  // namespace

Report Analyzer::Snapshot(SnapshotOptions options) const {
  const State& st = *state_;
  Report report;
  std::vector<Derived> derived = DeriveAll(st);
  std::map<int, Scope> scopes = BuildScopes(st, derived);

  internal::AddFindings(st, scopes, derived, &report.findings);
  report.processes.reserve(derived.size());
  for (const Derived& d : derived) {
    report.processes.push_back(ProcessOf(st, d, scopes[d.scope], options.communicators));
  }

  SortBySeverity(&report.findings);
  Summary& sum = report.summary;
  SummarizeFindings(report, &sum.verdict);
  SummarizeNetwork(st, derived, &sum.verdict);
  sum.verdict.gdr = SummarizeGdr(derived);
  SummarizeNodes(st, scopes, &sum);
  SummarizeCounts(report.processes, &sum.verdict);
  sum.lines = st.counters.lines;
  sum.nccl_lines = st.counters.nccl_lines;
  sum.malformed_lines = st.counters.malformed_lines;
  sum.warn_records = st.counters.warn_records;
  sum.ray_repeated_lines = st.counters.ray_repeated_lines;
  sum.headline = ReportHeadline(report);
  return report;
}

}  // namespace efawatch::nccl
