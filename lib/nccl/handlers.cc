// SPDX-License-Identifier: Apache-2.0
// The record handlers: each INFO record (dispatched on its first character) and WARN record
// updates its process's state: nets and plugins, communicators and their channels, bootstrap,
// echoed settings, error chains.

#include "lib/nccl/handlers.h"

#include <algorithm>

#include "lib/nccl/comm_line.h"

namespace efawatch::nccl::internal {
namespace {

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
  } else if (StartsWith(m, "NET/IB : Using") || StartsWith(m, "NET/IB: [")) {
    // "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>": the OOB interface is this host's
    // address. With no device NCCL still prints the line, its list empty but for the relaxed
    // ordering flag ("NET/IB : Using [RO]; OOB eth0:..." in 2.29): that is no IB device.
    std::string_view list = m.substr(0, std::min(m.size(), m.find("; OOB")));
    bool device = false;
    for (size_t at = list.find('['); at != std::string_view::npos; at = list.find('[', at + 1)) {
      if (at + 1 < list.size() && list[at + 1] >= '0' && list[at + 1] <= '9') device = true;
    }
    if (!device) {
      p->ib_no_device = true;
      return;
    }
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
void HandleVersion(ProcState* p, std::string_view m, const Ctx&) {
  std::string_view tok = m, v, cuda;
  Consume(&tok, "NCCL version ");
  tok = tok.substr(0, std::min<size_t>(tok.find(' '), 64));
  SplitVersion(tok, &v, &cuda);
  Set(&p->version, v);
  Set(&p->cuda, cuda);
}

void HandleOfiInfo(ProcState* p, std::string_view m, const Ctx& c) { HandleOfi(p, m, c, false); }

// NCCL 2.3: one line per socket interface; the first one carries the bootstrap.
void HandleNetInterface(ProcState* p, std::string_view m, const Ctx& c) {
  std::string_view iface = m;
  Consume(&iface, "NET : Using interface ");
  for (const auto& item : internal::ParseIfList(iface, 1)) AddOwnAddr(p, item.iface, item.addr);
  HandleBootstrap(p, iface, c);
}

void HandleNoPlugin(ProcState* p, std::string_view, const Ctx& c) {
  p->plugin_not_found = true;
  SetEv(&p->ev_plugin, c);
}

void HandleIbNoDevice(ProcState* p, std::string_view, const Ctx&) { p->ib_no_device = true; }

// A message prefix and its handler: the first rule whose prefix starts the message takes it.
struct Rule {
  std::string_view prefix;
  void (*handle)(ProcState* p, std::string_view m, const Ctx& c);
};

// The 'N' subsystem: NCCL's version, echoed settings, and the nets' own lines, in the order
// they are tried (a longer prefix before a shorter one it starts with).
constexpr Rule kNRules[] = {
    {"NCCL version ", HandleVersion},
    {"NCCL_", HandleEnvEcho},
    {"NET/OFI ", HandleOfiInfo},
    {"NET/Plugin", HandlePlugin},
    {"NET/IB", HandleNetIb},
    {"NET/Socket : Using", HandleNetSocket},
    {"NET : Using interface ", HandleNetInterface},
    {"No network plugin found", HandleNoPlugin},
    {"Net/IB: call to devices() returned 0", HandleIbNoDevice},
};

void HandleN(ProcState* p, std::string_view m, const Ctx& c) {
  for (const Rule& r : kNRules) {
    if (StartsWith(m, r.prefix)) return r.handle(p, m, c);
  }
}

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace efawatch::nccl::internal
