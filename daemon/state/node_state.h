// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/logs/container_verdict.h"
#include "daemon/workloads/workloads.h"
#include "lib/doctor/doctor.h"
#include "lib/inspector/summary.h"

namespace efawatch::state {

/// The fabric responder this agent opened at start (provider empty: none could be opened).
struct ResponderState {
  std::string provider;  ///< e.g. "efa", "tcp;ofi_rxm"
};

/// What the agent's ping of its own fabric responder, through its own fabric, last gave
/// (FabricReady's proof that the fabric carries messages).
struct SelfPingState {
  enum class Outcome {
    kNoResponder,  ///< no responder runs (--fabric-responder=false, or no provider opened)
    kPending,      ///< none finished yet
    kAnswered,     ///< pongs came back
    kFailed,       ///< no pong, or the probe failed
  };
  Outcome outcome = Outcome::kNoResponder;
  std::string detail;  ///< kFailed: why (the probe's error or its loss); else what was measured
};

/// One peer of this node's ping mesh as its latest round left it.
struct MeshPeer {
  std::string node;
  std::string agent;  ///< host:port of its agent
  bool up = false;    ///< the latest round got at least one pong
};

/// What the node's modules last published, as one immutable whole: the rules that read several
/// modules (NodeConditions and Events, the node health answer, the EFA fallback's input, the
/// scheduled collective's peers) read a snapshot of this instead of reaching into the modules,
/// so each of them is a function of a value a test can build by hand.
struct NodeState {
  /// Every container with a verdict, in key order; a gone one stays until its grace period ends.
  std::shared_ptr<const std::vector<logs::ContainerVerdict>> pods =
      std::make_shared<const std::vector<logs::ContainerVerdict>>();
  /// The workload of each pod of this node, (namespace, pod) -> kind and name (empty when
  /// workload identity is off or has not listed yet).
  std::shared_ptr<const workloads::WorkloadTable> workloads =
      std::make_shared<const workloads::WorkloadTable>();
  unsigned efa_devices = 0;   ///< under the configured sysfs root
  unsigned efa_expected = 0;  ///< what the instance type expects; 0: unknown
  /// The node's allocatable vpc.amazonaws.com/efa as the Kubernetes signals last read it;
  /// nullopt until read, or when the node has none.
  std::optional<unsigned> efa_advertised;
  ResponderState responder;
  bool mesh_running = false;  ///< a ping mesh was configured and built
  std::vector<MeshPeer> mesh_peers;
  /// The node's doctor checks at the latest run; nullopt before the first.
  std::optional<std::vector<doctor::Check>> doctor;
  SelfPingState self_ping;  ///< kNoResponder where no self-ping runs
  /// Every NCCL Inspector communicator of every pod, as the Inspector collector last summed it.
  std::shared_ptr<const std::vector<inspector::CommSummary>> inspector =
      std::make_shared<const std::vector<inspector::CommSummary>>();
};

/// The node's state, published module by module. Each Publish replaces that module's part and
/// makes a new snapshot; readers hold a snapshot as long as they like and never wait on a
/// publisher. Thread-safe.
class NodeStateBoard {
 public:
  std::shared_ptr<const NodeState> Snapshot() const;

  void PublishPods(std::shared_ptr<const std::vector<logs::ContainerVerdict>> pods);
  void PublishWorkloads(std::shared_ptr<const workloads::WorkloadTable> workloads);
  void PublishEfa(unsigned efa_devices);
  void PublishEfaExpected(unsigned efa_expected);
  void PublishEfaAdvertised(std::optional<unsigned> efa_advertised);
  void PublishResponder(ResponderState responder);
  /// Also marks the mesh as running.
  void PublishMesh(std::vector<MeshPeer> peers);
  void PublishDoctor(std::vector<doctor::Check> node_checks);
  void PublishSelfPing(SelfPingState self_ping);
  void PublishInspector(std::shared_ptr<const std::vector<inspector::CommSummary>> comms);

 private:
  template <typename F>
  void Update(F&& change) {
    std::lock_guard lock(mu_);
    auto next = std::make_shared<NodeState>(*state_);  // the pods' vector is shared, not copied
    std::forward<F>(change)(*next);
    state_ = std::move(next);
  }

  mutable std::mutex mu_;
  std::shared_ptr<const NodeState> state_ = std::make_shared<const NodeState>();
};

/// True when a container that is not gone has NCCL processes (the EFA fallback rule asks).
bool NcclActive(const NodeState& state);

}  // namespace efawatch::state
