// Derives the report from the analyzer state: per-process facts, the node-count reasoning of a
// scope, findings and the summary. Runs at Snapshot() time only, never per line.

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
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

bool Report::HasNcclOutput() const {
  return summary.nccl_lines > 0 || !processes.empty() || !findings.empty();
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

const Ev& FirstSet(std::initializer_list<const Ev*> evs) {
  for (const Ev* e : evs) {
    if (e->set()) return *e;
  }
  return **evs.begin();
}

// Appended to the findings that a proof of several nodes would make certain.
constexpr char kSuspected[] = "suspected: this log does not show how many nodes the job spans";
// Ends a TCP fallback's message when the job asked for sockets (Finding::by_configuration).
constexpr char kByConfiguration[] = "; by configuration (NCCL_IB_DISABLE=1 or NCCL_NET=Socket)";

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

// `socket_listing_counts` false: the NET/Socket interface list alone is no Socket selection
// (DiscountSocketListings).
Derived Derive(const State& st, const ProcState& p, bool socket_listing_counts = true) {
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
  bool socket_using_means_socket =
      p.socket_using && socket_listing_counts && !VersionInRange(d.version, 4, 2, 4, 7);
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
    d.socket_by_listing = true;
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
  std::map<std::string, CommGroup> groups;  // by commId (else by nranks)
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

void AddToGroups(const ProcState& p, std::map<std::string, CommGroup>* groups) {
  for (const auto& c : p.comms) {
    if (c->nranks <= 0 || c->rank < 0) continue;
    CommGroup& g = (*groups)[!c->comm_id.empty() ? c->comm_id : "n" + std::to_string(c->nranks)];
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
    AddToGroups(p, &f.groups);
  }
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

std::string FamilyTransport(const std::string& family, const std::string& network) {
  if (family == "Socket") return "NET/Socket";
  if (family == "IB") return "NET/IB";
  if (family == "OFI") return "NET/OFI";
  if (family.empty()) return "unknown";
  return "NET/" + network;
}

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

Evidence ToEvidence(const State& st, const Ev& ev) {
  Evidence e;
  if (!ev.set()) return e;
  e.source = st.sources[ev.source]->name;
  e.line = ev.line;
  e.text = ev.text;
  return e;
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

  Finding& Add(const char* kind, Severity sev, const ProcState* p, std::string message,
               uint64_t count, const Ev& ev) {
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
    return out->emplace_back(std::move(f));
  }

  void AddTally(const char* kind, Severity sev, const ProcState* p, const std::string& message,
                const Tally& t) {
    if (t.count > 0) Add(kind, sev, p, message, t.count, t.first);
  }
};

// TCP fallback and loopback misuse, each three ways: certain when the job is proven to span
// nodes, suspected when the log does not show how many it spans, nothing on one proven node.
void TransportFindings(const Scope& s, const Derived& d, Builder* b) {
  const ProcState& p = *d.p;
  // TCP fallback: a TCP net is selected. Certain when the job is proven to span nodes,
  // suspected when the log does not show how many it spans, nothing on one proven node.
  if (d.tcp && !s.single()) {
    bool deliberate = Deliberate(s);
    std::string what = d.family == "OFI" ? "aws-ofi-nccl runs on the libfabric '" + d.provider +
                                               "' provider (TCP/UDP), not EFA"
                                         : "inter-node traffic uses NCCL's Socket transport (TCP)";
    if (deliberate) what += kByConfiguration;
    if (!s.multi()) what += std::string("; ") + kSuspected;
    Finding& f = b->Add(
        kTcpFallback, deliberate || !s.multi() ? Severity::kWarning : Severity::kCritical, &p, what,
        1, FirstSet({&p.ev_socket_channel, &p.ev_network, &p.ev_provider, &p.ev_socket_using}));
    f.by_configuration = deliberate;
    f.suspected = !s.multi();
  }
  // Loopback: the same three ways, for a bootstrap or Socket transport on lo / 127.x.
  if (p.boot_loopback && !s.single()) {
    b->Add(kLoopbackMisuse, s.multi() ? Severity::kCritical : Severity::kWarning, &p,
           s.multi() ? "multi-node job bootstraps over the loopback interface " + p.boot_if + " (" +
                           p.boot_addr + "): other nodes cannot reach it"
                     : "the job bootstraps over the loopback interface " + p.boot_if + " (" +
                           p.boot_addr + "), which other nodes cannot reach; " + kSuspected,
           1, p.ev_bootstrap)
        .suspected = !s.multi();
  } else if (p.socket_lists_loopback && d.tcp && !s.single()) {
    b->Add(kLoopbackMisuse, s.multi() ? Severity::kCritical : Severity::kWarning, &p,
           s.multi()
               ? std::string(
                     "multi-node job lists the loopback interface for NCCL's Socket transport")
               : std::string("NCCL's Socket transport lists the loopback interface; ") + kSuspected,
           1, p.ev_socket_using)
        .suspected = !s.multi();
  } else if (p.ev_ifname.set()) {
    b->Add(kLoopbackMisuse, Severity::kWarning, &p,
           "NCCL_SOCKET_IFNAME selects the loopback interface (by configuration); only a "
           "single-node job can work",
           1, p.ev_ifname);
  }
}

void PluginFindings(const Scope& s, const Derived& d, const SourceState& ss, Builder* b) {
  const ProcState& p = *d.p;
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
    bool harmful = d.tcp && !s.single();
    std::string why = p.plugin_abi_mismatch
                          ? "a libnccl-net.so was found but exports no usable ncclNetPlugin symbol"
                          : "no external network plugin (libnccl-net.so) was found";
    if (harmful) {
      why += "; NCCL fell back to TCP sockets between nodes";
      if (!s.multi()) why += std::string(" (") + kSuspected + ")";
    } else if (d.family == "IB") {
      why += "; normal here: NCCL's internal IB transport is used";
    } else {
      why += "; harmless without inter-node traffic";
    }
    b->Add(kNetPluginMissing, harmful ? Severity::kWarning : Severity::kInfo, &p, why, 1,
           p.ev_plugin)
        .suspected = harmful && !s.multi();
  }
}

void GdrAndErrorFindings(const Derived& d, const SourceState& ss, Builder* b) {
  const ProcState& p = *d.p;
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

void ProcessFindings(const State& st, const Scope& s, const Derived& d, Builder* b) {
  const SourceState& ss = *st.sources[d.p->source];
  TransportFindings(s, d, b);
  PluginFindings(s, d, ss, b);
  GdrAndErrorFindings(d, ss, b);
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

}  // namespace

Report Analyzer::Snapshot(SnapshotOptions options) const {
  const State& st = *state_;
  Report report;
  std::vector<Derived> derived = DeriveAll(st);
  std::map<int, Scope> scopes = BuildScopes(st, derived);

  Builder b{st, &report.findings};
  for (Derived& d : derived) ProcessFindings(st, scopes[d.scope], d, &b);
  for (const auto& ss : st.sources) SourceFindings(*ss, &b);
  report.processes.reserve(derived.size());
  for (const Derived& d : derived) {
    report.processes.push_back(ProcessOf(st, d, scopes[d.scope], options.communicators));
  }

  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& c) { return a.severity > c.severity; });
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
