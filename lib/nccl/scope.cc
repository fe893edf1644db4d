// SPDX-License-Identifier: Apache-2.0
// Per-process facts and what a scope (all processes, or one source) proves about the number of
// nodes the job spans, and its inter-node transport. Runs at Snapshot() time only.

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/nccl/snapshot_parts.h"
#include "lib/nccl/text_util.h"

namespace efawatch::nccl::internal {

namespace {

bool VersionInRange(const std::string& v, int minor_lo, int patch_lo, int minor_hi, int patch_hi) {
  // Only 2.x matters here.
  if (v.size() < 3 || v[0] != '2' || v[1] != '.') return false;
  std::string_view rest = v, patch_text;
  internal::Consume(&rest, "2.");
  const int minor = internal::ParseInt(rest);
  const int patch = internal::After(rest, ".", &patch_text) ? internal::ParseInt(patch_text) : 0;
  // Pairs, not minor * 1000 + patch: ParseInt saturates at 1e9, and a log may say anything.
  const std::pair<int, int> at{minor, patch};
  return at >= std::pair{minor_lo, patch_lo} && at <= std::pair{minor_hi, patch_hi};
}

}  // namespace

// `socket_listing_counts` false: the NET/Socket interface list alone is no Socket selection
// (DiscountSocketListings).
Derived Derive(const State& st, const ProcState& p, bool socket_listing_counts) {
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

  // "Failed to initialize NET plugin X": X is not the net, whatever its own lines said before.
  // (IB's failure is ib_no_device.)
  auto failed = [&p](std::string_view family) {
    return p.plugin_init_failed && internal::NetFamily(p.failed_plugin) == family;
  };
  // Which net carries NET traffic, strongest evidence first.
  // 2.4.2-2.4.7 print "NET/Socket : Using" even when IB/OFI moves the data (bootstrap).
  bool socket_using_means_socket =
      p.socket_using && socket_listing_counts && !VersionInRange(d.version, 4, 2, 4, 7);
  if (socket > 0 && socket == net) {
    d.network = "Socket";
  } else if (!p.channel_net.empty()) {
    d.network = p.channel_net;
  } else if (!p.network.empty()) {
    d.network = p.network;
  } else if ((!p.provider.empty() || p.ofi_seen) && !failed("OFI")) {
    d.network = "OFI";
  } else if (p.ib_using && !p.ib_no_device) {
    d.network = "IB";
  } else if (socket_using_means_socket) {
    d.network = "Socket";
    d.socket_by_listing = true;
  } else if (!p.weak_network.empty()) {
    d.network = p.weak_network;
  } else if (!p.weak_family.empty() && !failed(p.weak_family) &&
             !(p.weak_family == "IB" && p.ib_no_device)) {
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

namespace {

// Keeps in `best` the earliest of the evidence lines offered (by source, then line), so the
// proof shown does not depend on the order processes are visited.
void Earliest(Ev* best, const Ev& e) {
  if (!e.set()) return;
  if (!best->set() || e.source < best->source ||
      (e.source == best->source && e.line < best->line)) {
    *best = e;
  }
}

// One communicator as the ranks of a scope print it: grouped by commId, else by rank count.
// The rules ask only whether one host or one process holds a group, so those are kept as the
// first one seen and a flag (a set per group cost more than the rest of the snapshot).
struct CommGroup {
  int nranks = -1;
  std::vector<int> ranks;           // sorted and without repeats once GatherFacts returns
  const ProcState* proc = nullptr;  // the first process (its host is the first host)
  bool several_hosts = false, several_procs = false;
  // Some rank's line came without a prefix (ProcState::unattributed): its process and host are
  // not known, so the group may hold several of either.
  bool unattributed = false;
  bool net = false;  // a channel of some rank goes through a NET or COLLNET transport
  std::map<uint32_t, uint64_t> senders;  // channel -> bit per rank with an on-node ring edge
  std::vector<uint16_t> links;           // CommState::local_links keys of every rank
  Ev ev;
};

bool AllRanks(const CommGroup& g) {
  return g.nranks > 0 && static_cast<int>(g.ranks.size()) == g.nranks && g.ranks.front() == 0 &&
         g.ranks.back() == g.nranks - 1;
}

// Whether the group's on-node edges join every rank 0..nranks-1 (2 to 64 ranks) into one set.
// Each edge puts its two ranks on one node, so a joined set is one node whatever else the log
// leaves out; ranks that every edge seen names but that only missing edges would join (rank 0's
// and rank 2's lines of a four-rank ring: 0 -> 1 and 2 -> 3) prove nothing.
bool LinksJoinAllRanks(const CommGroup& g) {
  if (g.nranks < 2 || g.nranks > 64) return false;
  std::array<int, 64> parent;
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (const uint16_t key : g.links) {
    const int from = key >> 6, to = key & 63;
    // An edge naming a rank the communicator does not have: not this communicator's edges.
    if (from >= g.nranks || to >= g.nranks) return false;
    parent[find(from)] = find(to);
  }
  for (int r = 1; r < g.nranks; ++r) {
    if (find(r) != find(0)) return false;
  }
  return true;
}

// Addresses known to be one host's (the lists of one process) form a group; a peer address
// that no process lists is a group of its own. Two groups are two network namespaces, which
// NCCL treats as two nodes.
struct AddressGroups {
  std::map<std::string, int> group_of;
  std::vector<int> parent;

  int Find(int i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
  int Add(const std::string& addr) {
    auto [it, added] = group_of.emplace(addr, static_cast<int>(parent.size()));
    if (added) parent.push_back(it->second);
    return Find(it->second);
  }
  void Join(int a, int b) { parent[Find(a)] = Find(b); }
  int Count() {
    std::set<int> roots;
    for (size_t i = 0; i < parent.size(); ++i) roots.insert(Find(static_cast<int>(i)));
    return static_cast<int>(roots.size());
  }
};

// What the node-count rules read, gathered in one pass over the scope's sources and processes.
struct ScopeFacts {
  std::set<std::string> names, header_hosts;
  std::set<int> header_ranks;
  std::set<uint32_t> header_pids;
  Ev header_ev;
  bool header_complete = false;  // nccl-tests' header lists ranks 0..n-1 of the whole job
  int max_nranks = -1, max_nnodes = -1;
  int world = -1;  // the largest communicator's rank count
  bool all_boot_loopback = false;
  Ev boot_ev;
  // By commId (else by nranks), in the keys' order.
  std::vector<std::pair<std::string, CommGroup>> groups;
  // Filled by the multi-node rules, read by the host-name rule and the node count.
  int address_count = 0;
  int launcher_count = 0;
  bool every_proc_has_addrs = false;
};

// A rule: whether it holds and the earliest line it rests on.
struct Proof {
  explicit Proof(const char* r) : rule(r) {}
  const char* rule;
  bool holds = false;
  Ev ev;
};

void Prove(Proof* pr, const Ev& ev) {
  pr->holds = true;
  Earliest(&pr->ev, ev);
}

// The groups as they are gathered: found by a hash of their key, ordered once at the end
// (SortedGroups). A std::map took most of the snapshot's time in a log of 70,000 communicators
// (callgrind, bench/analyze.sh's all-NCCL log).
struct GroupIndex {
  absl::flat_hash_map<std::string, uint32_t> index;
  std::vector<std::pair<std::string, CommGroup>> groups;
};

std::vector<std::pair<std::string, CommGroup>> SortedGroups(
    std::vector<std::pair<std::string, CommGroup>>&& groups) {
  std::vector<uint32_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return groups[a].first < groups[b].first; });
  std::vector<std::pair<std::string, CommGroup>> sorted;
  sorted.reserve(groups.size());
  for (uint32_t i : order) sorted.push_back(std::move(groups[i]));
  return sorted;
}

void AddToGroups(const ProcState& p, GroupIndex* groups) {
  for (const auto& c : p.comms) {
    if (c->nranks <= 0 || c->rank < 0) continue;
    std::string by_nranks;
    if (c->comm_id.empty()) by_nranks = "n" + std::to_string(c->nranks);
    const std::string& group_key = c->comm_id.empty() ? by_nranks : c->comm_id;
    auto [at, added] = groups->index.try_emplace(group_key, groups->groups.size());
    if (added) groups->groups.emplace_back(group_key, CommGroup{});
    CommGroup& g = groups->groups[at->second].second;
    g.nranks = c->nranks;
    g.ranks.push_back(c->rank);
    if (p.unattributed()) g.unattributed = true;
    if (g.proc == nullptr) {
      g.proc = &p;
    } else if (g.proc != &p) {
      if (g.proc->host != p.host || g.proc->pid != p.pid) g.several_procs = true;
      if (g.proc->host != p.host) g.several_hosts = true;
    }
    Earliest(&g.ev, c->ev.AsEv());
    if (c->net_channels > 0) g.net = true;
    for (const auto& [name, count] : c->transports) {
      if (name.rfind("NET/", 0) == 0 || name.rfind("COLLNET/", 0) == 0) g.net = true;
    }
    for (const auto& [key, count] : c->ring_local) {
      if (count > 0) g.senders[key >> 6] |= uint64_t{1} << (key & 63);
    }
    for (const auto& [key, count] : c->local_links) {
      if (count > 0) g.links.push_back(key);
    }
  }
}

ScopeFacts GatherFacts(Scope* s) {
  ScopeFacts f;
  GroupIndex index;
  for (const SourceState* ss : s->sources) {
    for (const auto& h : ss->header) {
      f.header_ranks.insert(h.rank);
      f.header_hosts.insert(h.host);
      f.header_pids.insert(h.pid);
    }
    Earliest(&f.header_ev, ss->ev_header);
  }
  bool any_boot = false, all_boot_loopback = true;
  for (const Derived* d : s->procs) {
    const ProcState& p = *d->p;
    if (!p.host.empty()) f.names.insert(p.host);
    if (!p.boot_addr.empty()) {
      any_boot = true;
      Earliest(&f.boot_ev, p.ev_bootstrap);
      if (!p.boot_loopback) all_boot_loopback = false;
    }
    if (d->socket_channels) s->any_socket_channels = true;
    if (d->net_channels) s->any_net_channels = true;
    for (const auto& c : p.comms) {
      f.max_nranks = std::max(f.max_nranks, c->nranks);
      f.max_nnodes = std::max(f.max_nnodes, c->nnodes);
    }
    AddToGroups(p, &index);
  }
  f.groups = SortedGroups(std::move(index.groups));
  for (auto& [key, g] : f.groups) {
    std::sort(g.ranks.begin(), g.ranks.end());
    g.ranks.erase(std::unique(g.ranks.begin(), g.ranks.end()), g.ranks.end());
  }
  f.all_boot_loopback = any_boot && all_boot_loopback;
  s->ranks = f.max_nranks;
  if (s->ranks < 0 && !f.header_ranks.empty()) s->ranks = static_cast<int>(f.header_ranks.size());
  f.world = f.max_nranks;
  const int header_n = static_cast<int>(f.header_ranks.size());
  f.header_complete = !f.header_ranks.empty() && *f.header_ranks.begin() == 0 &&
                      *f.header_ranks.rbegin() == header_n - 1 &&
                      (f.world < 0 || f.world == header_n);
  return f;
}

// Tier 0: every rank of the largest communicator in one process, which cannot span machines
// (NCCL_P2P_DISABLE and NCCL_SHM_DISABLE make such a job print nNodes 2 and use the NET). Lines
// without a prefix are no one process.
Proof ProveOneProcess(const ScopeFacts& f) {
  Proof one_process("one_process");
  for (const auto& [key, g] : f.groups) {
    if (g.nranks == f.world && AllRanks(g) && !g.several_procs && !g.unattributed) {
      Prove(&one_process, g.ev);
    }
  }
  if (f.header_complete && f.header_hosts.size() == 1 && f.header_pids.size() == 1 &&
      *f.header_pids.begin() != 0) {
    Prove(&one_process, f.header_ev);
  }
  return one_process;
}

struct MultiProofs {
  Proof nnodes{"nnodes"}, local_ranks{"nranks_gt_local_ranks"}, net{"net_channels"},
      addresses{"addresses"}, launcher{"launcher"}, timeout{"connect_timeout"};
};

// Addresses: the processes' own lists join into one group per host; a peer address no process
// lists is a host of its own. Sets f->address_count and f->every_proc_has_addrs.
void ProveAddresses(const Scope& s, ScopeFacts* f, Proof* addresses) {
  AddressGroups addr_groups;
  f->every_proc_has_addrs = !s.procs.empty();
  for (const Derived* d : s.procs) {
    const ProcState& p = *d->p;
    if (p.addrs.empty()) f->every_proc_has_addrs = false;
    int first = -1;
    for (const std::string& a : p.addrs) {
      int g = addr_groups.Add(a);
      if (first < 0) first = g;
      addr_groups.Join(g, first);
    }
    for (const std::string& a : p.peer_addrs) addr_groups.Add(a);
  }
  f->address_count = addr_groups.Count();
  if (f->address_count < 2) return;
  // The evidence: the earliest line of a process that shows an address, or names a peer.
  for (const Derived* d : s.procs) {
    const ProcState& p = *d->p;
    if (!p.peer_addrs.empty()) Earliest(&addresses->ev, p.ev_peer);
    if (!p.addrs.empty()) {
      Earliest(&addresses->ev, FirstSet({&p.ev_bootstrap, &p.ev_socket_using, &p.ev_first}));
    }
  }
  addresses->holds = true;
}

// Locations are compared within one launcher (Ray by address, pdsh by host name): the same
// machine may show up once as each. Sets f->launcher_count.
void ProveLauncher(const Scope& s, ScopeFacts* f, Proof* launcher) {
  std::set<std::string> launchers;
  for (const Derived* d : s.procs) {
    for (const std::string& l : d->p->launcher_hosts) launchers.insert(l);
  }
  size_t ray_locations = 0, launcher_hosts = 0;
  for (const std::string& l : launchers) {
    ++(l.rfind("host=", 0) == 0 ? launcher_hosts : ray_locations);
  }
  f->launcher_count = static_cast<int>(std::max(ray_locations, launcher_hosts));
  if (f->launcher_count < 2) return;
  for (const Derived* d : s.procs) Earliest(&launcher->ev, d->p->ev_launcher);
  launcher->holds = true;
}

// Tier 1: several nodes.
MultiProofs ProveMulti(const Scope& s, ScopeFacts* f) {
  MultiProofs m;
  for (const Derived* d : s.procs) {
    const ProcState& p = *d->p;
    for (const auto& c : p.comms) {
      if (c->nnodes >= 2) Prove(&m.nnodes, c->ev_nodes.AsEv());
      if (c->local_ranks > 0 && c->nranks > c->local_ranks) {
        Prove(&m.local_ranks, c->ev_nodes.AsEv());
      }
    }
    if (d->net_channels) Prove(&m.net, FirstSet({&p.ev_socket_channel, &p.ev_net_channel}));
    if (p.completions.count > 0) Prove(&m.net, p.completions.first);
    if (p.remote_timeout) Prove(&m.timeout, p.ev_timeout);
  }
  ProveAddresses(s, f, &m.addresses);
  ProveLauncher(s, f, &m.launcher);
  return m;
}

struct SingleProofs {
  Proof nnodes_1{"nnodes_1"}, nranks_1{"nranks_1"}, rings{"on_node_rings"}, links{"on_node_links"},
      one_host{"all_ranks_one_host"}, loopback{"bootstrap_loopback"};
};

// Tier 2: one node, for the largest communicator.
SingleProofs ProveSingle(const Scope& s, const ScopeFacts& f) {
  SingleProofs p1;
  const int world = f.world;
  for (const Derived* d : s.procs) {
    for (const auto& c : d->p->comms) {
      if (c->nnodes == 1 && c->nranks == world) Prove(&p1.nnodes_1, c->ev_nodes.AsEv());
      if (world == 1 && c->nranks == 1) Prove(&p1.nranks_1, c->ev.AsEv());
    }
  }
  for (const auto& [key, g] : f.groups) {
    if (g.nranks != world || world < 2) continue;
    // Lines without a prefix name no host: they are not "one host".
    if (AllRanks(g) && !g.several_hosts && !g.unattributed) Prove(&p1.one_host, g.ev);
    if (world <= 64 && !g.net) {
      const uint64_t all = world == 64 ? ~uint64_t{0} : (uint64_t{1} << world) - 1;
      for (const auto& [channel, bits] : g.senders) {
        if ((bits & all) == all) Prove(&p1.rings, g.ev);
      }
      if (LinksJoinAllRanks(g)) Prove(&p1.links, g.ev);
    }
  }
  if (f.header_complete && f.header_hosts.size() == 1) Prove(&p1.one_host, f.header_ev);
  // Bootstrap on loopback works on one node only. A job on several nodes that tries it hangs in
  // bootstrap, so it proves one node once a communicator completed its init, or where no
  // process has any other interface to reach another node with.
  bool any_own_addr = false, any_complete = false;
  for (const Derived* d : s.procs) {
    any_own_addr = any_own_addr || !d->p->addrs.empty();
    for (const auto& c : d->p->comms) any_complete = any_complete || c->complete;
  }
  if (f.all_boot_loopback && (!any_own_addr || any_complete)) Prove(&p1.loopback, f.boot_ev);
  return p1;
}

// Tier 3: host names, which containers share ("ubuntu", "localhost") and which distinct
// addresses outrank: two names do not count when every process shows addresses of one host.
Proof ProveHostNames(const Scope& s, ScopeFacts* f) {
  Proof host_names("host_names");
  for (const auto& h : f->header_hosts) f->names.insert(h);
  for (const Derived* d : s.procs) {
    for (const auto& n : d->p->peer_names) f->names.insert(n);
  }
  f->names.erase("localhost");
  if (f->names.size() < 2 || (f->every_proc_has_addrs && f->address_count == 1)) {
    return host_names;
  }
  const std::string& first_name = *f->names.begin();
  for (const Derived* d : s.procs) {
    if (d->p->host != first_name) Earliest(&host_names.ev, d->p->ev_first);
    if (!d->p->peer_names.empty()) Earliest(&host_names.ev, d->p->ev_peer);
  }
  if (f->header_hosts.size() >= 2) Earliest(&host_names.ev, f->header_ev);
  host_names.holds = true;
  return host_names;
}

// The node count: 1 when one node is proven; with several, the largest count any evidence gives.
void CountNodes(Scope* s, const ScopeFacts& f) {
  if (s->single()) {
    s->nodes = 1;
    return;
  }
  if (!s->multi()) return;
  const bool addresses_say_one = f.every_proc_has_addrs && f.address_count == 1;
  const int names_count =
      s->rule == "host_names" || !addresses_say_one ? static_cast<int>(f.names.size()) : 1;
  s->nodes = std::max({f.max_nnodes, f.address_count, f.launcher_count, names_count});
  if (f.header_complete && f.header_hosts.size() >= 2) {
    s->nodes = static_cast<int>(f.header_hosts.size());
  }
  if (s->nodes < 2) s->nodes = -1;
}

}  // namespace

// Decides the scope's node count from proof: the tiers in order, the first rule that holds in the
// first tier with one decides (docs/nccl-findings.md lists the rules).
void AnalyzeScope(Scope* s) {
  ScopeFacts f = GatherFacts(s);
  const Proof one_process = ProveOneProcess(f);
  const MultiProofs m = ProveMulti(*s, &f);
  const SingleProofs p1 = ProveSingle(*s, f);
  const Proof host_names = ProveHostNames(*s, &f);
  const std::vector<std::pair<NodeCount, std::vector<const Proof*>>> tiers = {
      {NodeCount::kSingle, {&one_process}},
      {NodeCount::kMulti,
       {&m.nnodes, &m.local_ranks, &m.net, &m.addresses, &m.launcher, &m.timeout}},
      {NodeCount::kSingle,
       {&p1.nnodes_1, &p1.nranks_1, &p1.rings, &p1.links, &p1.one_host, &p1.loopback}},
      {NodeCount::kMulti, {&host_names}},
  };
  for (const auto& [count, proofs] : tiers) {
    for (const Proof* pr : proofs) {
      if (!pr->holds) continue;
      s->count = count;
      s->rule = pr->rule;
      s->proof = pr->ev;
      break;
    }
    if (s->count != NodeCount::kUnknown) break;
  }
  CountNodes(s, f);
}

namespace {

std::string FamilyTransport(const std::string& family, const std::string& network) {
  if (family == "Socket") return "NET/Socket";
  if (family == "IB") return "NET/IB";
  if (family == "OFI") return "NET/OFI";
  if (family.empty()) return "unknown";
  return "NET/" + network;
}

}  // namespace

std::string ScopeInterNode(const Scope& s) {
  if (s.single()) return "none(single node)";
  if (!s.multi()) return "unknown";
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
  {
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
}

}  // namespace efawatch::nccl::internal
