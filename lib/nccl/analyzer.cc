#include "lib/nccl/analyzer.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "lib/common/utf8.h"
#include "lib/nccl/block_scanner.h"
#include "lib/nccl/comm_line.h"
#include "lib/nccl/record_scanner.h"
#include "lib/nccl/state.h"
#include "lib/nccl/text_util.h"
#include "lib/nccl/unwrap.h"

namespace efawatch::nccl {

using internal::After;
using internal::CommState;
using internal::Consume;
using internal::Contains;
using internal::Ev;
using internal::FindIn;
using internal::IsDigitChar;
using internal::ParseInt;
using internal::ProcState;
using internal::SourceState;
using internal::Split;
using internal::StartsWith;
using internal::State;
using internal::Tally;
using internal::Trim;

namespace {

// Everything a handler needs to know about the line being processed.
struct Ctx {
  State* st;
  uint32_t source;
  uint64_t line_no;
  std::string_view line;  // cleaned physical line, used as evidence text
};

// Assigns only when the value changes: most of these lines repeat for every rank and channel,
// and a compare is cheaper than a copy.
void Set(std::string* dst, std::string_view v) {
  if (!internal::Eq(*dst, v)) dst->assign(v);
}

void SetEv(Ev* ev, const Ctx& c) {
  if (ev->set()) return;
  ev->source = c.source;
  ev->line = c.line_no;
  // Cut on a character boundary: evidence ends up in JSON, proto and label text, all UTF-8.
  ev->text.assign(common::Utf8Prefix(c.line, c.st->options.max_evidence_bytes));
}

// SetEv without the text: communicators are many (thousands of processes, up to 256 each), and
// a copy of their line each measured ~5% of `efawatch analyze` in bench/analyze.sh. The snapshot
// shows file and line for proofs that rest on a communicator line.
void SetRef(Ev* ev, const Ctx& c) {
  if (ev->set()) return;
  ev->source = c.source;
  ev->line = c.line_no;
}

void SetRef(internal::LineRef* ref, const Ctx& c) {
  if (ref->set()) return;
  ref->source = c.source;
  ref->line = c.line_no;
}

void Count(Tally* t, const Ctx& c) {
  ++t->count;
  SetEv(&t->first, c);
}

void AddSetting(std::vector<std::pair<std::string, std::string>>* settings, size_t cap,
                std::string_view name, std::string_view value) {
  value = Trim(value);
  if (name.size() > 64) name = name.substr(0, 64);
  if (value.size() > 256) value = value.substr(0, 256);
  for (auto& [n, v] : *settings) {
    if (n == name) {
      v.assign(value);
      return;
    }
  }
  if (settings->size() >= cap) return;
  settings->emplace_back(std::string(name), std::string(value));
}

// Transport counters are tiny vectors; keys are compared without building a string.
void AddTransport(CommState* comm, std::string_view a, std::string_view b = {},
                  std::string_view c = {}) {
  for (auto& [key, count] : comm->transports) {
    std::string_view k = key;
    if (k.size() == a.size() + b.size() + c.size() && StartsWith(k, a) &&
        internal::Eq(k.substr(a.size(), b.size()), b) &&
        internal::Eq(k.substr(a.size() + b.size()), c)) {
      ++count;
      return;
    }
  }
  if (comm->transports.size() >= 16) return;
  std::string key;
  key.reserve(a.size() + b.size() + c.size());
  key.append(a).append(b).append(c);
  comm->transports.emplace_back(std::move(key), 1);
}

CommState* CurrentComm(ProcState* p) { return p->current != nullptr ? p->current : &p->pending; }

void AddUniqueString(std::vector<std::string>* set, std::string_view value, size_t cap) {
  if (value.empty()) return;
  for (const std::string& v : *set) {
    if (internal::Eq(v, value)) return;
  }
  if (set->size() < cap) set->emplace_back(value);
}

// Addresses kept per process: enough for NCCL's MAX_IFS (16) interfaces.
constexpr size_t kMaxAddrs = 16;

void AddOwnAddr(ProcState* p, std::string_view iface, std::string_view addr) {
  if (addr.empty() || internal::IsLoopback(iface, addr)) return;
  AddUniqueString(&p->addrs, addr.substr(0, 64), kMaxAddrs);
}

// "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM", "Ring 00 : 1 -> 0 via P2P/IPC": counts the edge,
// which stays on the node, by its channel and sending rank (ring_local) and by the ranks it joins
// (local_links), for ranks and channels below 64.
void AddLocalEdge(CommState* comm, std::string_view m) {
  std::string_view after_word, after_colon;
  if (!After(m, " ", &after_word) || !After(m, " : ", &after_colon)) return;
  int channel = ParseInt(after_word);
  int sender = ParseInt(after_colon);
  if (channel < 0 || channel >= 64 || sender < 0 || sender >= 64) return;
  const uint32_t key = static_cast<uint32_t>(channel) << 6 | static_cast<uint32_t>(sender);
  internal::AddRingEdge(&comm->ring_local, key, 1);
  std::string_view after_arrow;
  if (!After(after_colon, " -> ", &after_arrow)) return;
  const int receiver = ParseInt(after_arrow);
  if (receiver < 0 || receiver >= 64) return;
  internal::AddRingEdge(&comm->local_links,
                        static_cast<uint32_t>(sender) << 6 | static_cast<uint32_t>(receiver), 1);
}

// "Channel 00/0 : 0[0] -> 1[1] [send] via NET/IBext_v8/0/GDRDMA", "Ring 00 : 1 -> 0 via P2P/IPC".
void HandleChannel(ProcState* p, std::string_view m, const Ctx& c) {
  std::string_view t;
  if (!After(m, " via ", &t)) return;
  CommState* comm = CurrentComm(p);
  if (StartsWith(t, "NET/")) {
    // The net name may hold spaces ("AWS Libfabric"): it ends at "/<digit>".
    size_t end = std::string_view::npos;
    for (size_t j = 4; j + 1 < t.size(); ++j) {
      if (t[j] == '/' && IsDigitChar(t[j + 1])) {
        end = j;
        break;
      }
    }
    std::string_view name = end == std::string_view::npos ? t.substr(4) : t.substr(4, end - 4);
    if (name.size() > 64) name = name.substr(0, 64);
    bool gdr = end != std::string_view::npos && Contains(t.substr(end), "/GDRDMA");
    AddTransport(comm, "NET/", name, gdr ? "/GDRDMA" : "");
    ++comm->net_channels;
    if (p->channel_net.empty()) p->channel_net.assign(name);
    if (name == "Socket") {
      ++comm->socket_channels;
      SetEv(&p->ev_socket_channel, c);
    } else {
      SetEv(&p->ev_net_channel, c);
      if (gdr) {
        ++comm->net_gdr_channels;
        Count(&p->gdr_on, c);
      } else {
        Count(&p->gdr_off, c);
      }
    }
  } else if (StartsWith(t, "P2P/")) {
    size_t e = 4;
    while (e < t.size() && t[e] != '/' && t[e] != ' ' && t[e] != '(' && e < 24) ++e;
    AddTransport(comm, t.substr(0, e));
    AddLocalEdge(comm, m);
  } else if (StartsWith(t, "SHM") || StartsWith(t, "direct shared memory")) {
    AddTransport(comm, "SHM");
    AddLocalEdge(comm, m);
  } else if (StartsWith(t, "COLLNET/")) {
    size_t e = 8;
    while (e < t.size() && t[e] != '/' && e < 40) ++e;
    AddTransport(comm, t.substr(0, e));
  } else {
    size_t e = 0;
    while (e < t.size() && t[e] != ' ' && e < 32) ++e;
    if (e > 0) AddTransport(comm, t.substr(0, e));
  }
}

CommState* FindOrAddComm(State* st, ProcState* p, std::string_view ptr, const Ctx& c) {
  ptr = ptr.substr(0, 32);  // as kept: a longer one must find the communicator it made
  const uint64_t hash = internal::HashBytes(ptr);
  // Most communicator lines continue the one in progress ("Init START", its "comm .. nRanks"
  // line, "Init COMPLETE"): checked before the list, which a process with many communicators
  // makes long.
  if (p->current != nullptr && p->current->ptr_hash == hash && internal::Eq(p->current->ptr, ptr)) {
    return p->current;
  }
  if (p->comm_hashes.size() != p->comms.size()) {
    p->comm_hashes.clear();
    for (const auto& comm : p->comms) p->comm_hashes.push_back(comm->ptr_hash);
  }
  for (size_t i = 0; i < p->comm_hashes.size(); ++i) {
    if (p->comm_hashes[i] == hash && internal::Eq(p->comms[i]->ptr, ptr)) return p->comms[i].get();
  }
  if (p->comms.size() >= st->options.max_comms_per_process && !p->comms.empty()) {
    if (p->current == p->comms.front().get()) p->current = nullptr;
    p->comms.erase(p->comms.begin());
    p->comm_hashes.erase(p->comm_hashes.begin());
    ++st->counters.evicted_comms;
  }
  auto comm = std::make_unique<CommState>();
  comm->ptr.assign(ptr);
  comm->ptr_hash = hash;
  SetRef(&comm->ev, c);
  // Channel lines printed before the comm line (NCCL <= 2.17 prints "Init COMPLETE" last).
  if (!p->lead_taken) {
    p->lead_taken = true;
    p->lead_comm = comm.get();
    p->lead.transports = p->pending.transports;
    p->lead.net_channels = p->pending.net_channels;
    p->lead.net_gdr_channels = p->pending.net_gdr_channels;
    p->lead.socket_channels = p->pending.socket_channels;
    p->lead.ring_local = p->pending.ring_local;
    p->lead.local_links = p->pending.local_links;
  }
  if (!p->pending.transports.empty()) {
    comm->transports = std::move(p->pending.transports);
    comm->net_channels = p->pending.net_channels;
    comm->net_gdr_channels = p->pending.net_gdr_channels;
    comm->socket_channels = p->pending.socket_channels;
    comm->ring_local = std::move(p->pending.ring_local);
    comm->local_links = std::move(p->pending.local_links);
    p->pending = CommState();
  }
  p->comms.push_back(std::move(comm));
  p->comm_hashes.push_back(hash);
  return p->comms.back().get();
}

// A communicator line (lib/nccl/comm_line.h says which).
void HandleComm(State* st, ProcState* p, std::string_view m, const Ctx& c) {
  const CommLine line = st->comm_lines.Parse(m);
  const int rank = line.rank, nranks = line.nranks;
  std::string_view ptr = line.ptr;
  if (rank < 0 && nranks < 0) return;
  std::string key_buf;
  if (ptr.empty()) {
    key_buf = "rank" + std::to_string(rank) + "/" + std::to_string(nranks);
    ptr = key_buf;
  }
  CommState* comm = FindOrAddComm(st, p, ptr, c);
  if (rank >= 0) comm->rank = rank;
  if (nranks >= 0) comm->nranks = nranks;
  if (line.nnodes >= 0) comm->nnodes = line.nnodes;
  if (line.local_ranks >= 0) comm->local_ranks = line.local_ranks;
  if (line.nnodes >= 0 || line.local_ranks >= 0) SetRef(&comm->ev_nodes, c);
  if (line.cuda_dev >= 0) comm->cuda_dev = line.cuda_dev;
  if (!line.bus_id.empty()) Set(&comm->bus_id, line.bus_id.substr(0, 24));
  if (!line.comm_id.empty()) Set(&comm->comm_id, line.comm_id.substr(0, 24));
  if (line.abort) {
    comm->aborted = true;
    Count(&p->aborts, c);
    if (p->current == comm) p->current = nullptr;
    return;
  }
  if (line.start || line.nnodes >= 0) {
    comm->started = true;
    p->current = comm;
  }
  if (line.complete) {
    comm->complete = true;
    if (p->current == comm) p->current = nullptr;
  }
}

void HandlePlugin(ProcState* p, std::string_view m, const Ctx& c) {
  if (std::string_view name; After(m, "Loaded net plugin ", &name)) {
    size_t v = name.rfind(" (v");
    if (v != std::string_view::npos) name = name.substr(0, v);
    p->plugin_loaded = true;
    Set(&p->plugin_name, name.substr(0, 64));
    SetEv(&p->ev_plugin, c);
  } else if (Contains(m, "Failed to find ncclNetPlugin")) {
    p->plugin_abi_mismatch = true;
    SetEv(&p->ev_plugin, c);
  } else if (Contains(m, "Failed to find ncclCollNetPlugin")) {
    // Only the CollNet part is missing: the library loaded and its net part was found.
    p->plugin_loaded = true;
  } else if (Contains(m, "No plugin found") || Contains(m, "Could not find:") ||
             Contains(m, "Plugin load returned") || Contains(m, "Plugin load (") ||
             Contains(m, "Using internal network plugin")) {
    p->plugin_not_found = true;
    SetEv(&p->ev_plugin, c);
  } else if (std::string_view name_set; After(m, "Plugin name set by env to ", &name_set)) {
    AddSetting(&p->settings, c.st->options.max_settings_per_process, "NCCL_NET_PLUGIN", name_set);
  }
}

void HandleOfi(ProcState* p, std::string_view m, const Ctx& c, bool warn) {
  p->ofi_seen = true;
  std::string_view rest = m;
  Consume(&rest, "NET/OFI ");
  if (warn) {
    if (Contains(rest, "initialization failed") || Contains(rest, "Initializing plugin failed") ||
        Contains(rest, "optimal provider") || Contains(rest, "fi_getinfo() call failed") ||
        Contains(rest, "Only EFA provider is supported")) {
      p->plugin_init_failed = true;
      Count(&p->plugin_failures, c);
    }
    if (std::string_view type; After(rest, "GDR disabled on GDR-supported instance type ", &type)) {
      Set(&p->instance_type, Trim(type).substr(0, 32));
      Count(&p->gdr_off, c);
    }
    return;
  }
  if (StartsWith(rest, "Using aws-ofi-nccl ") || StartsWith(rest, "Initializing aws-ofi-nccl ")) {
    std::string_view v = After(rest, "aws-ofi-nccl ");
    p->plugin_loaded = true;
    if (p->ofi_plugin_name.empty())
      p->ofi_plugin_name = "aws-ofi-nccl " + std::string(Trim(v).substr(0, 32));
    SetEv(&p->ev_plugin, c);
  } else if (std::string_view selected = rest; Consume(&selected, "Selected Provider is ") ||
                                               Consume(&selected, "Selected provider is ")) {
    // The provider name ends at a blank or a comma, within 32 bytes (a loop: find_first_of
    // calls memchr on its set once per byte).
    size_t end = 0;
    while (end < selected.size() && end < 32 && selected[end] != ' ' && selected[end] != ',') {
      ++end;
    }
    Set(&p->provider, selected.substr(0, end));
    if (std::string_view fab; After(selected, "fabric is ", &fab)) {
      Set(&p->fabric, fab.substr(0, std::min<size_t>(fab.find(' '), 32)));
    }
    if (std::string_view found; After(selected, "(found ", &found)) p->nics = ParseInt(found);
    SetEv(&p->ev_provider, c);
  } else if (std::string_view platform = rest; Consume(&platform, "Running on ")) {
    Set(&p->instance_type, platform.substr(0, std::min<size_t>(platform.find(' '), 32)));
  } else if (StartsWith(rest, "No eligible providers were found")) {
    p->plugin_init_failed = true;
    Count(&p->plugin_failures, c);
  } else if (std::string_view name, value, setting = rest;
             Consume(&setting, "Setting ") &&
             Split(setting, " environment variable to ", &name, &value)) {
    AddSetting(&p->settings, c.st->options.max_settings_per_process, name, value);
  } else if (Contains(rest, "disabling GDR")) {
    Count(&p->gdr_off, c);
  }
}

// "NCCL_SOCKET_IFNAME set by environment to lo", "NCCL_IB_DISABLE set by environment to 1."
void HandleEnvEcho(ProcState* p, std::string_view m, const Ctx& c) {
  size_t sp = m.find(' ');
  if (sp == std::string_view::npos) return;
  std::string_view name = m.substr(0, sp);
  std::string_view value = m.substr(sp);
  if (!Consume(&value, " set by environment to ") && !Consume(&value, " set to ")) return;
  value = Trim(value);
  if (!value.empty() && value.back() == '.') value.remove_suffix(1);
  AddSetting(&p->settings, c.st->options.max_settings_per_process, name, value);
  if (name == "NCCL_SOCKET_IFNAME" && internal::IfnameSelectsLoopback(value)) {
    SetEv(&p->ev_ifname, c);
  } else if ((name == "NCCL_IB_DISABLE" && value == "1") ||
             (name == "NCCL_NET" && Contains(value, "Socket"))) {
    SetEv(&p->ev_ib_disable, c);
  }
}

void HandleBootstrap(ProcState* p, std::string_view list, const Ctx& c) {
  // Both already set: parsing the list again cannot change anything.
  if (!p->boot_if.empty() && p->ev_bootstrap.set()) return;
  auto items = internal::ParseIfList(list, 16);
  if (items.empty()) return;
  for (const auto& item : items) AddOwnAddr(p, item.iface, item.addr);
  if (p->boot_if.empty()) {
    p->boot_if.assign(items[0].iface.substr(0, 32));
    p->boot_addr.assign(items[0].addr.substr(0, 64));
    p->boot_loopback = internal::IsLoopback(items[0].iface, items[0].addr);
  }
  SetEv(&p->ev_bootstrap, c);
}

// "transport/net.cc:1302 -> 6", "misc/socket.cc:504 -> 2 (Operation now in progress)".
bool HandleErrorChain(ProcState* p, std::string_view m, const Ctx& c) {
  size_t arrow = FindIn(m, " -> ");
  if (arrow == std::string_view::npos || arrow == 0) return false;
  std::string_view loc = m.substr(0, arrow);
  size_t colon = loc.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= loc.size()) return false;
  for (size_t i = colon + 1; i < loc.size(); ++i) {
    if (!IsDigitChar(loc[i])) return false;
  }
  if (loc.find(' ') != std::string_view::npos) return false;
  std::string_view code = After(m, " -> ");
  if (code.empty() || !IsDigitChar(code[0])) return false;
  size_t e = 0;
  while (e < code.size() && IsDigitChar(code[e])) ++e;
  if (e < code.size() && code[e] != ' ') return false;
  if (ParseInt(code) == 0) return true;
  Count(&p->error_chains, c);
  if (Contains(loc, "net_ib")) {
    if (p->weak_family.empty()) p->weak_family = "IB";
  }
  return true;
}

// "Channel ..", "CollNet ..", "Connected all rings .. GDR n", "Connected NVLS".
void HandleConnected(ProcState* p, std::string_view m, const Ctx& c) {
  if (StartsWith(m, "Channel ") || StartsWith(m, "CollNet ")) {
    HandleChannel(p, m, c);
  } else if (StartsWith(m, "Connected all rings, use ring PXN")) {
    if (std::string_view gdr; After(m, " GDR ", &gdr)) {
      Count(ParseInt(gdr) > 0 ? &p->gdr_on : &p->gdr_off, c);
    }
  } else if (StartsWith(m, "Connected NVLS")) {
    AddTransport(CurrentComm(p), "NVLS");
  }
}

// "Using network X", "Using internal/external Network X", "Assigned NET plugin X to comm".
void HandleNetworkChoice(ProcState* p, std::string_view m, const Ctx& c) {
  std::string_view name = m;
  if (Consume(&name, "Using network ") || Consume(&name, "Using internal Network ") ||
      Consume(&name, "Using external Network ")) {
    name = Trim(name).substr(0, 64);
  } else if (Consume(&name, "Assigned NET plugin ")) {
    name = name.substr(0, std::min<size_t>(name.find(" to comm"), 64));
  } else {
    return;
  }
  Set(&p->network, name);
  SetEv(&p->ev_network, c);
}

// The net plugin's own status lines: "P2P plugin IB..", "Plugin Path : ..", "Initialized NET
// plugin X", "Failed to initialize NET plugin X", "Successfully loaded external plugin X".
void HandlePluginStatus(ProcState* p, std::string_view m, const Ctx& c) {
  if (StartsWith(m, "P2P plugin IB") || StartsWith(m, "Plugin Path : ")) {
    p->ibext_seen = true;
    p->plugin_loaded = true;
    if (std::string_view v = m; Consume(&v, "P2P plugin ")) {
      Set(&p->plugin_name, Trim(v).substr(0, 32));
    }
    SetEv(&p->ev_plugin, c);
  } else if (std::string_view ok = m; Consume(&ok, "Initialized NET plugin ")) {
    ok = Trim(ok);
    if (ok != "IB" && ok != "Socket") {
      p->plugin_loaded = true;
      Set(&p->plugin_name, ok.substr(0, 64));
    }
  } else if (std::string_view failed = m; Consume(&failed, "Failed to initialize NET plugin ")) {
    failed = Trim(failed);
    if (failed == "IB") {
      p->ib_no_device = true;
    } else if (failed != "Socket") {
      p->plugin_init_failed = true;
      Set(&p->failed_plugin, failed.substr(0, 64));
      Count(&p->plugin_failures, c);
    }
  } else if (std::string_view loaded = m; Consume(&loaded, "Successfully loaded external ")) {
    Consume(&loaded, "network ");
    Consume(&loaded, "plugin ");
    p->plugin_loaded = true;
    Set(&p->plugin_name, Trim(loaded).substr(0, 64));
    SetEv(&p->ev_plugin, c);
  }
}

// "NET/IB ..." lines of NCCL's internal IB net.
void HandleNetIb(ProcState* p, std::string_view m, const Ctx& c) {
  if (Contains(m, "No device found")) {
    p->ib_no_device = true;
  } else if (StartsWith(m, "NET/IB : Using [") || StartsWith(m, "NET/IB: [")) {
    // "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>": the OOB interface is this host's
    // address.
    if (!p->ib_using) {
      if (std::string_view oob; After(m, "OOB ", &oob)) {
        for (const auto& item : internal::ParseIfList(oob, 1)) {
          AddOwnAddr(p, item.iface, item.addr);
        }
      }
    }
    p->ib_using = true;
  } else if (Contains(m, "GPU Direct RDMA Disabled")) {
    Count(&p->gdr_off, c);
  } else if (Contains(m, "GPU Direct RDMA Enabled")) {
    Count(&p->gdr_on, c);
  }
}

// "NET/Socket : Using [0]eth0:10.0.0.1<0> ...": printed by every communicator with the same
// list, parsed once per process.
void HandleNetSocket(ProcState* p, std::string_view m, const Ctx& c) {
  p->socket_using = true;
  SetEv(&p->ev_socket_using, c);
  if (p->socket_list_seen) return;
  p->socket_list_seen = true;
  std::string_view list = m;
  Consume(&list, "NET/Socket : Using");
  for (const auto& item : internal::ParseIfList(list, 16)) {
    if (internal::IsLoopback(item.iface, item.addr)) p->socket_lists_loopback = true;
    AddOwnAddr(p, item.iface, item.addr);
  }
}

// Messages starting with 'N': the version, echoed settings, and the nets' own lines.
void HandleN(ProcState* p, std::string_view m, const Ctx& c) {
  if (std::string_view tok = m; Consume(&tok, "NCCL version ")) {
    std::string_view v, cuda;
    tok = tok.substr(0, std::min<size_t>(tok.find(' '), 64));
    SplitVersion(tok, &v, &cuda);
    Set(&p->version, v);
    Set(&p->cuda, cuda);
  } else if (StartsWith(m, "NCCL_")) {
    HandleEnvEcho(p, m, c);
  } else if (StartsWith(m, "NET/OFI ")) {
    HandleOfi(p, m, c, false);
  } else if (StartsWith(m, "NET/Plugin")) {
    HandlePlugin(p, m, c);
  } else if (StartsWith(m, "NET/IB")) {
    HandleNetIb(p, m, c);
  } else if (StartsWith(m, "NET/Socket : Using")) {
    HandleNetSocket(p, m, c);
  } else if (std::string_view iface = m; Consume(&iface, "NET : Using interface ")) {
    // NCCL 2.3: one line per socket interface; the first one carries the bootstrap.
    for (const auto& item : internal::ParseIfList(iface, 1)) {
      AddOwnAddr(p, item.iface, item.addr);
    }
    HandleBootstrap(p, iface, c);
  } else if (StartsWith(m, "No network plugin found")) {
    p->plugin_not_found = true;
    SetEv(&p->ev_plugin, c);
  } else if (StartsWith(m, "Net/IB: call to devices() returned 0")) {
    p->ib_no_device = true;
  }
}

// One INFO record, dispatched on its first character (most records are rejected by one compare).
void HandleInfo(State* st, ProcState* p, std::string_view m, const Ctx& c) {
  if (m.empty()) return;
  switch (m[0]) {
    case 'C':
      return HandleConnected(p, m, c);
    case 'R':
      if (StartsWith(m, "Ring ")) HandleChannel(p, m, c);
      return;
    case 'B':
      if (std::string_view list = m;
          Consume(&list, "Bootstrap : Using") || Consume(&list, "Bootstrap: Using")) {
        HandleBootstrap(p, list, c);
      }
      return;
    case 'U':
    case 'A':
      return HandleNetworkChoice(p, m, c);
    case 'c':
      if (StartsWith(m, "comm ")) HandleComm(st, p, m, c);
      return;
    case 'n':
      if (StartsWith(m, "ncclComm")) HandleComm(st, p, m, c);
      return;
    case 'r':
      if (StartsWith(m, "rank ")) HandleComm(st, p, m, c);
      return;
    case '[':
      if (StartsWith(m, "[Rank ")) HandleComm(st, p, m, c);
      return;
    case 'P':
    case 'I':
    case 'F':
    case 'S':
      return HandlePluginStatus(p, m, c);
    case 'G':
      if (StartsWith(m, "GPU Direct RDMA Enabled")) {
        Count(&p->gdr_on, c);
      } else if (StartsWith(m, "GPU Direct RDMA Disabled")) {
        Count(&p->gdr_off, c);
      }
      return;
    case 'N':
      return HandleN(p, m, c);
    default:
      break;
  }
  if (Contains(m, " -> ")) HandleErrorChain(p, m, c);
}

// The peer an error names: "Connect to 10.0.0.9<1> failed", "connect to fe80::1%ib1<5> returned",
// "Connection closed by remote peer node8<45612>", "Got completion from peer 10.2.2.2<5>". A
// numeric address goes to peer_addrs, a host name (cut at its first '.', as NCCL cuts its own)
// to peer_names; "localhost" names nothing.
void AddPeer(ProcState* p, std::string_view m, const Ctx& c) {
  size_t at = std::string_view::npos;
  size_t skip = 0;
  for (std::string_view key : {std::string_view("onnect to "), std::string_view("remote peer "),
                               std::string_view("from peer ")}) {
    at = FindIn(m, key);
    if (at != std::string_view::npos) {
      skip = key.size();
      break;
    }
  }
  if (at == std::string_view::npos) return;
  std::string_view v = m.substr(at + skip);
  size_t e = 0;
  while (e < v.size() && v[e] != '<' && v[e] != ' ' && v[e] != ',' && e < 80) ++e;
  v = v.substr(0, e);
  if (v.empty()) return;
  bool numeric = IsDigitChar(v[0]) ? v.find('.') != std::string_view::npos
                                   : v.find(':') != std::string_view::npos;
  if (numeric) {
    if (internal::IsLoopback("", v)) return;
    AddUniqueString(&p->peer_addrs, v, 8);
  } else {
    v = v.substr(0, v.find('.'));
    if (v == "localhost" || v.empty()) return;
    AddUniqueString(&p->peer_names, v, 8);
  }
  SetEv(&p->ev_peer, c);
}

void HandleWarn(ProcState* p, const Record& r, const Ctx& c) {
  Count(&p->warns, c);
  std::string_view m = r.message;
  std::string_view loc = r.location;
  if (StartsWith(m, "NET/OFI ")) HandleOfi(p, m, c, true);
  if (Contains(loc, "nccl_net_ofi") || StartsWith(loc, "ofi_")) {
    p->ofi_seen = true;
  } else if (Contains(loc, "tcpx")) {
    p->weak_family = "other";
    p->weak_network = "GPUDirectTCPX";
  } else if (Contains(loc, "ib_plugin")) {
    p->ibext_seen = true;
  }
  if (Contains(m, "Got completion")) {
    Count(&p->completions, c);
    AddPeer(p, m, c);
    if (Contains(m, "NET/IB") && p->weak_family.empty()) p->weak_family = "IB";
    return;
  }
  if (Contains(m, "NET/IB") && p->weak_family.empty()) p->weak_family = "IB";
  bool connect = (Contains(m, "onnect to ") && Contains(m, "failed")) ||
                 Contains(m, "Call to connect") ||
                 Contains(m, "Connection closed by remote peer") ||
                 Contains(m, "Connection refused") || Contains(m, "[Proxy Service") ||
                 Contains(m, "Could not receive type") || Contains(m, "socketPollConnect");
  if (connect) {
    Count(&p->connect_failures, c);
    AddPeer(p, m, c);
    // A TCP connect cannot time out against an address of the same host (the local stack
    // answers at once), so the peer is on another node.
    if (Contains(m, "timed out")) {
      p->remote_timeout = true;
      SetEv(&p->ev_timeout, c);
    }
  }
}

ProcState* GetProc(State* st, const Record& r, uint32_t source) {
  std::string_view key = r.proc_key;
  if (key.empty()) {
    // Records without a prefix share one process per source. Built in a reused buffer: a local
    // string here was constructed (and destroyed) for every record.
    st->unattributed_key.assign("?").append(std::to_string(source));
    key = st->unattributed_key;
  }
  if (st->last_proc != nullptr && internal::Eq(st->last_key, key)) return st->last_proc;
  // Interleaved ranks defeat the last-process cache; a small table indexed by pid avoids most
  // hash lookups.
  internal::PidSlot& slot = st->pid_cache[r.pid % st->pid_cache.size()];
  if (!r.proc_key.empty() && slot.proc != nullptr && slot.proc->pid == r.pid &&
      internal::Eq(slot.proc->host, r.host)) {
    return slot.proc;
  }
  auto it = st->procs.find(absl::string_view(key.data(), key.size()));
  if (it == st->procs.end()) {
    if (st->procs.size() >= st->options.max_processes && !st->proc_order.empty()) {
      st->procs.erase(st->proc_order.front());
      st->proc_order.pop_front();
      ++st->counters.evicted_processes;
      st->last_proc = nullptr;
      st->pid_cache.fill({});
    }
    auto p = std::make_unique<ProcState>();
    p->host.assign(r.host);
    p->pid = r.pid;
    p->source = source;
    it = st->procs.emplace(std::string(key), std::move(p)).first;
    st->proc_order.emplace_back(key);
  }
  st->last_key.assign(key);
  st->last_proc = it->second.get();
  if (!r.proc_key.empty()) slot.proc = st->last_proc;
  return st->last_proc;
}

// Assignments such as "export NCCL_SOCKET_IFNAME=lo", "mpirun -x NCCL_SOCKET_IFNAME=lo",
// "NCCL_NET='AWS Libfabric' \", "FI_PROVIDER=efa" in launcher output and env dumps.
void ScanAssignments(SourceState* ss, std::string_view line, std::string_view prefix,
                     const Ctx& c) {
  size_t at = 0;
  for (int guard = 0; guard < 16; ++guard) {
    at = FindIn(line, prefix, at);
    if (at == std::string_view::npos) return;
    if (at > 0) {
      char before = line[at - 1];
      if ((before >= 'A' && before <= 'Z') || before == '_' || IsDigitChar(before)) {
        at += prefix.size();
        continue;
      }
    }
    size_t e = at + prefix.size();
    while (e < line.size() &&
           ((line[e] >= 'A' && line[e] <= 'Z') || IsDigitChar(line[e]) || line[e] == '_')) {
      ++e;
    }
    if (e >= line.size() || line[e] != '=') {
      at = e;
      continue;
    }
    std::string_view name = line.substr(at, e - at);
    size_t vb = e + 1;
    size_t ve = vb;
    if (vb < line.size() && (line[vb] == '\'' || line[vb] == '"')) {
      char q = line[vb];
      ++vb;
      ve = line.find(q, vb);
      if (ve == std::string_view::npos) ve = line.size();
    } else {
      while (ve < line.size() && line[ve] != ' ' && line[ve] != '\t' && line[ve] != ';' &&
             line[ve] != '`') {
        ++ve;
      }
    }
    std::string_view value = line.substr(vb, ve - vb);
    AddSetting(&ss->launcher_env, 64, name, value);
    if (name == "NCCL_SOCKET_IFNAME" && internal::IfnameSelectsLoopback(value)) {
      SetEv(&ss->ev_launcher_ifname, c);
    } else if ((name == "NCCL_IB_DISABLE" && value == "1") ||
               (name == "NCCL_NET" && Contains(value, "Socket"))) {
      SetEv(&ss->ev_launcher_ib_disable, c);
    }
    at = ve;
  }
}

// nccl-tests prints the placement of every rank: "#  Rank  0 Group  0 Pid  27255 on kolyoz1
// device  0 [0x42] NVIDIA H100 80GB HBM3" (older: no Group).
void HandleTestsHeader(SourceState* ss, std::string_view line, const Ctx& c) {
  size_t pos = 1;
  std::string_view prev;
  int rank = -1;
  int pid = -1;
  std::string_view host;
  bool device = false;
  for (int guard = 0; guard < 16; ++guard) {
    std::string_view tok = internal::NextToken(line, &pos);
    if (tok.empty()) break;
    if (prev == "Rank") rank = ParseInt(tok);
    if (prev == "Pid") pid = ParseInt(tok);
    if (prev == "on") host = tok;
    if (tok == "device" && !host.empty()) device = true;
    prev = tok;
  }
  if (rank < 0 || host.empty() || !device || ss->header.size() >= 4096) return;
  for (const auto& h : ss->header) {
    if (h.rank == rank) return;
  }
  ss->header.push_back(
      {rank, static_cast<uint32_t>(std::max(pid, 0)), std::string(host.substr(0, 255))});
  SetEv(&ss->ev_header, c);
}

void HandleOther(State* st, SourceState* ss, std::string_view line, const Ctx& c) {
  std::string_view version, cuda;
  if (FindVersionBanner(line, &version, &cuda)) {
    ++st->counters.nccl_lines;
    if (ss->banner_version.empty()) {
      ss->banner_version.assign(version.substr(0, 32));
      ss->banner_cuda.assign(cuda.substr(0, 32));
    } else if (ss->banner_version != version) {
      ss->banner_conflict = true;
    }
    return;
  }
  if (line[0] == '#') {
    HandleTestsHeader(ss, line, c);
    return;
  }
  if (StartsWith(line, "libfabric:")) {
    uint32_t pid = static_cast<uint32_t>(std::max(0, ParseInt(line.substr(10))));
    if (Contains(line, "FI_HMEM capability requires RDMA")) {
      if (ss->libfabric_warn_pids.size() < 256) ss->libfabric_warn_pids.emplace_back(pid, "hmem");
      SetEv(&ss->ev_hmem, c);
    } else if (Contains(line, "provider efa output empty list")) {
      SetEv(&ss->ev_efa_empty, c);
    }
    return;
  }
  if (Contains(line, "NCCL")) {
    if (Contains(line, "Watchdog caught collective operation timeout") ||
        Contains(line, "Timeout at NCCL work") || Contains(line, "detected by watchdog")) {
      Count(&ss->watchdog, c);
    } else if (Contains(line, "NCCL error") || Contains(line, "Test NCCL failure") ||
               Contains(line, "NCCL communicator was aborted") ||
               Contains(line, "ncclSystemError") || Contains(line, "ncclRemoteError")) {
      Count(&ss->framework_errors, c);
    }
    if (Contains(line, "NCCL_")) ScanAssignments(ss, line, "NCCL_", c);
  }
  if (Contains(line, "FI_")) ScanAssignments(ss, line, "FI_", c);
}

// `may_hold_ansi` false: the caller knows the text holds no ESC byte (FeedLines checked the
// whole block at once).
// Where a launcher says a record's process runs: Ray's "(... pid=N, ip=A)" names the node by
// its address, and prints no "ip=" for workers on the driver's node; pdsh and similar put
// "<host>: " before the record. Empty when the line shows neither.
std::string LauncherLocation(std::string_view ray_prefix, std::string_view before_record) {
  if (!ray_prefix.empty()) {
    std::string_view v;
    if (!After(ray_prefix, "ip=", &v)) return "ray-driver-node";
    size_t e = 0;
    while (e < v.size() && v[e] != ')' && v[e] != ',' && v[e] != ' ' && e < 64) ++e;
    return "ip=" + std::string(v.substr(0, e));
  }
  // "rdma-gpu-train-worker-0: rdma-gpu-train-worker-0:19487:21056 [3] NCCL INFO ..."
  if (before_record.size() < 4 || before_record.size() > 130 || before_record[0] == '[' ||
      !StartsWith(before_record.substr(before_record.size() - 2), ": ")) {
    return "";
  }
  std::string_view host = before_record.substr(0, before_record.size() - 2);
  for (char ch : host) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || IsDigitChar(ch) ||
              ch == '-' || ch == '.' || ch == '_';
    if (!ok) return "";
  }
  return "host=" + std::string(host.substr(0, host.find('.')));
}

// A cleaned, non-empty line that is no Ray marker: its records, or what else it says.
void ProcessClean(State* st, uint32_t source, uint64_t line_no, std::string_view line,
                  std::string_view ray_prefix) {
  Ctx c{st, source, line_no, line};
  size_t n = FindRecords(line, &st->records);
  if (n == 0) {
    // Binary junk is counted and skipped. Checked only here: a NUL inside an NCCL record's
    // text is harmless to the scanner, and the common path saves a pass over every line.
    if (memchr(line.data(), '\0', line.size()) != nullptr) {
      ++st->counters.malformed_lines;
      return;
    }
    HandleOther(st, st->sources[source].get(), line, c);
    return;
  }
  ++st->counters.nccl_lines;
  for (const Record& r : st->records) {
    ++st->counters.records;
    if (r.legacy) ++st->counters.legacy_records;
    ProcState* p = GetProc(st, r, source);
    if (r.dev >= 0 && r.dev < 64) p->devices |= uint64_t{1} << r.dev;
    if (!p->ev_first.set()) SetRef(&p->ev_first, c);
    // Launcher prefixes are rare: checked only when the record does not start the line.
    if ((!ray_prefix.empty() || r.full.data() != line.data()) && !r.proc_key.empty() &&
        &r == &st->records.front()) {
      std::string where = LauncherLocation(
          ray_prefix, line.substr(0, static_cast<size_t>(r.full.data() - line.data())));
      if (!where.empty()) {
        AddUniqueString(&p->launcher_hosts, where, 8);
        SetEv(&p->ev_launcher, c);
      }
    }
    if (r.level == Level::kWarn) {
      if (!r.legacy) ++st->counters.warn_records;
      HandleWarn(p, r, c);
    } else if (r.level == Level::kInfo) {
      HandleInfo(st, p, r.message, c);
    }
  }
}

void ProcessText(State* st, uint32_t source, uint64_t line_no, std::string_view text,
                 bool may_hold_ansi) {
  RayWrapping ray;
  std::string_view line = CleanLine(text, &st->scratch, may_hold_ansi, &ray);
  if (line.empty()) return;
  st->counters.ray_repeated_lines += ray.repeated;
  if (IsRayMarkerLine(line)) {
    ++st->counters.ray_marker_lines;
    return;
  }
  ProcessClean(st, source, line_no, line, ray.prefix);
}

// Where the lines of `name` go without adding a source: its own slot, or the last one when the
// table is full (overflow shares it); nullopt when `name` would get a new slot.
std::optional<uint32_t> KnownSourceIndex(const State* st, std::string_view name) {
  auto it = st->source_index.find(absl::string_view(name.data(), name.size()));
  if (it != st->source_index.end()) return it->second;
  if (!st->sources.empty() && st->sources.size() >= st->options.max_sources) {
    return static_cast<uint32_t>(st->sources.size() - 1);
  }
  return std::nullopt;
}

uint32_t SourceIndex(State* st, std::string_view name) {
  // Every line names its source: memcmp beats a byte loop on path-length strings.
  if (st->have_last_source && st->last_source_name.size() == name.size() &&
      memcmp(st->last_source_name.data(), name.data(), name.size()) == 0) {
    return st->last_source;
  }
  uint32_t idx;
  if (const std::optional<uint32_t> known = KnownSourceIndex(st, name)) {
    idx = *known;
  } else {
    idx = static_cast<uint32_t>(st->sources.size());
    auto ss = std::make_unique<SourceState>();
    ss->name.assign(name.substr(0, 1024));
    ss->joiner = std::make_unique<PartialJoiner>(st->options.max_line_bytes);
    st->sources.push_back(std::move(ss));
    st->source_index.emplace(std::string(name), idx);
  }
  st->last_source_name.assign(name);
  st->last_source = idx;
  st->have_last_source = true;
  return idx;
}

}  // namespace

namespace internal {

uint32_t SourceIndexFor(State* st, std::string_view name) { return SourceIndex(st, name); }

void AddSettingTo(std::vector<std::pair<std::string, std::string>>* settings, size_t cap,
                  std::string_view name, std::string_view value) {
  AddSetting(settings, cap, name, value);
}

void AddUnique(std::vector<std::string>* set, std::string_view value, size_t cap) {
  AddUniqueString(set, value, cap);
}

}  // namespace internal

Analyzer::Analyzer(AnalyzerOptions options) : state_(std::make_unique<State>(options)) {
  if (state_->options.max_processes == 0) state_->options.max_processes = 1;
  if (state_->options.max_comms_per_process == 0) state_->options.max_comms_per_process = 1;
  if (state_->options.max_sources == 0) state_->options.max_sources = 1;
  if (state_->options.max_line_bytes < 256) state_->options.max_line_bytes = 256;
}

Analyzer::~Analyzer() = default;

const Counters& Analyzer::counters() const { return state_->counters; }

const AnalyzerOptions& Analyzer::options() const { return state_->options; }

namespace {

// Feed() for a source already looked up. `raw_has_esc` false: the caller checked that the
// raw line holds no ESC byte.
void FeedLine(State* st, uint32_t source_idx, uint64_t line_no, std::string_view raw_line,
              bool raw_has_esc) {
  ++st->counters.lines;
  // Most lines of an NCCL log need no envelope or cleaning: a line CleanLine() would return as
  // it is (IsCleanAsIs; it starts with a letter, so it holds no CRI time stamp, docker '{' or
  // Ray marker either) goes straight to its records instead of through the steps below.
  if (!raw_has_esc && raw_line.size() <= st->options.max_line_bytes &&
      st->options.envelope == Envelope::kAuto && IsCleanAsIs(raw_line)) {
    ProcessClean(st, source_idx, line_no, raw_line, {});
    return;
  }
  if (raw_line.size() > st->options.max_line_bytes) {
    raw_line = raw_line.substr(0, st->options.max_line_bytes);
    ++st->counters.truncated_lines;
  }
  SourceState* ss = st->sources[source_idx].get();
  Envelope env = st->options.envelope;
  CriRecord cri;
  bool partial = false;
  if (env == Envelope::kAuto && !raw_line.empty()) {
    if (IsDigitChar(raw_line[0]) && ParseCri(raw_line, &cri)) {
      env = Envelope::kCri;
    } else if (raw_line[0] == '{' && ss->json_records != 0 &&
               ParseDockerJson(raw_line, &st->json_text, &partial)) {
      env = Envelope::kDockerJson;
    } else {
      env = Envelope::kPlain;
    }
  } else if (env == Envelope::kCri) {
    if (!ParseCri(raw_line, &cri)) {
      ++st->counters.malformed_lines;
      return;
    }
  } else if (env == Envelope::kDockerJson) {
    if (!ParseDockerJson(raw_line, &st->json_text, &partial)) {
      ++st->counters.malformed_lines;
      return;
    }
  }
  std::string_view text = raw_line;
  if (env == Envelope::kCri || env == Envelope::kDockerJson) {
    std::string_view piece = env == Envelope::kCri ? cri.text : std::string_view(st->json_text);
    if (env == Envelope::kCri) partial = cri.partial;
    if (partial) {
      ss->joiner->AddPartial(piece);
      return;
    }
    bool truncated = false;
    text = ss->joiner->Complete(piece, &truncated);
    if (truncated) ++st->counters.truncated_lines;
  }
  // Text decoded from JSON or joined from earlier pieces is not part of the checked line.
  bool in_raw = text.data() >= raw_line.data() &&
                text.data() + text.size() <= raw_line.data() + raw_line.size();
  ProcessText(st, source_idx, line_no, text, raw_has_esc || !in_raw);
}

// A docker json-file log is json from its first line on; in any other file a '{' at a line's
// start (Trainer's metric dicts, JSON-lines logging) is text, for the block scan and the
// per-line path alike. Decided once per source, by its first line.
void DecideJsonRecords(State* st, SourceState* ss, std::string_view first) {
  if (ss->json_records >= 0) return;
  bool partial = false;
  ss->json_records =
      !first.empty() && first[0] == '{' && ParseDockerJson(first, &st->json_text, &partial) ? 1 : 0;
}

}  // namespace

void Analyzer::Feed(std::string_view source, uint64_t line_no, std::string_view raw_line) {
  State* st = state_.get();
  const uint32_t idx = SourceIndex(st, source);
  DecideJsonRecords(st, st->sources[idx].get(), raw_line);
  FeedLine(st, idx, line_no, raw_line, true);
}

uint64_t Analyzer::FeedLines(std::string_view source, uint64_t first_line_no,
                             std::string_view data) {
  if (data.empty()) return 0;
  State* st = state_.get();
  const uint32_t source_idx = SourceIndex(st, source);
  const Envelope env = st->options.envelope;
  if (env == Envelope::kCri || env == Envelope::kDockerJson) {
    // A forced envelope counts every line that does not parse as malformed: all are looked at.
    uint64_t n = 0;
    for (size_t start = 0; start < data.size(); ++n) {
      size_t end = data.find('\n', start);
      if (end == std::string_view::npos) end = data.size();
      FeedLine(st, source_idx, first_line_no + n, data.substr(start, end - start), true);
      start = end + 1;
    }
    return n;
  }
  // Lines the block scan passes over hold nothing the per-line path would react to; they are
  // only counted. A split record's rest is fed even when it holds no needle.
  SourceState* ss = st->sources[source_idx].get();
  DecideJsonRecords(st, ss, data.substr(0, data.find('\n')));
  PartialJoiner* joiner = ss->joiner.get();
  // The ESC bytes of the block are found by one forward scan instead of a memchr per line in
  // CleanLine: `next_esc` is the first one at or after the current line (size() when none).
  auto find_esc = [&](size_t from) {
    const void* e = memchr(data.data() + from, '\x1b', data.size() - from);
    return e == nullptr ? data.size()
                        : static_cast<size_t>(static_cast<const char*>(e) - data.data());
  };
  size_t next_esc = find_esc(0);
  uint64_t fed = 0;
  const uint64_t n = ForEachCandidateLine(
      data, st->options.max_line_bytes, joiner->pending(),
      [&](uint64_t index, std::string_view line) {
        const auto start = static_cast<size_t>(line.data() - data.data());
        if (next_esc < start) next_esc = find_esc(start);
        FeedLine(st, source_idx, first_line_no + index, line, next_esc < start + line.size());
        ++fed;
        return joiner->pending();
      },
      /*dense_runs=*/true, /*json=*/ss->json_records == 1);
  st->counters.lines += n - fed;
  return n;
}

bool Analyzer::AwaitsContinuation(std::string_view source) const {
  const State* st = state_.get();
  const std::optional<uint32_t> idx = KnownSourceIndex(st, source);
  return idx.has_value() && st->sources[*idx]->joiner->pending();
}

}  // namespace efawatch::nccl
