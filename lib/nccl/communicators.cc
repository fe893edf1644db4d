// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/communicators.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace efawatch::nccl {
namespace {

// The inter-node transport a net name stands for: "Socket" -> NET/Socket, "IB", "IBext_v8" ->
// NET/IB, "AWS Libfabric", "Libfabric", "OFI" -> NET/OFI (the names docs/nccl-findings.md lists).
std::string TransportOfNet(std::string_view net) {
  if (net == "Socket") return "NET/Socket";
  if (net.starts_with("IB")) return "NET/IB";
  if (net.find("Libfabric") != std::string_view::npos || net.starts_with("OFI")) return "NET/OFI";
  return "NET/" + std::string(net);
}

// The NET transport of a communicator's channel lines ("NET/IB/GDRDMA" -> NET/IB), or "" when
// it printed none. TCP wins over anything else the same communicator shows.
std::string ChannelTransport(const Communicator& c) {
  std::string out;
  for (const auto& [name, count] : c.transports) {
    std::string_view t = name;
    if (!t.starts_with("NET/")) continue;
    t.remove_prefix(4);
    const std::string transport = TransportOfNet(t.substr(0, t.find('/')));
    if (out.empty() || transport == "NET/Socket") out = transport;
  }
  return out;
}

std::string ProcessTransport(const Process& p) {
  if (p.network_family == "Socket") return "NET/Socket";
  if (p.network_family == "IB") return "NET/IB";
  if (p.network_family == "OFI") return "NET/OFI";
  if (!p.network.empty()) return TransportOfNet(p.network);
  return "unknown";
}

std::string ProcessProvider(const Process& p) {
  if (!p.ofi_provider.empty()) return p.ofi_provider;
  if (p.network_family.empty() || p.network_family == "OFI") return "unknown";
  return "none";
}

// Worse (TCP) first: the series says what the pod's worst rank of the communicator uses.
int TransportRank(const std::string& t) {
  if (t == "NET/Socket") return 3;
  if (t.starts_with("NET/")) return 2;
  return 0;
}

}  // namespace

std::vector<CommunicatorSeries> CommunicatorsOf(const Report& report, uint64_t evicted_comms,
                                                uint64_t* seen) {
  struct Entry {
    CommunicatorSeries s;
    bool net_channels = false;
    size_t age = 0;  // 0: the newest communicator of one of its processes
  };
  std::vector<Entry> entries;
  std::unordered_map<std::string_view, size_t> index;
  uint64_t distinct = 0;
  for (const Process& p : report.processes) {
    const std::string process_transport = ProcessTransport(p);
    const std::string provider = ProcessProvider(p);
    const size_t n = p.communicators.size();
    for (size_t i = 0; i < n; ++i) {
      const Communicator& c = p.communicators[i];
      if (!c.has_comm_id || c.id.empty() || c.aborted) continue;
      const std::string channel = ChannelTransport(c);
      const std::string transport = channel.empty() ? process_transport : channel;
      auto [it, added] = index.try_emplace(c.id, entries.size());
      if (added) {
        ++distinct;
        Entry e;
        e.s.id = c.id;
        e.s.transport = transport;
        e.s.provider = provider;
        e.age = n - 1 - i;
        entries.push_back(std::move(e));
        it = index.find(entries.back().s.id);  // the key now views the entry's own string
      }
      Entry& e = entries[it->second];
      e.s.nranks = std::max(e.s.nranks, c.nranks);
      e.s.nnodes = std::max(e.s.nnodes, c.nnodes);
      e.net_channels = e.net_channels || !channel.empty();
      e.age = std::min(e.age, n - 1 - i);
      if (TransportRank(transport) > TransportRank(e.s.transport)) {
        e.s.transport = transport;
        e.s.provider = provider;
      }
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.net_channels != b.net_channels) return a.net_channels;
    if (a.age != b.age) return a.age < b.age;
    return a.s.id < b.s.id;
  });
  if (seen != nullptr) *seen = distinct + evicted_comms;
  std::vector<CommunicatorSeries> out;
  out.reserve(entries.size());
  for (Entry& e : entries) out.push_back(std::move(e.s));
  return out;
}

}  // namespace efawatch::nccl
