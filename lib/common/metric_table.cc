// SPDX-License-Identifier: Apache-2.0
#include "lib/common/metric_table.h"

#include <algorithm>
#include <string>

#include "lib/common/efa_counters.h"

namespace efawatch::metrics {
namespace {

// efawatch_efa_<counter>_total for every known EFA counter, in KnownCounters() order. Names are
// kept as the driver spells them, so they stay recognisable next to sysfs. Built once; the
// strings outlive every Metric handle that points into them.
const std::vector<std::string>& EfaCounterNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& c : efa::KnownCounters())
      n.push_back("efawatch_efa_" + std::string(c.name) + "_total");
    return n;
  }();
  return names;
}

// Label cardinality is bounded by design: collectors, devices and ports are few per node, and
// per-pod series are deleted when the pod's logs go away. Never label by pid, rank or file.
std::vector<MetricDef> BuildTable() {
  using T = MetricType;
  std::vector<MetricDef> t = {
      // Agent itself.
      {M::kBuildInfo.name(),
       T::kGauge,
       "Always 1; labels carry the agent version, git revision and the NCCL version the NCCL "
       "probe was built against (empty when built without CUDA).",
       {"version", "revision", "nccl"}},
      {M::kStartTimeSeconds.name(), T::kGauge, "Unix time at which the agent started.", {}},
      {M::kCollectorSuccess.name(),
       T::kGauge,
       "1 when the collector's last run at this scrape succeeded, 0 when it failed or ran out of "
       "its time budget.",
       {"collector"}},
      {M::kCollectorDurationSeconds.name(),
       T::kGauge,
       "Time the collector took at this scrape.",
       {"collector"}},
      {M::kFindings.name(),
       T::kGauge,
       "Current findings on this node by kind and severity (self-clearing), and by the pod whose "
       "log showed them (namespace and pod empty for node, device and file findings).",
       {"kind", "severity", "namespace", "pod"}},
      // Process.
      {M::kProcessResidentMemoryBytes.name(),
       T::kGauge,
       "Resident set size of the agent process.",
       {}},
      {M::kProcessCpuSecondsTotal.name(),
       T::kCounter,
       "User and system CPU time the agent process has used.",
       {}},
      {M::kProcessOpenFds.name(), T::kGauge, "File descriptors the agent process has open.", {}},
      {M::kInternalErrorsTotal.name(),
       T::kCounter,
       "Exceptions caught by a thread's last-resort handler (a bug on some input): the work "
       "item was dropped and the agent went on serving. component: logs.",
       {"component"}},
      {M::kMemoryBudgetBytes.name(),
       T::kGauge,
       "The memory budget for what callers ask of the agent (--memory-budget).",
       {}},
      {M::kMemoryBudgetInUseBytes.name(),
       T::kGauge,
       "Bytes of the memory budget reserved by running requests (their worst case).",
       {}},
      {M::kCollectiveInProgress.name(),
       T::kGauge,
       "1 while this node's one collective slot is held (a collective joined or running), else 0.",
       {}},
      {M::kCollectiveRunning.name(),
       T::kGauge,
       "1 while a collective started on this node runs (its data moves), else 0.",
       {}},
      // The scheduled collective probe (daemon/agent/collective_schedule), on agents with
      // --collective-probe-interval-ms: one series each, busbw one per configured size (at most 8).
      {M::kCollectiveProbeRunsTotal.name(),
       T::kCounter,
       "Scheduled collective probe runs this agent coordinated, by result: ok; failed (the "
       "collective did not complete: a dead or unreachable peer, the deadline, wrong data); "
       "skipped_busy (a collective slot here or at a peer was taken: not a failure); "
       "skipped_no_peers (mesh:N peers and no reachable mesh peer yet).",
       {"result"}},
      {M::kCollectiveProbeSuccess.name(),
       T::kGauge,
       "1 when the latest scheduled collective probe run that was not skipped completed, 0 when "
       "it failed. Absent until a run ended.",
       {}},
      {M::kCollectiveProbeDurationSeconds.name(),
       T::kGauge,
       "Time the latest scheduled collective probe run that was not skipped took, joins and "
       "aborts included.",
       {}},
      {M::kCollectiveProbeConsecutiveFailures.name(),
       T::kGauge,
       "Scheduled collective probe runs that failed since the latest one that completed "
       "(skipped runs leave it as it is).",
       {}},
      {M::kCollectiveProbeLastSuccessTimestampSeconds.name(),
       T::kGauge,
       "Unix time at which the latest scheduled collective probe run that completed ended. "
       "Absent until one did.",
       {}},
      {M::kCollectiveProbeBusbwBytesPerSecond.name(),
       T::kGauge,
       "Bus bandwidth (nccl-tests' busbw, in bytes a second) of the latest scheduled collective "
       "probe run that completed, per configured message size in bytes "
       "(--collective-probe-sizes).",
       {"size"}},
      {M::kRpcWatchStreams.name(),
       T::kGauge,
       "WatchFindings streams open (at most --max-watch-streams).",
       {}},
      {M::kRpcRefusedTotal.name(),
       T::kCounter,
       "Calls refused with RESOURCE_EXHAUSTED because a limit was reached. limit: watch_streams "
       "(--max-watch-streams), memory (--memory-budget).",
       {"limit"}},
      // Fabric responder and probes (probes/fabric). Per-peer series are bounded by the fabric
      // service's peer table (64 peers, least recently probed dropped with its series).
      {M::kFabricProviderInfo.name(),
       T::kGauge,
       "Always 1; the libfabric provider, fabric and domain the fabric responder opened.",
       {"provider", "fabric", "domain"}},
      {M::kFabricResponderMessagesTotal.name(),
       T::kCounter,
       "Messages the fabric responder received, by kind (ping, bandwidth, garbage, error; "
       "dropped unanswered: unverified = sender not yet known, spoofed = the claimed sender is "
       "not the real one).",
       {"kind"}},
      {M::kFabricPingRttSeconds.name(),
       T::kGauge,
       "Round-trip time of the latest ping probe to the peer (quantile: 0 = min, 0.5, 0.9, 0.99, "
       "1 = max).",
       {"peer", "quantile"}},
      {M::kFabricPingLossRatio.name(),
       T::kGauge,
       "Share of the latest ping probe's messages lost or failed (0..1).",
       {"peer"}},
      {M::kFabricBandwidthBytesPerSecond.name(),
       T::kGauge,
       "Throughput of the latest bandwidth probe to the peer, per message size and direction.",
       {"peer", "size", "direction"}},
      {M::kFabricProbeLastRunTimestampSeconds.name(),
       T::kGauge,
       "Unix time of the latest fabric probe to the peer.",
       {"peer"}},
      {M::kFabricProbeFailuresTotal.name(),
       T::kCounter,
       "Fabric probes to the peer that did not complete (timeout, dead peer, cancel).",
       {"peer"}},
      // RDMA and EFA devices (daemon/efa). Known hw counters are added below from the EFA
      // driver's counter list.
      {M::kEfaDevices.name(),
       T::kGauge,
       "EFA devices found under the configured sysfs root's class/infiniband.",
       {}},
      {M::kEfaDevicesExpected.name(),
       T::kGauge,
       "EFA devices this node's instance type should have (only when the type is known).",
       {}},
      {M::kRdmaDevices.name(),
       T::kGauge,
       "RDMA devices of any kind found under the configured sysfs root's class/infiniband.",
       {}},
      {M::kRdmaDeviceInfo.name(),
       T::kGauge,
       "Always 1; labels describe the RDMA device (EFA or not), its PCI address, NUMA node, local "
       "CPUs, uverbs device and GPUDirect peer-to-peer provider.",
       {"device", "driver", "efa", "pci_address", "numa_node", "local_cpus", "uverbs", "p2p"}},
      {M::kRdmaHwStat.name(),
       T::kGauge,
       "A hw_counters value whose name efawatch does not know (port 0: device scope).",
       {"device", "port", "counter"}},
      {M::kRdmaHwReadErrors.name(),
       T::kGauge,
       "hw_counters files of the device that failed to read at this scrape (values unknown, not "
       "exported).",
       {"device"}},
      {M::kRdmaPortState.name(),
       T::kGauge,
       "Port state id (4 = ACTIVE; EFA always reports 4).",
       {"device", "port"}},
      {M::kRdmaPortPhysicalState.name(),
       T::kGauge,
       "Port physical state id (5 = LinkUp; EFA always reports 5).",
       {"device", "port"}},
      {M::kRdmaPortRateBytesPerSecond.name(),
       T::kGauge,
       "Port rate as the driver reports it (a capability, not a measurement).",
       {"device", "port"}},
      {M::kRdmaDeviceReadsTotal.name(),
       T::kCounter,
       "Reads of a device's sysfs counters (cached: at most one per device per second).",
       {}},
      {M::kRdmaHwResetsTotal.name(),
       T::kCounter,
       "hw counters seen going backwards (driver reload or device reset).",
       {}},
      {M::kNetReceiveBytesTotal.name(),
       T::kCounter,
       "Bytes received by the host's ethernet interface (from net/dev).",
       {"interface"}},
      {M::kNetTransmitBytesTotal.name(),
       T::kCounter,
       "Bytes transmitted by the host's ethernet interface (from net/dev).",
       {"interface"}},
      // Pod logs and their NCCL verdicts (daemon/logs). Per-container series are removed a
      // grace period after the container's logs disappear.
      {M::kNcclTcpFallback.name(),
       T::kGauge,
       "1 when the container's NCCL inter-node traffic runs over TCP (Socket transport, or OFI "
       "on a tcp/sockets provider) instead of EFA or InfiniBand RDMA.",
       {"namespace", "pod", "container"}},
      {M::kNcclTcpDeliberate.name(),
       T::kGauge,
       "1 when the container's TCP net was chosen by configuration (NCCL_IB_DISABLE=1 or "
       "NCCL_NET=Socket in its log or launcher environment): a deliberate choice, not a fallback "
       "to page on.",
       {"namespace", "pod", "container"}},
      {M::kNcclLoopbackMisuse.name(),
       T::kGauge,
       "1 when NCCL bootstraps or sends over the loopback interface in a job that needs more, or "
       "NCCL_SOCKET_IFNAME selects lo.",
       {"namespace", "pod", "container"}},
      {M::kNcclNetPluginMissing.name(),
       T::kGauge,
       "1 when the NCCL net plugin (e.g. aws-ofi-nccl) was not found or failed to initialize.",
       {"namespace", "pod", "container"}},
      {M::kNcclGdrDisabled.name(),
       T::kGauge,
       "1 when NET transport runs with GPUDirect RDMA off where it could be on.",
       {"namespace", "pod", "container"}},
      {M::kNcclInfo.name(),
       T::kGauge,
       "Always 1; labels name the network, inter-node transport, OFI provider and NCCL version "
       "the container's NCCL uses, and what its log proves about the job's node count (nodes: "
       "proven_single, proven_multi or unknown; a TCP net is certain only with proven_multi).",
       {"namespace", "pod", "container", "network", "transport", "ofi_provider", "nccl_version",
        "nodes"}},
      {M::kNcclStackInfo.name(),
       T::kGauge,
       "Always 1; labels name the stack the container's NCCL log shows, which every pod of a job "
       "should share: NCCL version, net plugin (aws-ofi-nccl) and its version, OFI provider, "
       "GPUDirect RDMA (on, off, partial, unknown), the NCCL_ALGO, NCCL_PROTO and "
       "FI_EFA_USE_DEVICE_RDMA settings, and settings_fingerprint: 8 hex digits of the other "
       "NCCL_*/FI_* settings the log echoes (\"\" when none). Empty: not shown. Only once the "
       "container's current run showed some of it (the checkpoint keeps it across agent "
       "restarts).",
       {"namespace", "pod", "container", "nccl_version", "net_plugin", "net_plugin_version",
        "ofi_provider", "gdr", "nccl_algo", "nccl_proto", "fi_efa_use_device_rdma",
        "settings_fingerprint"}},
      {M::kNcclProcesses.name(),
       T::kGauge,
       "NCCL processes seen in the container's current run.",
       {"namespace", "pod", "container"}},
      {M::kNcclCommunicators.name(),
       T::kGauge,
       "NCCL communicators seen in the container's current run.",
       {"namespace", "pod", "container"}},
      {M::kNcclCommunicatorInfo.name(),
       T::kGauge,
       "Always 1; one series per live NCCL communicator of the container that printed a commId "
       "(NCCL >= 2.16), which is the same on every rank on every node: the rules join these "
       "series across nodes. nranks and nnodes as NCCL printed them (nnodes: or as the log "
       "proves; else unknown); transport: the net between nodes (NET/Socket, NET/IB, NET/OFI); "
       "provider: the OFI provider, none or unknown. At most --max-communicators-per-pod per pod.",
       {"namespace", "pod", "container", "comm_id", "nranks", "nnodes", "transport", "provider"}},
      // NCCL Inspector (daemon/inspector): the job's own collectives. Bounded: per pod at most
      // --max-communicators-per-pod communicators, 32 (collective, size_bucket) pairs each; a
      // communicator silent for 15 minutes, or whose pod is gone, loses its series.
      {M::kNcclBusbwBytesPerSecond.name(),
       T::kHistogram,
       "Bus bandwidth of the NCCL operations the NCCL Inspector recorded for the pod (nccl-tests' "
       "busbw, in bytes a second), per communicator (comm_id: the Inspector's id, the same "
       "0x-hex form as efawatch_nccl_communicator_info's), collective (AllReduce, ..., Send, "
       "Recv) and message size bucket (<64KiB, then powers of 4 from 64KiB to 1GiB and more: "
       "the lower bound). comm_name: what the job named the communicator (\"unknown\" when "
       "unnamed, \"\" when the record does not say). _count: operations from JSON Lines files; "
       "from Prometheus-mode files of NCCL >= 2.30 (no comm_id: \"\"), dump intervals, each "
       "one observation of the interval's geometric-mean busbw (the plugin writes no op count).",
       {"namespace", "pod", "comm_id", "comm_name", "collective", "size_bucket"}},
      {M::kNcclExecSecondsTotal.name(),
       T::kCounter,
       "Time the NCCL operations of efawatch_nccl_busbw_bytes_per_second took, as the Inspector "
       "timed them (Prometheus mode >= 2.30: the interval's mean time, once per interval).",
       {"namespace", "pod", "comm_id", "comm_name", "collective", "size_bucket"}},
      {M::kNcclInspectorProgressTimestampSeconds.name(),
       T::kGauge,
       "When the pod's communicator last showed progress in its NCCL Inspector output (Unix "
       "time): JSON Lines, the newest record's dump_timestamp_us; Prometheus mode, when the file "
       "was last rewritten (the plugin rewrites it only after ops completed). Shown from the "
       "first read, so an agent started after a job hung sees how old it is.",
       {"namespace", "pod", "comm_id", "comm_name"}},
      {M::kNcclInspectorStale.name(),
       T::kGauge,
       "1 while the communicator's newest Inspector progress is older than "
       "--inspector-stale-after-seconds and its file is still there (its pod runs): its "
       "collectives stopped, or the plugin stopped writing; 0 otherwise. A stale Prometheus-mode "
       "file's values are not counted as current bandwidth.",
       {"namespace", "pod", "comm_id", "comm_name"}},
      {M::kNcclInspectorRecordsTotal.name(),
       T::kCounter,
       "NCCL Inspector records read, by result: op (counted), other_version (a format other "
       "than v4.0: the known fields counted), malformed (skipped), dropped (over a cap: "
       "--max-communicators-per-pod communicators per pod, 32 (collective, size bucket) pairs "
       "per communicator), "
       "prom_op (from a Prometheus-mode file), prom_malformed, prom_empty (an interval without "
       "a timed op: bandwidth 0), prom_torn (a file caught mid-rewrite on every try of a pass: "
       "read again on the next, never counted malformed), prom_stale (samples of a file already "
       "stale when first seen: not counted as bandwidth).",
       {"result"}},
      {M::kNcclInspectorFiles.name(),
       T::kGauge,
       "NCCL Inspector files followed: JSON Lines (jsonl) and Prometheus-mode (prom) files.",
       {"format"}},
      {M::kFabricExpectedBandwidthBytesPerSecond.name(),
       T::kGauge,
       "The network bandwidth this node's instance type should give (its EFA devices times each "
       "one's rate, from EC2's instance type specifications), in bytes a second: what a healthy "
       "cross-node collective's busbw approaches. Only for known instance types.",
       {"instance_type"}},
      {M::kNcclCommunicatorsDroppedTotal.name(),
       T::kCounter,
       "NCCL communicators seen in pods' logs but not exported as efawatch_nccl_communicator_info "
       "because their pod already had --max-communicators-per-pod series.",
       {}},
      {M::kNcclWarningsTotal.name(),
       T::kCounter,
       "NCCL WARN records in the container's logs.",
       {"namespace", "pod", "container"}},
      {M::kNcclErrorsTotal.name(),
       T::kCounter,
       "NCCL errors (failed calls, aborts, completion errors) in the container's logs.",
       {"namespace", "pod", "container"}},
      {M::kPodWorkloadInfo.name(),
       T::kGauge,
       "Always 1; the workload a pod on this node belongs to, from the Kubernetes API "
       "(--workload-identity): workload_kind RayCluster, RayJob, PyTorchJob, MPIJob, TrainJob, "
       "JobSet, LeaderWorkerSet, Job, or the kind of the pod's top owner; for joins with the "
       "per-pod series. Removed with the pod.",
       {"namespace", "pod", "workload_kind", "workload"}},
      {M::kKubeSignals.name(),
       T::kCounter,
       "Kubernetes Events (signal event) and NodeCondition patches (signal node_condition) by "
       "result: sent; exists (an Event this pod already has, e.g. after an agent restart); "
       "refused (403/404: no RBAC, retried after a backoff); failed (retried next round); "
       "deferred (an Event held back by the rate limit).",
       {"signal", "result"}},
      {M::kDoctorChecks.name(),
       T::kGauge,
       "Always 1; the status (PASS, WARN, FAIL, SKIP) of each of the node's `efawatch doctor` "
       "checks at the agent's last run (--doctor-interval-ms); docs/doctor.md lists the checks.",
       {"check", "status"}},
      {M::kDoctorPodFailures.name(),
       T::kGauge,
       "FAIL checks of `efawatch doctor` over the NCCL processes of a pod on this node (seen "
       "with hostPID), at the agent's last run. Removed with the pod's processes.",
       {"namespace", "pod"}},
      {M::kLogsLinesTotal.name(),
       T::kCounter,
       "Log lines read from the container.",
       {"namespace", "pod", "container"}},
      {M::kLogsNcclLinesTotal.name(),
       T::kCounter,
       "Log lines of the container that hold NCCL records.",
       {"namespace", "pod", "container"}},
      {M::kLogsFilesWatched.name(), T::kGauge, "Container log files being followed.", {}},
      {M::kLogsReadBytesTotal.name(), T::kCounter, "Bytes read from container logs.", {}},
      {M::kLogsReadLinesTotal.name(), T::kCounter, "Lines read from container logs.", {}},
      {M::kLogsMalformedLinesTotal.name(),
       T::kCounter,
       "Candidate NCCL lines that could not be parsed (skipped).",
       {}},
      {M::kLogsRotationsTotal.name(), T::kCounter, "Log rotations followed.", {}},
      {M::kLogsTruncationsTotal.name(),
       T::kCounter,
       "Log files found truncated under the reader (copytruncate).",
       {}},
      {M::kLogsTruncatedLinesTotal.name(),
       T::kCounter,
       "Lines longer than the line limit, cut.",
       {}},
      {M::kLogsCheckpointWritesTotal.name(), T::kCounter, "Checkpoint files written.", {}},
      {M::kLogsCheckpointsUnchangedTotal.name(),
       T::kCounter,
       "Checkpoints due but not written again: nothing changed since the last one written.",
       {}},
      {M::kLogsCheckpointWriteFailuresTotal.name(),
       T::kCounter,
       "Checkpoints that could not be written or renamed into place (--state-dir full, "
       "read-only or gone): a restart would read the logs again from the last written one.",
       {}},
      {M::kLogsFilesRefusedTotal.name(),
       T::kCounter,
       "Log files not read: symlinks out of the pod log root, or unreadable.",
       {}},
      {M::kLogsFilesOverCapTotal.name(),
       T::kCounter,
       "Log files not followed because the file cap was reached (a pod volume directory with "
       "more entries than the walk reads counts once).",
       {}},
      {M::kLogsScansTotal.name(),
       T::kCounter,
       "Walks of the pod log root, globs and pod volumes (on inotify events, every 10 s as a "
       "fallback or every second without inotify, no more often than 1/50 of a core allows).",
       {}},
      {M::kLogsScanSecondsTotal.name(), T::kCounter, "CPU time those walks took, in seconds.", {}},
      {M::kLogsCheckpointsSetAsideTotal.name(),
       T::kCounter,
       "Checkpoints that were not JSON or of the wrong shape, renamed to <state>.bad at start "
       "(the agent started from the beginning of every log).",
       {}},
      {M::kLogsSkippedBytesTotal.name(),
       T::kCounter,
       "Log bytes not read, by reason: budget (a file written faster than --log-read-budget "
       "reads it skipped forward to its tail), hole (a sparse file's hole), oversized (the middle "
       "of a file first seen over --log-first-read-max-bytes: head and tail are read), binary "
       "(a file named like a log that is not text, left).",
       {"reason"}},
      {M::kLogsDeletedFilesClosedTotal.name(),
       T::kCounter,
       "Deleted log files closed once read to their end (e.g. an older restart's log).",
       {}},
      {M::kLogsStateEvictedTotal.name(),
       T::kCounter,
       "Containers whose analysis state was evicted to stay within bounds.",
       {}},
      // Fleet ping mesh (probes/mesh). peer_node is bounded by the fan-out plus the topology
      // group cap: an agent pings at most that many peers, and drops a peer's series when it
      // stops pinging it.
      {M::kMeshPeerRttSeconds.name(),
       T::kHistogram,
       "Round-trip times of mesh pings to the peer node (received messages only).",
       {"peer_node"}},
      {M::kMeshPeerSentTotal.name(),
       T::kCounter,
       "Mesh ping messages sent to the peer node (a round whose lookup failed counts all its "
       "messages as sent and lost).",
       {"peer_node"}},
      {M::kMeshPeerLostTotal.name(),
       T::kCounter,
       "Mesh ping messages to the peer node that got no answer in time.",
       {"peer_node"}},
      {M::kMeshPeerUp.name(),
       T::kGauge,
       "1 when the latest mesh round to the peer node got at least one answer.",
       {"peer_node"}},
      {M::kMeshPeersExpected.name(),
       T::kGauge,
       "Peers this agent is assigned to ping (fan-out plus topology group).",
       {}},
      {M::kMeshPeersReachable.name(),
       T::kGauge,
       "Assigned peers that answered in the latest round.",
       {}},
      {M::kMeshPeersDiscovered.name(),
       T::kGauge,
       "Agents the latest successful discovery listed, this one included when listed.",
       {"source"}},
      {M::kMeshDiscoveryErrorsTotal.name(),
       T::kCounter,
       "Peer discoveries that failed (the previous peer list is kept).",
       {"source"}},
      {M::kMeshRoundsTotal.name(), T::kCounter, "Mesh ping rounds completed.", {}},
      {M::kMeshSelfSuspect.name(),
       T::kGauge,
       "1 when most of this agent's own peers failed in the latest round: this node's link, not "
       "its peers, is the likely fault.",
       {}},
      // Fabric responder.
      {M::kFabricResponderUp.name(),
       T::kGauge,
       "1 when the fabric responder runs; labels name the libfabric provider and fabric in use.",
       {"provider", "fabric"}},
      // The gRPC edge (daemon/rpc).
      {M::kGrpcDeniedTotal.name(),
       T::kCounter,
       "gRPC calls refused with PERMISSION_DENIED because the caller's certificate identity holds "
       "no role the method allows (docs/security.md), per method.",
       {"method"}},
      {M::kMetricsConnectionsTotal.name(),
       T::kCounter,
       "Connections to the metrics port (/metrics, /healthz, /readyz), by outcome: accepted; "
       "refused (at a bound with every connection serving a request); evicted (cut, having "
       "waited longest without a request, to admit a newcomer); timed_out (no complete request "
       "within the request deadline). See docs/security.md, Listeners.",
       {"outcome"}},
      {M::kRpcConnectionsTotal.name(),
       T::kCounter,
       "Connections to the gRPC port, by outcome: accepted; refused (the gRPC server behind the "
       "connection gate could not be reached); evicted (cut, having been idle longest, to admit "
       "a newcomer at a bound). See docs/security.md, Listeners.",
       {"outcome"}},
      {M::kTlsCertificateExpiryTimestampSeconds.name(),
       T::kGauge,
       "End of validity (Unix time) of the earliest certificate in each set of TLS files the "
       "agent uses: use server (gRPC), client (to peers), ca (the client CA bundle), metrics. "
       "Read again whenever the files change.",
       {"use"}},
      {M::kTlsReloadFailuresTotal.name(),
       T::kCounter,
       "Times a set of TLS files changed but could not be used (no PEM certificate, or a key "
       "that does not match): the previous files stay in use.",
       {"use"}},
      {M::kTlsReloadFailing.name(),
       T::kGauge,
       "1 while the latest change of a set of TLS files could not be used (the agent runs on the "
       "previous files; a renewal has not taken effect); 0 otherwise.",
       {"use"}},
      {M::kMetricsScrapesRefusedTotal.name(),
       T::kCounter,
       "Requests for /metrics over HTTPS refused: reason client_certificate (none, or not of the "
       "metrics client CA: 403) or bearer_token (missing or wrong: 401). Only with "
       "--metrics-tls-client-ca or --metrics-bearer-token-file.",
       {"reason"}},
      {M::kAdmissionReviewsTotal.name(),
       T::kCounter,
       "AdmissionReviews the webhook (`efawatch admission`) answered, by result: allowed (judged, "
       "nothing found), warned, denied (--enforce or the namespace label efawatch.io/enforce), "
       "skipped (not a pod that touches the fabric), exempt (an exempt namespace), opted_out "
       "(the pod's efawatch.io/admission-opt-out annotation). docs/admission.md.",
       {"result"}},
      {M::kAdmissionFindingsTotal.name(),
       T::kCounter,
       "Rules the webhook found broken, by rule (settings.* as `efawatch doctor` names them, "
       "pod.*) and by the review's result (warned, denied, opted_out).",
       {"rule", "result"}},
      {M::kAdmissionBadRequestsTotal.name(),
       T::kCounter,
       "Requests to the webhook refused before a review: malformed (not an AdmissionReview: "
       "400) or too_large (a body over --max-body-bytes: 413).",
       {"reason"}},
  };
  for (size_t i = 0; i < efa::KnownCounters().size(); ++i) {
    const auto& c = efa::KnownCounters()[i];
    t.push_back({EfaCounterNames()[i], T::kCounter, c.help,
                 c.scope == efa::Scope::kPort ? std::vector<std::string_view>{"device", "port"}
                                              : std::vector<std::string_view>{"device"}});
  }
  std::sort(t.begin(), t.end(),
            [](const MetricDef& a, const MetricDef& b) { return a.name < b.name; });
  return t;
}

std::string_view TypeName(MetricType t) {
  switch (t) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::optional<Metric> M::EfaCounter(std::string_view counter) {
  const auto& known = efa::KnownCounters();
  for (size_t i = 0; i < known.size(); ++i) {
    if (known[i].name == counter) return Metric(EfaCounterNames()[i]);
  }
  return std::nullopt;
}

const std::vector<MetricDef>& MetricTable() {
  static const std::vector<MetricDef> table = BuildTable();
  return table;
}

const MetricDef* FindMetric(std::string_view name) {
  const auto& t = MetricTable();
  auto it = std::lower_bound(t.begin(), t.end(), name,
                             [](const MetricDef& d, std::string_view n) { return d.name < n; });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

// Kept apart from the table (which says what a metric is) because it says who reads it, and
// changes when a rule or a panel does.
const std::vector<DebugOnlyGroup>& DebugOnlyMetrics() {
  static const std::vector<DebugOnlyGroup> groups = {
      {"The agent's own bookkeeping: its process, limits, connections and gRPC; alerts cover "
       "what breaks (EfawatchAgentDown, EfawatchScrapeFailing, EfawatchAgentDegraded, the TLS "
       "alerts).",
       {"efawatch_start_time_seconds", "efawatch_process_open_fds", "efawatch_memory_budget_bytes",
        "efawatch_memory_budget_in_use_bytes", "efawatch_rpc_connections_total",
        "efawatch_rpc_refused_total", "efawatch_rpc_watch_streams",
        "efawatch_metrics_connections_total", "efawatch_metrics_scrapes_refused_total",
        "efawatch_grpc_denied_total", "efawatch_internal_errors_total",
        "efawatch_tls_reload_failures_total", "efawatch_collective_in_progress",
        "efawatch_collective_running", "efawatch_fabric_responder_messages_total",
        "efawatch_fabric_responder_up"}},
      {"Log reading throughput and bookkeeping: how much the tailer reads and keeps; what it "
       "drops or cannot save is alerted (EfawatchAgentDegraded, "
       "EfawatchCheckpointWritesFailing).",
       {"efawatch_logs_files_watched", "efawatch_logs_read_bytes_total",
        "efawatch_logs_read_lines_total", "efawatch_logs_rotations_total",
        "efawatch_logs_truncations_total", "efawatch_logs_malformed_lines_total",
        "efawatch_logs_checkpoint_writes_total", "efawatch_logs_checkpoints_unchanged_total",
        "efawatch_logs_checkpoints_set_aside_total", "efawatch_logs_deleted_files_closed_total",
        "efawatch_logs_files_refused_total", "efawatch_logs_scans_total",
        "efawatch_logs_scan_seconds_total", "efawatch_logs_skipped_bytes_total",
        "efawatch_nccl_communicators_dropped_total", "efawatch_nccl_processes"}},
      {"NCCL Inspector reading: the Inspector's records and files say whether a job's dump is "
       "being read (docs/inspector.md); the bandwidth and time per operation themselves are "
       "alerted (EfawatchNcclSlowCollectives, EfawatchNcclStraggler) and on the job dashboard.",
       {"efawatch_nccl_inspector_files", "efawatch_nccl_inspector_records_total"}},
      {"EFA and RDMA device counters beyond the errors (alerted) and the throughput and "
       "retransmits (node dashboard): work requests, packets and commands per device, port "
       "state and the generic RDMA view, for a device under investigation.",
       {"efawatch_efa_completed_cmds_total",
        "efawatch_efa_keep_alive_rcvd_total",
        "efawatch_efa_rdma_read_resp_bytes_total",
        "efawatch_efa_rdma_read_wrs_total",
        "efawatch_efa_rdma_write_recv_bytes_total",
        "efawatch_efa_rdma_write_wrs_total",
        "efawatch_efa_recv_bytes_total",
        "efawatch_efa_recv_wrs_total",
        "efawatch_efa_retrans_bytes_total",
        "efawatch_efa_rx_pkts_total",
        "efawatch_efa_send_bytes_total",
        "efawatch_efa_send_wrs_total",
        "efawatch_efa_submitted_cmds_total",
        "efawatch_efa_tx_pkts_total",
        "efawatch_rdma_devices",
        "efawatch_rdma_device_reads_total",
        "efawatch_rdma_hw_read_errors",
        "efawatch_rdma_hw_resets_total",
        "efawatch_rdma_hw_stat",
        "efawatch_rdma_port_state",
        "efawatch_rdma_port_physical_state",
        "efawatch_rdma_port_rate_bytes_per_second"}},
      {"Probe and mesh bookkeeping: when on-demand probes ran and failed, how many peers the "
       "mesh discovered; their results are on the dashboards.",
       {"efawatch_fabric_probe_failures_total", "efawatch_fabric_probe_last_run_timestamp_seconds",
        "efawatch_mesh_peers_discovered"}},
      {"Doctor FAILs over a pod's NCCL processes (hostPID only): `efawatch doctor --agent` shows "
       "them; the node's own FAILs are alerted (EfawatchDoctorFailing).",
       {"efawatch_doctor_pod_failures"}},
      {"The admission webhook's counts (`efawatch admission`, on its own /metrics, not the "
       "agent's): what it warned about, denied and refused; docs/admission.md.",
       {"efawatch_admission_bad_requests_total", "efawatch_admission_findings_total",
        "efawatch_admission_reviews_total"}},
  };
  return groups;
}

std::string RenderMetricsDoc() {
  std::string out =
      "# Metrics\n\n"
      "Generated from `lib/common/metric_table.cc` (a unit test keeps this file in step).\n"
      "All metrics are served on `/metrics` of the agent's `--metrics-listen` address.\n\n"
      "| name | type | labels | help |\n|---|---|---|---|\n";
  for (const auto& d : MetricTable()) {
    std::string labels;
    for (auto l : d.labels) (labels += labels.empty() ? "" : ", ") += l;
    ((((out += "| `") += d.name) += "` | ") += TypeName(d.type)) += " | ";
    (((out += labels) += " | ") += d.help) += " |\n";
  }
  out +=
      "\n## Debug only\n\n"
      "Read by no rule and no dashboard panel, on purpose: for `curl /metrics` and ad-hoc "
      "queries.\nEvery other metric above is read by a rule of "
      "`deploy/prometheus/efawatch-rules.yml` or a panel of `dashboards/`\n"
      "(`tests/deploy/checks/check_metric_use.py`).\n";
  for (const auto& g : DebugOnlyMetrics()) {
    ((out += "\n") += g.why) += "\n\n";
    for (auto n : g.names) ((out += "- `") += n) += "`\n";
  }
  return out;
}

}  // namespace efawatch::metrics
