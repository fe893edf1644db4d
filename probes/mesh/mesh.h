// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "lib/common/finding.h"
#include "probes/fabric/endpoint.h"
#include "probes/mesh/discovery.h"
#include "probes/mesh/selection.h"

namespace efawatch::fabric {
class Pinger;
}

namespace efawatch::mesh {

/// What a peer agent says about itself when asked (over gRPC, in the agent).
struct PeerIdentity {
  std::string fabric_address;  ///< Raw libfabric address of its responder.
  std::string node;            ///< Its node name.
};

/// Asks a peer agent for its identity. Blocking, bounded by `timeout`. A seam: the agent uses
/// gRPC (daemon/rpc/peer_client), tests may use anything.
class PeerLookup {
 public:
  virtual ~PeerLookup() = default;
  virtual absl::StatusOr<PeerIdentity> Lookup(const std::string& agent,
                                              std::chrono::milliseconds timeout) = 0;
};

struct MeshOptions {
  std::string self_node;   ///< This agent's node name.
  std::string self_agent;  ///< This agent's own host:port as peers see it (DNS-listed fleets).
  std::string self_group;  ///< Topology group; empty: none.
  SelectionOptions selection;
  std::chrono::milliseconds interval{15000};  ///< Between round starts.
  double jitter = 0.1;  ///< Each wait is interval x (1 +- jitter): agents drift apart, no herd.
  std::chrono::milliseconds discovery_interval{60000};
  uint32_t count = 10;  ///< Timed pings per peer per round.
  size_t message_bytes = 64;
  std::chrono::milliseconds message_timeout{500};  ///< A later pong is a loss.
  /// A round spends at most this share of the interval; each peer gets an equal slice of it, so
  /// dead peers cannot push rounds past their interval.
  double round_budget = 0.5;
  /// The agent suspects its own link when at least this share of its peers failed (and at
  /// least two were tried): its peers' pingers are happy, it alone is cut off.
  double self_suspect_share = 0.75;
  fabric::EndpointOptions endpoint;
};

/// Per-peer state the collector renders. RTT buckets are cumulative per bound.
struct PeerState {
  std::string node;  ///< Label value: node name, or the agent address until it told its name.
  std::string agent;
  bool up = false;  ///< Latest round got at least one pong.
  uint64_t sent = 0;
  uint64_t lost = 0;
  std::vector<uint64_t> rtt_buckets;  ///< Cumulative counts, one per RttBounds() entry.
  double rtt_sum_seconds = 0;
  uint64_t rtt_count = 0;
  std::string last_error;
};

struct MeshSnapshot {
  std::string source;
  size_t discovered = 0;
  uint64_t discovery_errors = 0;
  uint64_t rounds = 0;
  size_t expected = 0;
  size_t reachable = 0;
  bool self_suspect = false;
  std::vector<PeerState> peers;  ///< Sorted by node.
};

/// Upper bounds of the RTT histogram, seconds: 50 us (EFA) to 2 s (TCP retransmits).
const std::vector<double>& RttBounds();

/// The fleet ping mesh on one agent: discovers peers, selects k of them (PeerSelector), pings
/// each every interval over one long-lived fabric endpoint, keeps per-peer counters and an RTT
/// histogram, and decides self-suspicion. Bandwidth is never scheduled here: it would steal
/// bandwidth from training.
///
/// One jthread. Thread-safe readers (Snapshot). `on_change` runs on the mesh thread after
/// every round with the findings the mesh currently holds (zero or one self-suspicion).
class Mesh {
 public:
  using FindingsSink = std::function<void(std::vector<common::Finding>)>;

  static absl::StatusOr<std::unique_ptr<Mesh>> Create(MeshOptions options,
                                                      std::unique_ptr<PeerSource> source,
                                                      PeerLookup& lookup, FindingsSink findings,
                                                      const common::Clock& clock);
  ~Mesh();
  void Start();
  void Stop();

  MeshSnapshot Snapshot() const;

  /// One discovery (if due) and one round, on the caller's thread; for tests without Start().
  void RunOnce(const std::stop_token& stop);

 private:
  Mesh(MeshOptions options, std::unique_ptr<PeerSource> source, PeerLookup& lookup,
       FindingsSink findings, const common::Clock& clock);
  void Loop(const std::stop_token& stop);
  void Discover(const std::stop_token& stop);
  // Pings one peer; returns true when it answered.
  bool PingPeer(const Peer& peer, std::chrono::milliseconds budget, const std::stop_token& stop);

  // What one round of pings found.
  struct Round {
    std::set<std::string> current;    // agents pinged, this agent's own address left out
    std::vector<std::string> failed;  // node names of the peers that did not answer
    size_t reachable = 0;
    bool found_self = false;  // a peer turned out to be this agent
  };
  // Opens pinger_; when that fails, keeps the reason in pinger_error_ for PingPeer to report.
  void OpenPinger();
  // Pings each peer in its slice of the round budget. Returns false when stopped part way.
  bool PingAll(const std::vector<Peer>& peers, const std::stop_token& stop, Round& round);
  // Whether `agent` told us this agent's own node name.
  bool IsSelf(const std::string& agent) const;
  // Publishes the round in the snapshot and drops the series of peers no longer selected.
  void Publish(const Round& round, bool suspect);
  // The self-suspicion finding; first_seen is when the suspicion started.
  common::Finding SelfSuspicion(std::vector<std::string> failed, size_t expected);

  const MeshOptions options_;
  std::unique_ptr<PeerSource> source_;
  PeerLookup& lookup_;
  FindingsSink findings_;
  const common::Clock& clock_;

  // Mesh-thread only.
  std::unique_ptr<fabric::Pinger> pinger_;
  std::string pinger_error_;  // why pinger_ could not be opened
  std::optional<PeerSelector> selector_;
  std::chrono::steady_clock::time_point next_discovery_{};
  std::map<std::string, PeerIdentity> identities_;  // by agent address
  std::set<std::string> self_agents_;               // addresses that turned out to be this agent
  bool named_fleet_ = false;                        // the source names nodes: hash by node name
  bool suspect_raised_ = false;
  std::chrono::system_clock::time_point suspect_since_{};

  mutable std::mutex mu_;
  MeshSnapshot snap_;                        // guarded by mu_ (peers kept in `states_`)
  std::map<std::string, PeerState> states_;  // by agent address; guarded by mu_
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace efawatch::mesh
