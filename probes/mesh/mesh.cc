// SPDX-License-Identifier: Apache-2.0
#include "probes/mesh/mesh.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "probes/fabric/pinger.h"

namespace efawatch::mesh {
namespace {

constexpr auto kMaxLookupTimeout = std::chrono::milliseconds(2000);
constexpr size_t kFailuresNamed = 5;  // Peers named in the self-suspicion's evidence.

}  // namespace

const std::vector<double>& RttBounds() {
  static const std::vector<double> bounds = {50e-6,  100e-6, 250e-6, 500e-6, 1e-3,
                                             2.5e-3, 5e-3,   10e-3,  25e-3,  50e-3,
                                             100e-3, 250e-3, 500e-3, 1.0,    2.0};
  return bounds;
}

absl::StatusOr<std::unique_ptr<Mesh>> Mesh::Create(MeshOptions options,
                                                   std::unique_ptr<PeerSource> source,
                                                   PeerLookup& lookup, FindingsSink findings,
                                                   const common::Clock& clock) {
  if (source == nullptr) return absl::InvalidArgumentError("mesh needs a peer source");
  if (options.interval <= std::chrono::milliseconds(0) || options.count == 0) {
    return absl::InvalidArgumentError("mesh interval and count must be positive");
  }
  return std::unique_ptr<Mesh>(
      new Mesh(std::move(options), std::move(source), lookup, std::move(findings), clock));
}

Mesh::Mesh(MeshOptions options, std::unique_ptr<PeerSource> source, PeerLookup& lookup,
           FindingsSink findings, const common::Clock& clock)
    : options_(std::move(options)),
      source_(std::move(source)),
      lookup_(lookup),
      findings_(std::move(findings)),
      clock_(clock) {
  snap_.source = std::string(source_->Name());
}

Mesh::~Mesh() { Stop(); }

void Mesh::Start() {
  thread_ = std::jthread([this](const std::stop_token& stop) { Loop(stop); });
}

void Mesh::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void Mesh::Loop(const std::stop_token& stop) {
  std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> spread(-options_.jitter, options_.jitter);
  // Start at a random point of the first interval, so agents restarted together (a DaemonSet
  // rollout) do not ping in lockstep.
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
      options_.interval * std::uniform_real_distribution<double>(0, options_.jitter)(rng));
  std::mutex m;
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(m);
      if (wake_.wait_for(lock, stop, wait, [] { return false; }) || stop.stop_requested()) break;
    }
    const auto start = clock_.Now();
    RunOnce(stop);
    const auto next = options_.interval * (1.0 + spread(rng));
    wait = std::max(
        std::chrono::milliseconds(0),
        std::chrono::duration_cast<std::chrono::milliseconds>(next - (clock_.Now() - start)));
  }
}

void Mesh::Discover(const std::stop_token& stop) {
  auto listed = source_->List(stop);
  const auto now = clock_.Now();
  if (!listed.ok()) {
    std::lock_guard lock(mu_);
    ++snap_.discovery_errors;
    // Keep the previous list; try again at the next round rather than a full discovery
    // interval later.
    next_discovery_ = now;
    return;
  }
  std::vector<Peer> fleet;
  for (Peer& p : *listed) {
    const bool self = (!options_.self_node.empty() && p.node == options_.self_node) ||
                      (!options_.self_agent.empty() && p.agent == options_.self_agent) ||
                      self_agents_.contains(p.agent);
    if (!self) fleet.push_back(std::move(p));
  }
  {
    std::lock_guard lock(mu_);
    snap_.discovered = listed->size();
  }
  named_fleet_ =
      std::any_of(fleet.begin(), fleet.end(), [](const Peer& p) { return !p.node.empty(); });
  selector_.emplace(std::move(fleet), options_.selection);
  next_discovery_ = now + options_.discovery_interval;
}

bool Mesh::PingPeer(const Peer& peer, std::chrono::milliseconds budget,
                    const std::stop_token& stop) {
  const auto start = clock_.Now();
  const auto deadline = start + budget;
  PeerState fresh;
  {
    std::lock_guard lock(mu_);
    fresh = states_[peer.agent];
  }
  PeerState& st = fresh;
  st.agent = peer.agent;
  if (st.node.empty()) st.node = peer.node.empty() ? peer.agent : peer.node;
  if (st.rtt_buckets.empty()) st.rtt_buckets.assign(RttBounds().size(), 0);

  auto fail = [&](std::string why) {
    st.sent += options_.count;
    st.lost += options_.count;
    st.up = false;
    st.last_error = std::move(why);
    std::lock_guard lock(mu_);
    states_[peer.agent] = st;
    return false;
  };

  auto known = identities_.find(peer.agent);
  if (known == identities_.end()) {
    auto id = lookup_.Lookup(peer.agent, std::min(budget, kMaxLookupTimeout));
    if (!id.ok()) return fail(std::string(id.status().message()));
    known = identities_.emplace(peer.agent, *std::move(id)).first;
  }
  if (!known->second.node.empty()) st.node = known->second.node;
  if (!pinger_) return fail(pinger_error_);
  fabric::PingOptions o;
  o.count = options_.count;
  o.warmup = 1;         // The first message to a peer may set up a connection (rxm); untimed.
  o.background = true;  // Every agent pings all the time: CPU matters more than µs of RTT.
  o.message_timeout = options_.message_timeout;
  o.deadline = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.Now());
  if (o.deadline <= std::chrono::milliseconds(0)) return fail("no time left in the round budget");
  auto r = pinger_->Run(known->second.fabric_address, o, stop, clock_);
  if (pinger_->Wedged()) pinger_.reset();  // A blackholed peer holds every send slot.
  if (!r.ok()) {
    identities_.erase(known);
    return fail(std::string(r.status().message()));
  }
  if (r->end == fabric::ProbeEnd::kCancelled) return false;
  st.sent += options_.count;
  st.lost += std::min<uint64_t>(options_.count, r->lost + r->errors);
  st.up = r->received > 0;
  st.last_error = r->last_error;
  for (double us : r->rtt_us) {
    const double s = us / 1e6;
    st.rtt_sum_seconds += s;
    ++st.rtt_count;
    const auto& bounds = RttBounds();
    for (size_t i = 0; i < bounds.size(); ++i) {
      if (s <= bounds[i]) ++st.rtt_buckets[i];
    }
  }
  // No answer at all: the peer may have restarted with a new fabric address; ask it again.
  if (!st.up) {
    identities_.erase(peer.agent);
    if (st.last_error.empty()) st.last_error = "no pong within the message timeout";
  }
  std::lock_guard lock(mu_);
  states_[peer.agent] = st;
  return st.up;
}

void Mesh::RunOnce(const std::stop_token& stop) {
  if (!selector_ || clock_.Now() >= next_discovery_) Discover(stop);
  std::vector<Peer> peers;
  if (selector_) {
    const std::string& self_key = named_fleet_ ? options_.self_node : options_.self_agent;
    peers = selector_->Select(self_key, options_.self_group);
  }
  // Opened outside any peer's time slice: a fi_getinfo takes a good part of a second on tcp.
  if (!pinger_ && !peers.empty()) OpenPinger();
  Round round;
  if (!PingAll(peers, stop, round)) return;
  if (round.found_self) next_discovery_ = clock_.Now();
  const size_t expected = round.current.size();
  const bool suspect =
      expected >= 2 && static_cast<double>(round.failed.size()) >=
                           options_.self_suspect_share * static_cast<double>(expected);
  Publish(round, suspect);
  std::vector<common::Finding> findings;
  if (suspect) {
    findings.push_back(SelfSuspicion(std::move(round.failed), expected));
  } else {
    suspect_raised_ = false;
  }
  if (findings_) findings_(std::move(findings));
}

void Mesh::OpenPinger() {
  auto p = fabric::Pinger::Create(options_.endpoint, options_.message_bytes);
  if (p.ok()) {
    pinger_ = *std::move(p);
  } else {
    pinger_error_ = absl::StrCat("fabric endpoint: ", p.status().message());
  }
}

bool Mesh::PingAll(const std::vector<Peer>& peers, const std::stop_token& stop, Round& round) {
  const auto budget = std::chrono::duration_cast<std::chrono::milliseconds>(
      options_.interval * options_.round_budget / std::max<size_t>(1, peers.size()));
  for (const Peer& p : peers) {
    if (stop.stop_requested()) return false;
    round.current.insert(p.agent);
    const bool ok = PingPeer(p, budget, stop);
    // A DNS-listed fleet includes this agent's own address, which it learns only when it
    // asks itself for its identity: drop it and select again at the next discovery.
    if (IsSelf(p.agent)) {
      self_agents_.insert(p.agent);
      round.found_self = true;
      round.current.erase(p.agent);
      continue;
    }
    if (ok) {
      ++round.reachable;
    } else {
      std::lock_guard lock(mu_);
      round.failed.push_back(states_[p.agent].node);
    }
  }
  return true;
}

bool Mesh::IsSelf(const std::string& agent) const {
  auto id = identities_.find(agent);
  return id != identities_.end() && !options_.self_node.empty() &&
         id->second.node == options_.self_node;
}

void Mesh::Publish(const Round& round, bool suspect) {
  std::lock_guard lock(mu_);
  // Peers no longer selected lose their series: cardinality stays at the fan-out.
  for (auto it = states_.begin(); it != states_.end();) {
    it = round.current.contains(it->first) ? std::next(it) : states_.erase(it);
  }
  snap_.expected = round.current.size();
  snap_.reachable = round.reachable;
  snap_.self_suspect = suspect;
  ++snap_.rounds;
}

common::Finding Mesh::SelfSuspicion(std::vector<std::string> failed, size_t expected) {
  if (!suspect_raised_) suspect_since_ = clock_.WallNow();
  suspect_raised_ = true;
  common::Finding f;
  f.kind = KindName(common::FindingKind::kMeshSelfSuspect);
  f.severity = common::Severity::kCritical;
  f.subject = options_.self_node;
  f.message = absl::StrCat(failed.size(), " of ", expected,
                           " fabric peers did not answer this node's mesh pings: this node's "
                           "own fabric link is the likely fault, not its peers");
  std::sort(failed.begin(), failed.end());
  if (failed.size() > kFailuresNamed) failed.resize(kFailuresNamed);
  f.evidence.source = "mesh";
  f.evidence.text = absl::StrCat("failed peers: ", absl::StrJoin(failed, ", "));
  f.first_seen = suspect_since_;
  f.last_seen = clock_.WallNow();
  return f;
}

MeshSnapshot Mesh::Snapshot() const {
  std::lock_guard lock(mu_);
  MeshSnapshot s = snap_;
  for (const auto& [agent, st] : states_) s.peers.push_back(st);
  std::sort(s.peers.begin(), s.peers.end(),
            [](const PeerState& a, const PeerState& b) { return a.node < b.node; });
  return s;
}

}  // namespace efawatch::mesh
