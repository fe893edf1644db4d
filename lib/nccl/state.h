// SPDX-License-Identifier: Apache-2.0
#pragma once

// Internal to efawatch_nccl: the mutable state behind Analyzer, shared by analyzer.cc (feeding)
// and snapshot.cc (deriving the report). Not a public header.

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "lib/nccl/analyzer.h"
#include "lib/nccl/comm_line.h"
#include "lib/nccl/record_scanner.h"

namespace efawatch::nccl::internal {

struct Ev {
  uint32_t source = 0;
  uint64_t line = 0;
  std::string text;
  bool set() const { return line != 0 || !text.empty(); }
};

// Where a line is, without its text: for evidence kept per communicator, which are too many to
// keep a copy of the line each.
struct LineRef {
  uint32_t source = 0;
  uint64_t line = 0;
  bool set() const { return line != 0; }
  Ev AsEv() const { return Ev{source, line, {}}; }
};

// A counted observation with its first evidence.
struct Tally {
  uint64_t count = 0;
  Ev first;
};

// One on-node edge, counted: key = channel << 6 | sending rank in CommState::ring_local,
// sending rank << 6 | receiving rank in CommState::local_links (all below 64). Four bytes, since a
// large job holds tens of thousands of communicators with dozens of edges each; the count
// saturates at 65535.
struct RingEdge {
  uint16_t key = 0;
  uint16_t count = 0;
};

struct CommState {
  std::string ptr;        // "0x55f9..." as printed
  uint64_t ptr_hash = 0;  // HashBytes(ptr), compared before ptr
  std::string comm_id;    // "0x795b..." (2.16+)
  int rank = -1;
  int nranks = -1;
  int nnodes = -1;
  int cuda_dev = -1;
  std::string bus_id;
  bool started = false;
  bool complete = false;
  bool aborted = false;
  int local_ranks = -1;  // "localRanks" (NCCL >= 2.19)
  std::vector<std::pair<std::string, uint64_t>> transports;
  uint64_t net_channels = 0;
  uint64_t net_gdr_channels = 0;
  uint64_t socket_channels = 0;
  // Ring edges over P2P/SHM, counted by (channel << 6 | sending rank) for channels and ranks
  // below 64: a channel whose senders cover every rank of the communicator is a ring that never
  // leaves the node. Counted (not flagged) so Merge can take back what `lead` gave.
  std::vector<RingEdge> ring_local;  // sorted by key
  // The same P2P/SHM edges (ring and tree) by the pair of ranks they join, sending rank << 6 |
  // receiving rank: ranks that such edges join into one set are on one node. Counted like
  // ring_local, for the same reason.
  std::vector<RingEdge> local_links;  // sorted by key
  LineRef ev;                         // the line that created this communicator
  LineRef ev_nodes;                   // the first line with nNodes or localRanks
};

struct ProcState {
  // Empty for the records without a prefix (GetProc keeps them as one process per source), which
  // may hold the lines of several processes on several hosts: see unattributed().
  std::string host;
  uint32_t pid = 0;
  uint32_t source = 0;
  uint64_t devices = 0;  // bit per [dev] value < 64 printed by this process
  std::string version;
  std::string cuda;

  // Net plugin evidence.
  bool plugin_not_found = false;
  bool plugin_abi_mismatch = false;
  bool plugin_loaded = false;
  bool plugin_init_failed = false;
  std::string plugin_name;  // "aws-ofi-nccl 1.4.0aws", "IBext", "NCCL RDMA Plugin v6"
  // The plugin's own "Using aws-ofi-nccl X" line: the name when NCCL did not print one (the
  // first such line wins, while plugin_name keeps the latest).
  std::string ofi_plugin_name;
  std::string failed_plugin;  // plugin named by "Failed to initialize NET plugin X"
  bool ofi_seen = false;      // any NET/OFI line
  bool ibext_seen = false;    // HPC-X / rdma-sharp plugin lines
  std::string weak_family;    // from WARN locations / error chains ("IB", "OFI", "other")
  std::string weak_network;   // e.g. "GPUDirectTCPX"

  // Network selection.
  std::string network;      // "Using network X" / "Using internal Network X" / assigned
  std::string channel_net;  // NET/<name> seen in channel lines (the first one)
  bool ib_using = false;    // "NET/IB : Using [0]mlx5_0:1/IB ..."
  bool ib_no_device = false;
  bool socket_using = false;  // "NET/Socket : Using [0]eth0:..."
  bool socket_lists_loopback = false;
  std::string provider;
  std::string fabric;
  int nics = -1;
  std::string instance_type;

  // Bootstrap.
  std::string boot_if;
  std::string boot_addr;
  bool boot_loopback = false;

  // Node identity: this process's own non-loopback addresses (bootstrap, NET/Socket and OOB
  // interface lists), the peers its errors name (addresses and host names apart), and where a
  // launcher says it runs (Ray "ip=", pdsh "host: "). Small sets, deduplicated, capped.
  std::vector<std::string> addrs;
  bool socket_list_seen = false;  // the NET/Socket interface list was parsed once
  std::vector<std::string> peer_addrs;
  std::vector<std::string> peer_names;
  std::vector<std::string> launcher_hosts;

  // GDR.
  Tally gdr_on;
  Tally gdr_off;

  std::vector<std::pair<std::string, std::string>> settings;

  std::vector<std::unique_ptr<CommState>> comms;
  // comms[i]->ptr_hash, side by side so a lookup does not visit every CommState. Rebuilt by
  // the lookup when its size differs from comms (merge.cc clears it after changing comms).
  std::vector<uint64_t> comm_hashes;
  CommState* current = nullptr;
  CommState pending;  // channel lines seen before the comm that owns them is printed
  // What `pending` held when this analyzer created the process's first communicator
  // (`lead_comm`, which took it). An analyzer fed a later part of a file cannot tell whose those
  // channel lines are: Merge takes them back and gives them to the earlier part's current
  // communicator, as one pass would have. Compared by address only: it may have been evicted.
  // This makes a split analysis exact as long as a process does not print a communicator's
  // address again after its init (NCCL logs do not; a log built by repeating one job's lines
  // under the same pids can move a few channel counts between communicators).
  CommState lead;
  const CommState* lead_comm = nullptr;
  bool lead_taken = false;

  Tally warns;
  Tally error_chains;
  Tally aborts;
  Tally completions;
  Tally connect_failures;
  Tally plugin_failures;
  bool remote_timeout = false;  // a TCP connect timed out: the peer is on another host

  Ev ev_socket_channel;
  Ev ev_net_channel;
  Ev ev_network;
  Ev ev_socket_using;
  Ev ev_provider;
  Ev ev_bootstrap;
  Ev ev_ifname;
  Ev ev_plugin;
  Ev ev_ib_disable;
  Ev ev_first;     // the first record of this process
  Ev ev_peer;      // the first error naming a peer
  Ev ev_launcher;  // the first record with a launcher prefix
  Ev ev_timeout;   // the connect that timed out (remote_timeout)

  // The process of a source's records without a prefix: not one process, and on no known host.
  bool unattributed() const { return host.empty(); }
};

struct HeaderRank {
  int rank = -1;
  uint32_t pid = 0;
  std::string host;
};

// What a source (file / container log) shows outside NCCL records.
struct SourceState {
  std::string name;
  // Whether its lines can be docker json-file records, decided by its first line (an auto
  // envelope): -1 not yet known. Where not, a '{' at a line's start is text to the block scan.
  int8_t json_records = -1;
  std::string banner_version;
  std::string banner_cuda;
  bool banner_conflict = false;
  std::vector<std::pair<std::string, std::string>> launcher_env;  // NCCL_*/FI_* assignments
  Ev ev_launcher_ifname;
  Ev ev_launcher_ib_disable;
  std::vector<HeaderRank> header;  // nccl-tests "#  Rank N ... on HOST device D"
  Ev ev_header;                    // its first line
  Tally watchdog;
  Tally framework_errors;  // "NCCL error in:", "Test NCCL failure", communicator aborted
  // libfabric lines carry the pid but no host: kept here and matched to processes by pid.
  std::vector<std::pair<uint32_t, std::string>> libfabric_warn_pids;  // (pid, what)
  Ev ev_hmem;
  Ev ev_efa_empty;
  std::unique_ptr<PartialJoiner> joiner;
};

struct PidSlot {
  ProcState* proc = nullptr;
};

struct State {
  explicit State(AnalyzerOptions o) : options(o) {}

  AnalyzerOptions options;
  Counters counters;
  std::vector<std::unique_ptr<SourceState>> sources;
  absl::flat_hash_map<std::string, uint32_t> source_index;
  std::string last_source_name;
  uint32_t last_source = 0;
  bool have_last_source = false;

  absl::flat_hash_map<std::string, std::unique_ptr<ProcState>> procs;
  CommLineParser comm_lines;           // reads every communicator line: remembers their shapes
  std::deque<std::string> proc_order;  // insertion order, for eviction
  std::string last_key;
  ProcState* last_proc = nullptr;
  std::array<PidSlot, 1024> pid_cache{};
  // The states of later parts merged into this one (Analyzer::Merge), kept until this one goes.
  std::vector<std::unique_ptr<State>> merged_parts;

  std::vector<Record> records;   // reused per line
  std::string unattributed_key;  // GetProc's key for records without a prefix
  std::string scratch;
  std::string json_text;
  std::string valid_line;  // a line with invalid UTF-8, made valid
};

// Adds `n` to `key`'s count in an edge list (CommState::ring_local, local_links) kept sorted by
// key, so a channel line costs a binary search, not a scan of up to 256 edges; a new key past
// `cap` is dropped (the same keys survive as with an unsorted list: the first `cap` distinct
// ones).
inline void AddRingEdge(std::vector<RingEdge>* edges, uint32_t key, uint32_t n, size_t cap = 256) {
  auto it = std::lower_bound(edges->begin(), edges->end(), key,
                             [](const RingEdge& e, uint32_t k) { return e.key < k; });
  if (it != edges->end() && it->key == key) {
    it->count = static_cast<uint16_t>(std::min<uint32_t>(0xffff, it->count + n));
    return;
  }
  if (edges->size() < cap) {
    edges->insert(it, RingEdge{static_cast<uint16_t>(key),
                               static_cast<uint16_t>(std::min<uint32_t>(0xffff, n))});
  }
}

// Shared by analyzer.cc and merge.cc.
uint32_t SourceIndexFor(State* st, std::string_view name);
void AddSettingTo(std::vector<std::pair<std::string, std::string>>* settings, size_t cap,
                  std::string_view name, std::string_view value);
// Adds `value` to a small set kept as a vector, unless present or the set holds `cap` items.
void AddUnique(std::vector<std::string>* set, std::string_view value, size_t cap);

}  // namespace efawatch::nccl::internal
