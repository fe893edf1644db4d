// SPDX-License-Identifier: Apache-2.0
// Analyzer::Merge: combines the state of two analyzers fed consecutive parts of the same input,
// so a large file can be analyzed on several threads (cli/analyze.cc). Per field, the rule is
// what sequential feeding would have produced: first evidence from the earlier part, counts
// added, flags or-ed, values that NCCL re-prints (network, provider) from the later part.

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/state.h"

namespace efawatch::nccl {

using internal::CommState;
using internal::Ev;
using internal::ProcState;
using internal::SourceState;
using internal::State;
using internal::Tally;

namespace {

struct Fix {
  const std::vector<uint32_t>& source_map;
  uint64_t offset;

  void operator()(Ev* ev) const {
    if (!ev->set()) return;
    ev->source = source_map[ev->source];
    ev->line += offset;
  }
  void operator()(Tally* t) const { (*this)(&t->first); }
  void operator()(internal::LineRef* r) const {
    if (!r->set()) return;
    r->source = source_map[r->source];
    r->line += offset;
  }
};

void FirstEv(Ev* a, Ev&& b) {
  if (!a->set() && b.set()) *a = std::move(b);
}

void FirstEv(internal::LineRef* a, const internal::LineRef& b) {
  if (!a->set() && b.set()) *a = b;
}

void AddTally(Tally* a, Tally&& b) {
  a->count += b.count;
  FirstEv(&a->first, std::move(b.first));
}

void Keep(std::string* a, std::string&& b) {
  if (a->empty()) *a = std::move(b);
}

void Latest(std::string* a, std::string&& b) {
  if (!b.empty()) *a = std::move(b);
}

void AddChannels(CommState* to, CommState&& from) {
  for (auto& [key, count] : from.transports) {
    bool found = false;
    for (auto& [k, c] : to->transports) {
      if (k == key) {
        c += count;
        found = true;
        break;
      }
    }
    if (!found && to->transports.size() < 16) to->transports.emplace_back(std::move(key), count);
  }
  to->net_channels += from.net_channels;
  to->net_gdr_channels += from.net_gdr_channels;
  to->socket_channels += from.socket_channels;
  for (const auto& [key, count] : from.ring_local)
    internal::AddRingEdge(&to->ring_local, key, count);
  for (const auto& [key, count] : from.local_links)
    internal::AddRingEdge(&to->local_links, key, count);
}

// Takes back from the edge list `from` the counts of `what`; edges that drop to zero go.
void SubtractEdges(std::vector<internal::RingEdge>* from,
                   const std::vector<internal::RingEdge>& what) {
  for (const auto& [key, count] : what) {
    for (auto it = from->begin(); it != from->end(); ++it) {
      if (it->key != key) continue;
      it->count -= std::min(it->count, count);
      if (it->count == 0) from->erase(it);
      break;
    }
  }
}

// Takes back from `from` what AddChannels(from, what) added; transports that drop to zero go.
void SubtractChannels(CommState* from, const CommState& what) {
  for (const auto& [key, count] : what.transports) {
    for (auto it = from->transports.begin(); it != from->transports.end(); ++it) {
      if (it->first != key) continue;
      it->second -= std::min(it->second, count);
      if (it->second == 0) from->transports.erase(it);
      break;
    }
  }
  from->net_channels -= std::min(from->net_channels, what.net_channels);
  from->net_gdr_channels -= std::min(from->net_gdr_channels, what.net_gdr_channels);
  from->socket_channels -= std::min(from->socket_channels, what.socket_channels);
  SubtractEdges(&from->ring_local, what.ring_local);
  SubtractEdges(&from->local_links, what.local_links);
}

void FixAll(ProcState* p, const Fix& fix) {
  for (Tally* t : {&p->gdr_on, &p->gdr_off, &p->warns, &p->error_chains, &p->aborts,
                   &p->completions, &p->connect_failures, &p->plugin_failures}) {
    fix(t);
  }
  for (Ev* e : {&p->ev_socket_channel, &p->ev_net_channel, &p->ev_network, &p->ev_socket_using,
                &p->ev_provider, &p->ev_bootstrap, &p->ev_ifname, &p->ev_plugin, &p->ev_ib_disable,
                &p->ev_first, &p->ev_peer, &p->ev_launcher, &p->ev_timeout}) {
    fix(e);
  }
  for (auto& comm : p->comms) {
    fix(&comm->ev);
    fix(&comm->ev_nodes);
  }
}

void Union(std::vector<std::string>* a, std::vector<std::string>&& b, size_t cap) {
  for (auto& v : b) internal::AddUnique(a, v, cap);
}

// Each group of ProcState's fields (lib/nccl/state.h) merges by its own rule: flags are or-ed,
// names keep the latest (Latest) or the first (Keep), sets are united, tallies added, evidence
// keeps the earliest line.
void MergePlugin(ProcState* a, ProcState& b) {
  a->plugin_not_found |= b.plugin_not_found;
  a->plugin_abi_mismatch |= b.plugin_abi_mismatch;
  a->plugin_loaded |= b.plugin_loaded;
  a->plugin_init_failed |= b.plugin_init_failed;
  Latest(&a->plugin_name, std::move(b.plugin_name));
  Keep(&a->ofi_plugin_name, std::move(b.ofi_plugin_name));
  Latest(&a->failed_plugin, std::move(b.failed_plugin));
  a->ofi_seen |= b.ofi_seen;
  a->ibext_seen |= b.ibext_seen;
  Keep(&a->weak_family, std::move(b.weak_family));
  Latest(&a->weak_network, std::move(b.weak_network));
}

void MergeNetwork(ProcState* a, ProcState& b) {
  Latest(&a->network, std::move(b.network));
  Keep(&a->channel_net, std::move(b.channel_net));
  a->ib_using |= b.ib_using;
  a->ib_no_device |= b.ib_no_device;
  a->socket_using |= b.socket_using;
  a->socket_lists_loopback |= b.socket_lists_loopback;
  Latest(&a->provider, std::move(b.provider));
  Latest(&a->fabric, std::move(b.fabric));
  if (b.nics >= 0) a->nics = b.nics;
  Latest(&a->instance_type, std::move(b.instance_type));
}

// Bootstrap (the first one seen) and node identity (sets, united).
void MergeBootstrapAndIdentity(ProcState* a, ProcState& b) {
  if (a->boot_if.empty()) {
    a->boot_if = std::move(b.boot_if);
    a->boot_addr = std::move(b.boot_addr);
    a->boot_loopback = b.boot_loopback;
  }
  Union(&a->addrs, std::move(b.addrs), 16);
  a->socket_list_seen |= b.socket_list_seen;
  Union(&a->peer_addrs, std::move(b.peer_addrs), 8);
  Union(&a->peer_names, std::move(b.peer_names), 8);
  Union(&a->launcher_hosts, std::move(b.launcher_hosts), 8);
}

// A communicator both parts know: scalars the later part printed win, evidence keeps the first.
void MergeComm(CommState* target, CommState&& bc) {
  if (bc.rank >= 0) target->rank = bc.rank;
  if (bc.nranks >= 0) target->nranks = bc.nranks;
  if (bc.nnodes >= 0) target->nnodes = bc.nnodes;
  if (bc.local_ranks >= 0) target->local_ranks = bc.local_ranks;
  FirstEv(&target->ev, bc.ev);
  FirstEv(&target->ev_nodes, bc.ev_nodes);
  if (bc.cuda_dev >= 0) target->cuda_dev = bc.cuda_dev;
  Latest(&target->bus_id, std::move(bc.bus_id));
  Latest(&target->comm_id, std::move(bc.comm_id));
  target->started |= bc.started;
  target->complete |= bc.complete;
  target->aborted |= bc.aborted;
  AddChannels(target, std::move(bc));
}

// Channel lines of `b` printed before any communicator line continue a's current one: those
// still pending, and those b's first communicator took (see ProcState::lead).
void GiveBackLead(ProcState* a, ProcState* b) {
  if (b->lead_comm != nullptr && !b->lead.transports.empty()) {
    for (auto& bc : b->comms) {
      if (bc.get() != b->lead_comm) continue;
      SubtractChannels(bc.get(), b->lead);
      AddChannels(a->current != nullptr ? a->current : &a->pending, std::move(b->lead));
      break;
    }
  }
  b->lead = CommState();
  b->lead_comm = nullptr;
  if (!b->pending.transports.empty() && b->comms.empty()) {
    AddChannels(a->current != nullptr ? a->current : &a->pending, std::move(b->pending));
    b->pending = CommState();
  }
}

// b's communicators into a's, in order, respecting the cap; a's current becomes b's current.
void MergeComms(State* st, ProcState* a, ProcState& b) {
  GiveBackLead(a, &b);
  CommState* b_current = b.current;
  CommState* mapped_current = nullptr;
  for (auto& bc : b.comms) {
    CommState* const original = bc.get();  // unique_ptr moves keep the object's address
    CommState* target = nullptr;
    for (auto& ac : a->comms) {
      if (ac->ptr_hash == bc->ptr_hash && ac->ptr == bc->ptr) target = ac.get();
    }
    if (target == nullptr) {
      if (a->comms.size() >= st->options.max_comms_per_process && !a->comms.empty()) {
        if (a->current == a->comms.front().get()) a->current = nullptr;
        a->comms.erase(a->comms.begin());
        ++st->counters.evicted_comms;
      }
      if (!a->pending.transports.empty()) {
        AddChannels(bc.get(), std::move(a->pending));
        a->pending = CommState();
      }
      a->comms.push_back(std::move(bc));
      target = a->comms.back().get();
    } else {
      MergeComm(target, std::move(*bc));
    }
    if (original == b_current) mapped_current = target;
  }
  a->comm_hashes.clear();  // comms changed: FindOrAddComm rebuilds it
  if (!b.comms.empty()) a->current = mapped_current;
  if (!b.pending.transports.empty()) AddChannels(&a->pending, std::move(b.pending));
}

void MergeTalliesAndEvidence(ProcState* a, ProcState& b) {
  AddTally(&a->gdr_on, std::move(b.gdr_on));
  AddTally(&a->gdr_off, std::move(b.gdr_off));
  AddTally(&a->warns, std::move(b.warns));
  AddTally(&a->error_chains, std::move(b.error_chains));
  AddTally(&a->aborts, std::move(b.aborts));
  AddTally(&a->completions, std::move(b.completions));
  AddTally(&a->connect_failures, std::move(b.connect_failures));
  AddTally(&a->plugin_failures, std::move(b.plugin_failures));
  a->remote_timeout |= b.remote_timeout;
  FirstEv(&a->ev_socket_channel, std::move(b.ev_socket_channel));
  FirstEv(&a->ev_net_channel, std::move(b.ev_net_channel));
  FirstEv(&a->ev_network, std::move(b.ev_network));
  FirstEv(&a->ev_socket_using, std::move(b.ev_socket_using));
  FirstEv(&a->ev_provider, std::move(b.ev_provider));
  FirstEv(&a->ev_bootstrap, std::move(b.ev_bootstrap));
  FirstEv(&a->ev_ifname, std::move(b.ev_ifname));
  FirstEv(&a->ev_plugin, std::move(b.ev_plugin));
  FirstEv(&a->ev_ib_disable, std::move(b.ev_ib_disable));
  FirstEv(&a->ev_first, std::move(b.ev_first));
  FirstEv(&a->ev_peer, std::move(b.ev_peer));
  FirstEv(&a->ev_launcher, std::move(b.ev_launcher));
  FirstEv(&a->ev_timeout, std::move(b.ev_timeout));
}

// `b` is the same process seen by the analyzer of a later part of the file; each group moves
// its own fields out of it.
void MergeProc(State* st, ProcState* a, ProcState&& b) {
  a->devices |= b.devices;
  Latest(&a->version, std::move(b.version));
  Latest(&a->cuda, std::move(b.cuda));
  MergePlugin(a, b);
  MergeNetwork(a, b);
  MergeBootstrapAndIdentity(a, b);
  for (auto& [name, value] : b.settings) {
    internal::AddSettingTo(&a->settings, st->options.max_settings_per_process, name, value);
  }
  MergeComms(st, a, b);
  MergeTalliesAndEvidence(a, b);
}

void MergeSource(SourceState* a, SourceState&& b, const Fix& fix) {
  if (a->banner_version.empty()) {
    a->banner_version = std::move(b.banner_version);
    a->banner_cuda = std::move(b.banner_cuda);
  } else if (!b.banner_version.empty() && b.banner_version != a->banner_version) {
    a->banner_conflict = true;
  }
  a->banner_conflict |= b.banner_conflict;
  for (auto& [name, value] : b.launcher_env)
    internal::AddSettingTo(&a->launcher_env, 64, name, value);
  fix(&b.ev_launcher_ifname);
  fix(&b.ev_launcher_ib_disable);
  fix(&b.ev_hmem);
  fix(&b.ev_efa_empty);
  fix(&b.ev_header);
  FirstEv(&a->ev_header, std::move(b.ev_header));
  fix(&b.watchdog);
  fix(&b.framework_errors);
  FirstEv(&a->ev_launcher_ifname, std::move(b.ev_launcher_ifname));
  FirstEv(&a->ev_launcher_ib_disable, std::move(b.ev_launcher_ib_disable));
  FirstEv(&a->ev_hmem, std::move(b.ev_hmem));
  FirstEv(&a->ev_efa_empty, std::move(b.ev_efa_empty));
  for (auto& h : b.header) {
    bool seen = false;
    for (const auto& x : a->header) seen = seen || x.rank == h.rank;
    if (!seen && a->header.size() < 4096) a->header.push_back(std::move(h));
  }
  AddTally(&a->watchdog, std::move(b.watchdog));
  AddTally(&a->framework_errors, std::move(b.framework_errors));
  for (auto& w : b.libfabric_warn_pids) {
    if (a->libfabric_warn_pids.size() < 256) a->libfabric_warn_pids.push_back(std::move(w));
  }
}

}  // namespace

void Analyzer::Merge(Analyzer&& later, uint64_t line_offset) {
  State* a = state_.get();
  State* b = later.state_.get();
  Counters& c = a->counters;
  const Counters& d = b->counters;
  c.lines += d.lines;
  c.nccl_lines += d.nccl_lines;
  c.malformed_lines += d.malformed_lines;
  c.evicted_processes += d.evicted_processes;
  c.evicted_comms += d.evicted_comms;
  c.truncated_lines += d.truncated_lines;
  c.records += d.records;
  c.warn_records += d.warn_records;
  c.legacy_records += d.legacy_records;
  c.ray_repeated_lines += d.ray_repeated_lines;
  c.ray_marker_lines += d.ray_marker_lines;
  c.slow_path_lines += d.slow_path_lines;

  std::vector<uint32_t> source_map(b->sources.size());
  for (size_t i = 0; i < b->sources.size(); ++i) {
    source_map[i] = internal::SourceIndexFor(a, b->sources[i]->name);
  }
  Fix fix{source_map, line_offset};
  for (size_t i = 0; i < b->sources.size(); ++i) {
    MergeSource(a->sources[source_map[i]].get(), std::move(*b->sources[i]), fix);
  }
  for (const std::string& key : b->proc_order) {
    auto bit = b->procs.find(key);
    if (bit == b->procs.end()) continue;
    ProcState* bp = bit->second.get();
    FixAll(bp, fix);
    bp->source = source_map[bp->source];
    auto ait = a->procs.find(key);
    if (ait != a->procs.end()) {
      MergeProc(a, ait->second.get(), std::move(*bp));
      continue;
    }
    if (a->procs.size() >= a->options.max_processes && !a->proc_order.empty()) {
      a->procs.erase(a->proc_order.front());
      a->proc_order.pop_front();
      ++c.evicted_processes;
    }
    a->procs.emplace(key, std::move(bit->second));
    a->proc_order.push_back(key);
  }
  a->last_proc = nullptr;
  a->last_key.clear();
  a->pid_cache.fill({});
  // What is left of the later part (the processes merged above, emptied) is kept rather than
  // freed here, object by object: Merge runs after the parts' threads, alone, right before the
  // report, and freeing 2,000 processes' strings and communicators was a third of it (callgrind,
  // bench/analyze.sh's all-NCCL log in two parts). It goes with this analyzer; `efawatch
  // analyze` frees neither (cli/analyze.h).
  a->merged_parts.push_back(std::move(later.state_));
  later.state_ = std::make_unique<State>(a->options);
}

}  // namespace efawatch::nccl
