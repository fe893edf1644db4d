// Derives the report from the analyzer state: per-process facts, the node-count reasoning of a
// scope, findings and the summary. Runs at Snapshot() time only, never per line.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/state.h"
#include "lib/nccl/text_util.h"

namespace efawatch::nccl {

using internal::CommState;
using internal::Ev;
using internal::ProcState;
using internal::SourceState;
using internal::State;
using internal::Tally;

bool Report::Has(const std::string& kind) const {
  for (const Finding& f : findings) {
    if (f.kind == kind && f.severity != Severity::kInfo) return true;
  }
  return false;
}

Severity Report::MaxSeverity() const {
  Severity s = Severity::kInfo;
  for (const Finding& f : findings) s = std::max(s, f.severity);
  return s;
}

namespace {

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
  int scope = 0;
};

// What a scope (all processes, or one source) tells about the number of nodes.
struct Scope {
  std::vector<Derived*> procs;
  std::vector<const SourceState*> sources;
  bool proven_single = false;  // nccl-tests placement table: every rank on one host
  bool multi = false;          // strong evidence of two or more nodes
  bool single = false;         // evidence (or the absence of any other host) of one node
  bool weak_multi = false;     // ranks unaccounted for on an RDMA fabric
  int nodes = -1;
  int ranks = -1;
  bool any_net_channels = false;
  bool any_socket_channels = false;
  std::string inter_node;
};

bool VersionInRange(const std::string& v, int minor_lo, int patch_lo, int minor_hi, int patch_hi) {
  // Only 2.x matters here.
  if (v.size() < 3 || v[0] != '2' || v[1] != '.') return false;
  int minor = internal::ParseInt(std::string_view(v).substr(2));
  size_t dot = v.find('.', 2);
  int patch =
      dot == std::string::npos ? 0 : internal::ParseInt(std::string_view(v).substr(dot + 1));
  auto key = [](int a, int b) { return a * 1000 + b; };
  return key(minor, patch) >= key(minor_lo, patch_lo) &&
         key(minor, patch) <= key(minor_hi, patch_hi);
}

Derived Derive(const State& st, const ProcState& p) {
  Derived d;
  d.p = &p;
  const SourceState& ss = *st.sources[p.source];
  d.version = p.version;
  d.cuda = p.cuda;
  if (d.version.empty() && !ss.banner_version.empty() && !ss.banner_conflict) {
    d.version = ss.banner_version;
    d.cuda = ss.banner_cuda;
  }
  uint64_t socket = 0, net = 0, gdr_net = 0;
  auto add = [&](const CommState& c) {
    socket += c.socket_channels;
    net += c.net_channels;
    gdr_net += c.net_gdr_channels;
  };
  for (const auto& c : p.comms) add(*c);
  add(p.pending);
  d.socket_channels = socket > 0;
  d.net_channels = net > 0;

  // Which net carries NET traffic, strongest evidence first.
  // 2.4.2-2.4.7 print "NET/Socket : Using" even when IB/OFI moves the data (bootstrap).
  bool socket_using_means_socket = p.socket_using && !VersionInRange(d.version, 4, 2, 4, 7);
  if (socket > 0 && socket == net) {
    d.network = "Socket";
  } else if (!p.channel_net.empty()) {
    d.network = p.channel_net;
  } else if (!p.network.empty()) {
    d.network = p.network;
  } else if (!p.provider.empty() || p.ofi_seen) {
    d.network = "OFI";
  } else if (p.ib_using) {
    d.network = "IB";
  } else if (socket_using_means_socket) {
    d.network = "Socket";
  } else if (!p.weak_network.empty()) {
    d.network = p.weak_network;
  } else if (!p.weak_family.empty()) {
    d.network = p.weak_family;
  } else if (p.ibext_seen) {
    d.network = "IBext";
  }
  d.family = internal::NetFamily(d.network);
  if (d.family == "other" && !p.weak_family.empty() && d.network == p.weak_network) {
    d.family = p.weak_family;
  }

  for (const auto& [pid, what] : ss.libfabric_warn_pids) {
    if (pid == p.pid && what == "hmem") d.hmem_needs_rdma = true;
  }

  d.provider = p.provider;
  if (d.family == "OFI" && d.provider.empty()) {
    for (const auto& [name, value] : ss.launcher_env) {
      if (name == "FI_PROVIDER") d.provider = value;
    }
    for (const auto& [name, value] : p.settings) {
      if (name == "FI_PROVIDER") d.provider = value;
    }
    if (d.provider.empty() && net > 0 && gdr_net == net) {
      // aws-ofi-nccl only offers GPU memory registration (NET/.../GDRDMA) on an RDMA provider.
      d.provider = "efa";
      d.provider_inferred = true;
    }
  }
  d.tcp = d.family == "Socket" || (d.family == "OFI" && internal::IsTcpProvider(d.provider));

  if (d.family == "Socket" || d.tcp) {
    d.gdr = "off";
  } else {
    bool on = p.gdr_on.count > 0;
    bool off = p.gdr_off.count > 0 || d.hmem_needs_rdma;
    d.gdr = on && off ? "partial" : on ? "on" : off ? "off" : "unknown";
  }
  return d;
}

void AnalyzeScope(Scope* s) {
  std::set<std::string> hosts, boot_ips, header_hosts;
  std::set<int> header_ranks;
  int max_nranks = -1, max_nnodes = -1;
  bool net_in_use = false, remote_timeout = false;
  bool any_boot = false, all_boot_loopback = true;
  uint64_t devices = 0;
  bool rdma_family = false;
  // Communicator groups: commId when printed, else the rank count.
  std::map<std::string, std::pair<std::set<int>, std::set<std::string>>> groups;
  std::map<std::string, int> group_size;
  for (const SourceState* ss : s->sources) {
    for (const auto& h : ss->header) {
      header_ranks.insert(h.rank);
      header_hosts.insert(h.host);
    }
  }
  for (const Derived* d : s->procs) {
    const ProcState& p = *d->p;
    if (!p.host.empty()) hosts.insert(p.host);
    if (!p.boot_addr.empty()) {
      any_boot = true;
      if (!p.boot_loopback) {
        all_boot_loopback = false;
        boot_ips.insert(p.boot_addr);
      }
    }
    devices |= p.devices;
    if (d->family == "IB" || d->family == "OFI") rdma_family = true;
    if (d->net_channels || p.completions.count > 0) net_in_use = true;
    if (d->socket_channels) s->any_socket_channels = true;
    if (d->net_channels) s->any_net_channels = true;
    if (p.remote_timeout) remote_timeout = true;
    for (const auto& c : p.comms) {
      max_nranks = std::max(max_nranks, c->nranks);
      max_nnodes = std::max(max_nnodes, c->nnodes);
      if (c->nranks > 0 && c->rank >= 0) {
        std::string key = !c->comm_id.empty() ? c->comm_id : "n" + std::to_string(c->nranks);
        groups[key].first.insert(c->rank);
        groups[key].second.insert(p.host);
        group_size[key] = c->nranks;
      }
    }
  }
  if (!any_boot) all_boot_loopback = false;
  s->ranks = max_nranks;
  if (s->ranks < 0 && !header_ranks.empty()) s->ranks = static_cast<int>(header_ranks.size());

  bool header_complete = !header_ranks.empty() && *header_ranks.begin() == 0 &&
                         *header_ranks.rbegin() == static_cast<int>(header_ranks.size()) - 1 &&
                         (max_nranks < 0 || max_nranks == static_cast<int>(header_ranks.size()));
  s->proven_single = header_complete && header_hosts.size() == 1;
  int host_count = static_cast<int>(std::max({hosts.size(), boot_ips.size(), header_hosts.size()}));
  s->multi =
      !s->proven_single && (header_hosts.size() >= 2 || hosts.size() >= 2 || boot_ips.size() >= 2 ||
                            max_nnodes >= 2 || net_in_use || remote_timeout);
  bool group_single = false;
  for (const auto& [key, g] : groups) {
    if (static_cast<int>(g.first.size()) == group_size[key] && g.second.size() == 1) {
      group_single = true;
    }
  }
  s->single =
      s->proven_single || (!s->multi && (max_nnodes == 1 || group_single || all_boot_loopback ||
                                         (hosts.size() <= 1 && !s->procs.empty())));
  int local = __builtin_popcountll(devices);
  // Ranks that are not on the one host the log shows are on another node; trusted only for
  // RDMA nets, where the guess cannot raise a TCP-fallback alarm.
  if (!s->multi && !s->proven_single && !group_single && max_nnodes != 1 && rdma_family &&
      hosts.size() <= 1 && max_nranks > local && local > 0) {
    s->weak_multi = true;
    s->single = false;
  }
  if (s->proven_single || (s->single && !s->multi)) {
    s->nodes = 1;
  } else if (s->multi) {
    s->nodes = std::max(host_count, max_nnodes);
    if (header_complete) s->nodes = static_cast<int>(header_hosts.size());
    if (s->nodes < 2) s->nodes = -1;
  }
}

std::string FamilyTransport(const std::string& family, const std::string& network) {
  if (family == "Socket") return "NET/Socket";
  if (family == "IB") return "NET/IB";
  if (family == "OFI") return "NET/OFI";
  if (family.empty()) return "unknown";
  return "NET/" + network;
}

std::string ScopeInterNode(const Scope& s) {
  if (s.proven_single) return "none(single node)";
  std::map<std::string, int> fam;
  std::string net_of_channels;
  for (const Derived* d : s.procs) {
    if (d->net_channels) {
      ++fam[d->family];
      if (net_of_channels.empty()) net_of_channels = d->network;
    }
  }
  if (s.any_socket_channels) return "NET/Socket";
  if (!fam.empty()) {
    auto best = std::max_element(fam.begin(), fam.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    return FamilyTransport(best->first, net_of_channels);
  }
  if (s.multi || s.weak_multi) {
    std::map<std::string, int> fams;
    std::string net;
    for (const Derived* d : s.procs) {
      if (!d->family.empty()) {
        ++fams[d->family];
        if (d->tcp) return "NET/Socket";
        net = d->network;
      }
    }
    if (fams.empty()) return "unknown";
    auto best = std::max_element(fams.begin(), fams.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    return FamilyTransport(best->first, net);
  }
  if (s.single) return "none(single node)";
  return "unknown";
}

Evidence ToEvidence(const State& st, const Ev& ev) {
  Evidence e;
  if (!ev.set()) return e;
  e.file = st.sources[ev.source]->name;
  e.line = ev.line;
  e.text = ev.text;
  return e;
}

const Ev& FirstSet(std::initializer_list<const Ev*> evs) {
  for (const Ev* e : evs) {
    if (e->set()) return *e;
  }
  return **evs.begin();
}

// NCCL_IB_DISABLE=1 / NCCL_NET=Socket anywhere in the scope: the job asked for sockets.
bool Deliberate(const Scope& s) {
  for (const Derived* d : s.procs) {
    if (d->p->ev_ib_disable.set()) return true;
  }
  for (const SourceState* ss : s.sources) {
    if (ss->ev_launcher_ib_disable.set()) return true;
  }
  return false;
}

struct Builder {
  const State& st;
  std::vector<Finding>* out;

  void Add(const char* kind, Severity sev, const ProcState* p, std::string message, uint64_t count,
           const Ev& ev) {
    Finding f;
    f.kind = kind;
    f.severity = sev;
    if (p != nullptr) {
      f.host = p->host;
      f.pid = p->pid;
    }
    f.message = std::move(message);
    f.count = count;
    f.evidence = ToEvidence(st, ev);
    out->push_back(std::move(f));
  }

  void AddTally(const char* kind, Severity sev, const ProcState* p, const std::string& message,
                const Tally& t) {
    if (t.count > 0) Add(kind, sev, p, message, t.count, t.first);
  }
};

void ProcessFindings(const State& st, const Scope& s, const Derived& d, Builder* b) {
  const ProcState& p = *d.p;
  const SourceState& ss = *st.sources[p.source];
  // TCP fallback: the data path is TCP and traffic crosses nodes (or NET channels use it).
  if (d.tcp && (s.multi || (d.socket_channels && !s.proven_single))) {
    bool deliberate = Deliberate(s);
    std::string what = d.family == "OFI" ? "aws-ofi-nccl runs on the libfabric '" + d.provider +
                                               "' provider (TCP/UDP), not EFA"
                                         : "inter-node traffic uses NCCL's Socket transport (TCP)";
    if (deliberate) what += "; requested by NCCL_IB_DISABLE=1 or NCCL_NET=Socket";
    b->Add(kTcpFallback, deliberate ? Severity::kWarning : Severity::kCritical, &p, what, 1,
           FirstSet({&p.ev_socket_channel, &p.ev_network, &p.ev_provider, &p.ev_socket_using}));
  }
  // Loopback.
  if (s.multi && p.boot_loopback) {
    b->Add(kLoopbackMisuse, Severity::kCritical, &p,
           "multi-node job bootstraps over the loopback interface " + p.boot_if + " (" +
               p.boot_addr + "): other nodes cannot reach it",
           1, p.ev_bootstrap);
  } else if (s.multi && p.socket_lists_loopback && d.tcp) {
    b->Add(kLoopbackMisuse, Severity::kCritical, &p,
           "multi-node job lists the loopback interface for NCCL's Socket transport", 1,
           p.ev_socket_using);
  } else if (p.ev_ifname.set()) {
    b->Add(kLoopbackMisuse, Severity::kWarning, &p,
           "NCCL_SOCKET_IFNAME selects the loopback interface; only a single-node job can work", 1,
           p.ev_ifname);
  }
  // Net plugin.
  bool external_loaded = p.plugin_loaded && !p.plugin_init_failed;
  if (p.plugin_init_failed) {
    b->Add(kNetPluginMissing, Severity::kWarning, &p,
           "the network plugin " +
               (!p.failed_plugin.empty()     ? p.failed_plugin
                : !p.plugin_name.empty()     ? p.plugin_name
                : !p.ofi_plugin_name.empty() ? p.ofi_plugin_name
                : p.ofi_seen                 ? std::string("aws-ofi-nccl")
                                             : std::string("(unnamed)")) +
               " failed to initialize; NCCL falls back to an internal transport" +
               (ss.ev_efa_empty.set() ? " (libfabric lists no EFA device)" : ""),
           p.plugin_failures.count, p.plugin_failures.first);
  } else if (!external_loaded && (p.plugin_abi_mismatch || p.plugin_not_found)) {
    bool harmful = d.tcp && s.multi;
    std::string why = p.plugin_abi_mismatch
                          ? "a libnccl-net.so was found but exports no usable ncclNetPlugin symbol"
                          : "no external network plugin (libnccl-net.so) was found";
    if (harmful) {
      why += "; NCCL fell back to TCP sockets between nodes";
    } else if (d.family == "IB") {
      why += "; normal here: NCCL's internal IB transport is used";
    } else {
      why += "; harmless without inter-node traffic";
    }
    b->Add(kNetPluginMissing, harmful ? Severity::kWarning : Severity::kInfo, &p, why, 1,
           p.ev_plugin);
  }
  // GDR.
  if ((d.family == "IB" || d.family == "OFI") && !d.tcp && (d.gdr == "off" || d.gdr == "partial")) {
    bool hardware = d.hmem_needs_rdma && p.gdr_off.count == 0;
    const Ev& ev = p.gdr_off.first.set() ? p.gdr_off.first : ss.ev_hmem;
    b->Add(kGdrDisabled, hardware ? Severity::kInfo : Severity::kWarning, &p,
           hardware ? "the EFA device cannot do RDMA, so GPUDirect RDMA is impossible here"
                    : "NET transport " + d.network + " runs without GPUDirect RDMA (" + d.gdr +
                          "): data is staged through host memory",
           std::max<uint64_t>(p.gdr_off.count, 1), ev);
  }
  b->AddTally(kNcclWarning, Severity::kWarning, &p, "NCCL WARN lines", p.warns);
  b->AddTally(kNcclError, Severity::kWarning, &p, "NCCL error return chains (file:line -> code)",
              p.error_chains);
  b->AddTally(kCommAbort, Severity::kCritical, &p, "a communicator was aborted", p.aborts);
  b->AddTally(kNetCompletionError, Severity::kCritical, &p,
              "the NET transport reported failed work completions (link, fabric or GDR problem)",
              p.completions);
  b->AddTally(kConnectionFailure, Severity::kWarning, &p,
              "socket connections between ranks failed or were closed", p.connect_failures);
}

void SourceFindings(const SourceState& ss, Builder* b) {
  if (ss.ev_launcher_ifname.set()) {
    b->Add(kLoopbackMisuse, Severity::kWarning, nullptr,
           "the launcher sets NCCL_SOCKET_IFNAME to the loopback interface", 1,
           ss.ev_launcher_ifname);
  }
  b->AddTally(kCollectiveTimeout, Severity::kCritical, nullptr,
              "the PyTorch NCCL watchdog timed out a collective", ss.watchdog);
  b->AddTally(kNcclError, Severity::kCritical, nullptr, "the framework reported an NCCL failure",
              ss.framework_errors);
}

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

std::string Verdict(const Report& r, const Summary& s) {
  auto nodes_text = [&]() {
    std::string t;
    if (s.ranks > 0) t += std::to_string(s.ranks) + " ranks";
    if (s.nodes > 0) t += (t.empty() ? "" : " on ") + std::to_string(s.nodes) + " nodes";
    return t.empty() ? std::string("the job uses") : t + " use";
  };
  for (const Finding& f : r.findings) {
    if (f.kind == kTcpFallback && f.severity == Severity::kCritical) {
      return "TCP FALLBACK: " + nodes_text() + " " +
             (s.network_family == "OFI" ? "the OFI provider '" + s.ofi_provider + "' (TCP)"
                                        : std::string("NET/Socket")) +
             " for inter-node traffic instead of EFA/IB RDMA";
    }
  }
  for (const Finding& f : r.findings) {
    if (f.kind == kLoopbackMisuse && f.severity == Severity::kCritical) {
      return "LOOPBACK: " + nodes_text() + " the loopback interface between nodes";
    }
  }
  for (const Finding& f : r.findings) {
    if (f.severity == Severity::kCritical) return "FAILED: " + f.kind + ": " + f.message;
  }
  std::string where;
  if (s.inter_node_transport == "none(single node)") {
    where = "single node, no inter-node traffic";
  } else if (s.inter_node_transport == "unknown") {
    where = "inter-node transport unknown (the log does not show it)";
  } else {
    where = "inter-node traffic on " + s.inter_node_transport;
    if (s.network_family == "OFI") where += " (" + s.ofi_provider + ")";
    if (s.gdr != "unknown") where += ", GDR " + s.gdr;
  }
  std::string warnings;
  std::set<std::string> seen;
  for (const Finding& f : r.findings) {
    if (f.severity == Severity::kWarning && seen.insert(f.kind).second) {
      warnings += (warnings.empty() ? "" : ", ") + f.kind;
    }
  }
  if (s.tcp_fallback) return "TCP (DELIBERATE): " + where + "; warnings: " + warnings;
  if (!warnings.empty()) return "WARNING: " + where + "; " + warnings;
  // Without transport evidence there is nothing to call OK.
  if (s.inter_node_transport == "unknown") return "UNKNOWN: " + where;
  return "OK: " + where;
}

}  // namespace

Report Analyzer::Snapshot() const {
  const State& st = *state_;
  Report report;

  std::vector<const ProcState*> procs;
  procs.reserve(st.procs.size());
  for (const auto& [key, p] : st.procs) procs.push_back(p.get());
  std::sort(procs.begin(), procs.end(), [](const ProcState* a, const ProcState* b) {
    if (a->host != b->host) return a->host < b->host;
    if (a->pid != b->pid) return a->pid < b->pid;
    return a->source < b->source;
  });
  std::vector<Derived> derived;
  derived.reserve(procs.size());
  for (const ProcState* p : procs) derived.push_back(Derive(st, *p));

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
    AnalyzeScope(&s);
    s.inter_node = ScopeInterNode(s);
  }

  Builder b{st, &report.findings};
  for (Derived& d : derived) ProcessFindings(st, scopes[d.scope], d, &b);
  for (const auto& ss : st.sources) SourceFindings(*ss, &b);

  for (const Derived& d : derived) {
    const ProcState& p = *d.p;
    Process out;
    out.host = p.host;
    out.pid = p.pid;
    out.source = st.sources[p.source]->name;
    out.nccl_version = d.version;
    out.cuda_version = d.cuda;
    if (p.plugin_init_failed) {
      out.net_plugin_state = "init_failed";
    } else if (p.plugin_loaded) {
      out.net_plugin_state = "loaded";
    } else if (p.plugin_abi_mismatch) {
      out.net_plugin_state = "abi_mismatch";
    } else if (p.plugin_not_found) {
      out.net_plugin_state = "not_found";
    }
    out.net_plugin = !p.plugin_name.empty()                ? p.plugin_name
                     : !p.ofi_plugin_name.empty()          ? p.ofi_plugin_name
                     : p.ofi_seen                          ? "aws-ofi-nccl"
                     : out.net_plugin_state == "not_found" ? "none"
                                                           : "";
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
    for (const auto& c : p.comms) {
      Communicator oc;
      oc.id = c->comm_id.empty() ? c->ptr : c->comm_id;
      oc.rank = c->rank;
      oc.nranks = c->nranks;
      oc.nnodes = c->nnodes;
      if (oc.nnodes < 0) {
        const Scope& s = scopes[d.scope];
        if (s.nodes > 0) oc.nnodes = s.nodes;
      }
      oc.cuda_dev = c->cuda_dev;
      oc.bus_id = c->bus_id;
      oc.init_complete = c->complete;
      oc.aborted = c->aborted;
      oc.transports = c->transports;
      out.communicators.push_back(std::move(oc));
    }
    if (!p.pending.transports.empty()) {
      Communicator oc;
      oc.id = "";  // channel lines whose communicator line was not (yet) seen
      oc.transports = p.pending.transports;
      out.communicators.push_back(std::move(oc));
    }
    report.processes.push_back(std::move(out));
  }

  Summary& sum = report.summary;
  sum.tcp_fallback = report.Has(kTcpFallback);
  sum.loopback_misuse = report.Has(kLoopbackMisuse);
  sum.net_plugin_missing = report.Has(kNetPluginMissing);
  sum.gdr_disabled = report.Has(kGdrDisabled);

  std::vector<std::string> families, versions, networks, providers;
  bool tcp_family = false;
  for (const Derived& d : derived) {
    families.push_back(d.family);
    versions.push_back(d.version);
    if (d.tcp && d.family == "Socket" && sum.tcp_fallback) tcp_family = true;
  }
  sum.network_family = tcp_family ? "Socket" : MostCommon(families);
  for (const Derived& d : derived) {
    if (d.family == sum.network_family) networks.push_back(d.network);
  }
  sum.network = MostCommon(networks);
  sum.nccl_version = MostCommon(versions);
  if (sum.nccl_version.empty()) {
    for (const auto& ss : st.sources) {
      if (!ss->banner_version.empty()) {
        sum.nccl_version = ss->banner_version;
        break;
      }
    }
  }
  if (sum.network_family == "OFI") {
    std::string tcp_provider;
    for (const Derived& d : derived) {
      providers.push_back(d.provider);
      if (internal::IsTcpProvider(d.provider)) tcp_provider = d.provider;
    }
    sum.ofi_provider = !tcp_provider.empty() ? tcp_provider : MostCommon(providers);
    if (sum.ofi_provider.empty()) {
      for (const auto& ss : st.sources) {
        for (const auto& [name, value] : ss->launcher_env) {
          if (name == "FI_PROVIDER") sum.ofi_provider = value;
        }
      }
    }
    if (sum.ofi_provider.empty()) sum.ofi_provider = "unknown";
  } else {
    sum.ofi_provider = "none";
  }

  bool on = false, off = false;
  for (const Derived& d : derived) {
    if (d.family.empty()) continue;
    if (d.gdr == "on") on = true;
    if (d.gdr == "off") off = true;
    if (d.gdr == "partial") on = off = true;
  }
  sum.gdr = on && off ? "partial" : on ? "on" : off ? "off" : "unknown";

  // The scope that tells most: TCP first, then any NET, then single node.
  std::string inter = "unknown";
  auto rank_of = [](const std::string& t) {
    if (t == "NET/Socket") return 4;
    if (t.rfind("NET/", 0) == 0) return 3;
    if (t == "none(single node)") return 2;
    return 1;
  };
  for (const auto& [key, s] : scopes) {
    if (rank_of(s.inter_node) > rank_of(inter)) {
      inter = s.inter_node;
      sum.nodes = s.nodes;
      sum.ranks = s.ranks;
    }
    if (sum.ranks < 0) sum.ranks = s.ranks;
  }
  sum.inter_node_transport = inter;
  sum.lines = st.counters.lines;
  sum.nccl_lines = st.counters.nccl_lines;
  sum.malformed_lines = st.counters.malformed_lines;
  sum.warn_records = st.counters.warn_records;
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& c) { return a.severity > c.severity; });
  sum.verdict = Verdict(report, sum);
  return report;
}

}  // namespace efawatch::nccl
