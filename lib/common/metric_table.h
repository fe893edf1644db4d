// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace efawatch::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

/// A handle on one metric of the table below: the only way to name a metric to a MetricSink.
/// Handles exist only as the constants of `M` (the constructor is private), so a collector cannot
/// write a sample of a metric the table does not declare: that is a compile error, not a
/// scrape-time surprise. Cheap to copy; thread-safe.
class Metric {
 public:
  constexpr std::string_view name() const { return name_; }

 private:
  friend struct M;
  constexpr explicit Metric(std::string_view name) : name_(name) {}
  std::string_view name_;
};

/// Every metric the agent exports, by handle. MetricTable() gives each its type, help and labels.
struct M {
  static constexpr Metric kBuildInfo{"efawatch_build_info"};
  static constexpr Metric kStartTimeSeconds{"efawatch_start_time_seconds"};
  static constexpr Metric kCollectorSuccess{"efawatch_collector_success"};
  static constexpr Metric kCollectorDurationSeconds{"efawatch_collector_duration_seconds"};
  static constexpr Metric kFindings{"efawatch_findings"};
  static constexpr Metric kProcessResidentMemoryBytes{"efawatch_process_resident_memory_bytes"};
  static constexpr Metric kProcessCpuSecondsTotal{"efawatch_process_cpu_seconds_total"};
  static constexpr Metric kProcessOpenFds{"efawatch_process_open_fds"};
  static constexpr Metric kFabricProviderInfo{"efawatch_fabric_provider_info"};
  static constexpr Metric kFabricResponderMessagesTotal{"efawatch_fabric_responder_messages_total"};
  static constexpr Metric kFabricPingRttSeconds{"efawatch_fabric_ping_rtt_seconds"};
  static constexpr Metric kFabricPingLossRatio{"efawatch_fabric_ping_loss_ratio"};
  static constexpr Metric kFabricBandwidthBytesPerSecond{
      "efawatch_fabric_bandwidth_bytes_per_second"};
  static constexpr Metric kFabricProbeLastRunTimestampSeconds{
      "efawatch_fabric_probe_last_run_timestamp_seconds"};
  static constexpr Metric kFabricProbeFailuresTotal{"efawatch_fabric_probe_failures_total"};
  static constexpr Metric kEfaDevices{"efawatch_efa_devices"};
  static constexpr Metric kEfaDevicesExpected{"efawatch_efa_devices_expected"};
  static constexpr Metric kRdmaDevices{"efawatch_rdma_devices"};
  static constexpr Metric kRdmaDeviceInfo{"efawatch_rdma_device_info"};
  static constexpr Metric kRdmaHwStat{"efawatch_rdma_hw_stat"};
  static constexpr Metric kRdmaHwReadErrors{"efawatch_rdma_hw_read_errors"};
  static constexpr Metric kRdmaPortState{"efawatch_rdma_port_state"};
  static constexpr Metric kRdmaPortPhysicalState{"efawatch_rdma_port_physical_state"};
  static constexpr Metric kRdmaPortRateBytesPerSecond{"efawatch_rdma_port_rate_bytes_per_second"};
  static constexpr Metric kRdmaDeviceReadsTotal{"efawatch_rdma_device_reads_total"};
  static constexpr Metric kRdmaHwResetsTotal{"efawatch_rdma_hw_resets_total"};
  static constexpr Metric kNetReceiveBytesTotal{"efawatch_net_receive_bytes_total"};
  static constexpr Metric kNetTransmitBytesTotal{"efawatch_net_transmit_bytes_total"};
  static constexpr Metric kNcclTcpFallback{"efawatch_nccl_tcp_fallback"};
  static constexpr Metric kNcclTcpDeliberate{"efawatch_nccl_tcp_deliberate"};
  static constexpr Metric kNcclLoopbackMisuse{"efawatch_nccl_loopback_misuse"};
  static constexpr Metric kNcclNetPluginMissing{"efawatch_nccl_net_plugin_missing"};
  static constexpr Metric kNcclGdrDisabled{"efawatch_nccl_gdr_disabled"};
  static constexpr Metric kNcclInfo{"efawatch_nccl_info"};
  static constexpr Metric kNcclStackInfo{"efawatch_nccl_stack_info"};
  static constexpr Metric kNcclProcesses{"efawatch_nccl_processes"};
  static constexpr Metric kNcclCommunicators{"efawatch_nccl_communicators"};
  static constexpr Metric kNcclCommunicatorInfo{"efawatch_nccl_communicator_info"};
  static constexpr Metric kNcclCommunicatorsDroppedTotal{
      "efawatch_nccl_communicators_dropped_total"};
  static constexpr Metric kNcclWarningsTotal{"efawatch_nccl_warnings_total"};
  static constexpr Metric kNcclErrorsTotal{"efawatch_nccl_errors_total"};
  static constexpr Metric kPodWorkloadInfo{"efawatch_pod_workload_info"};
  static constexpr Metric kKubeSignals{"efawatch_kube_signals_total"};
  static constexpr Metric kDoctorChecks{"efawatch_doctor_checks"};
  static constexpr Metric kDoctorPodFailures{"efawatch_doctor_pod_failures"};
  static constexpr Metric kLogsLinesTotal{"efawatch_logs_lines_total"};
  static constexpr Metric kLogsNcclLinesTotal{"efawatch_logs_nccl_lines_total"};
  static constexpr Metric kLogsFilesWatched{"efawatch_logs_files_watched"};
  static constexpr Metric kLogsReadBytesTotal{"efawatch_logs_read_bytes_total"};
  static constexpr Metric kLogsReadLinesTotal{"efawatch_logs_read_lines_total"};
  static constexpr Metric kLogsMalformedLinesTotal{"efawatch_logs_malformed_lines_total"};
  static constexpr Metric kLogsRotationsTotal{"efawatch_logs_rotations_total"};
  static constexpr Metric kLogsTruncationsTotal{"efawatch_logs_truncations_total"};
  static constexpr Metric kLogsTruncatedLinesTotal{"efawatch_logs_truncated_lines_total"};
  static constexpr Metric kLogsCheckpointWritesTotal{"efawatch_logs_checkpoint_writes_total"};
  static constexpr Metric kLogsCheckpointsUnchangedTotal{
      "efawatch_logs_checkpoints_unchanged_total"};
  static constexpr Metric kLogsCheckpointWriteFailuresTotal{
      "efawatch_logs_checkpoint_write_failures_total"};
  static constexpr Metric kLogsFilesRefusedTotal{"efawatch_logs_files_refused_total"};
  static constexpr Metric kLogsFilesOverCapTotal{"efawatch_logs_files_over_cap_total"};
  static constexpr Metric kLogsScansTotal{"efawatch_logs_scans_total"};
  static constexpr Metric kLogsScanSecondsTotal{"efawatch_logs_scan_seconds_total"};
  static constexpr Metric kLogsStateEvictedTotal{"efawatch_logs_state_evicted_total"};
  static constexpr Metric kMeshPeerRttSeconds{"efawatch_mesh_peer_rtt_seconds"};
  static constexpr Metric kMeshPeerSentTotal{"efawatch_mesh_peer_sent_total"};
  static constexpr Metric kMeshPeerLostTotal{"efawatch_mesh_peer_lost_total"};
  static constexpr Metric kMeshPeerUp{"efawatch_mesh_peer_up"};
  static constexpr Metric kMeshPeersExpected{"efawatch_mesh_peers_expected"};
  static constexpr Metric kMeshPeersReachable{"efawatch_mesh_peers_reachable"};
  static constexpr Metric kMeshPeersDiscovered{"efawatch_mesh_peers_discovered"};
  static constexpr Metric kMeshDiscoveryErrorsTotal{"efawatch_mesh_discovery_errors_total"};
  static constexpr Metric kMeshRoundsTotal{"efawatch_mesh_rounds_total"};
  static constexpr Metric kMeshSelfSuspect{"efawatch_mesh_self_suspect"};
  static constexpr Metric kFabricResponderUp{"efawatch_fabric_responder_up"};
  static constexpr Metric kGrpcDeniedTotal{"efawatch_grpc_denied_total"};
  static constexpr Metric kMetricsScrapesRefusedTotal{"efawatch_metrics_scrapes_refused_total"};
  static constexpr Metric kMetricsConnectionsTotal{"efawatch_metrics_connections_total"};
  static constexpr Metric kRpcConnectionsTotal{"efawatch_rpc_connections_total"};
  static constexpr Metric kTlsCertificateExpiryTimestampSeconds{
      "efawatch_tls_certificate_expiry_timestamp_seconds"};
  static constexpr Metric kTlsReloadFailuresTotal{"efawatch_tls_reload_failures_total"};
  static constexpr Metric kTlsReloadFailing{"efawatch_tls_reload_failing"};
  static constexpr Metric kInternalErrorsTotal{"efawatch_internal_errors_total"};
  static constexpr Metric kLogsCheckpointsSetAsideTotal{
      "efawatch_logs_checkpoints_set_aside_total"};
  static constexpr Metric kLogsDeletedFilesClosedTotal{"efawatch_logs_deleted_files_closed_total"};
  static constexpr Metric kLogsSkippedBytesTotal{"efawatch_logs_skipped_bytes_total"};
  static constexpr Metric kRpcWatchStreams{"efawatch_rpc_watch_streams"};
  static constexpr Metric kMemoryBudgetBytes{"efawatch_memory_budget_bytes"};
  static constexpr Metric kMemoryBudgetInUseBytes{"efawatch_memory_budget_in_use_bytes"};
  static constexpr Metric kRpcRefusedTotal{"efawatch_rpc_refused_total"};
  static constexpr Metric kCollectiveInProgress{"efawatch_collective_in_progress"};
  static constexpr Metric kCollectiveRunning{"efawatch_collective_running"};
  static constexpr Metric kCollectiveProbeRunsTotal{"efawatch_collective_probe_runs_total"};
  static constexpr Metric kCollectiveProbeSuccess{"efawatch_collective_probe_success"};
  static constexpr Metric kCollectiveProbeDurationSeconds{
      "efawatch_collective_probe_duration_seconds"};
  static constexpr Metric kCollectiveProbeConsecutiveFailures{
      "efawatch_collective_probe_consecutive_failures"};
  static constexpr Metric kCollectiveProbeLastSuccessTimestampSeconds{
      "efawatch_collective_probe_last_success_timestamp_seconds"};
  static constexpr Metric kCollectiveProbeBusbwBytesPerSecond{
      "efawatch_collective_probe_busbw_bytes_per_second"};
  static constexpr Metric kNcclBusbwBytesPerSecond{"efawatch_nccl_busbw_bytes_per_second"};
  static constexpr Metric kNcclExecSecondsTotal{"efawatch_nccl_exec_seconds_total"};
  static constexpr Metric kNcclInspectorRecordsTotal{"efawatch_nccl_inspector_records_total"};
  static constexpr Metric kNcclInspectorFiles{"efawatch_nccl_inspector_files"};
  static constexpr Metric kNcclInspectorProgressTimestampSeconds{
      "efawatch_nccl_inspector_progress_timestamp_seconds"};
  static constexpr Metric kNcclInspectorStale{"efawatch_nccl_inspector_stale"};
  static constexpr Metric kFabricExpectedBandwidthBytesPerSecond{
      "efawatch_fabric_expected_bandwidth_bytes_per_second"};
  // The admission webhook (`efawatch admission`), served on its own /metrics.
  static constexpr Metric kAdmissionReviewsTotal{"efawatch_admission_reviews_total"};
  static constexpr Metric kAdmissionFindingsTotal{"efawatch_admission_findings_total"};
  static constexpr Metric kAdmissionBadRequestsTotal{"efawatch_admission_bad_requests_total"};

  /// efawatch_efa_<counter>_total for a hw_counters name the EFA counter table knows
  /// (efa_counters.h), nullopt for any other name (exported generically as efawatch_rdma_hw_stat).
  static std::optional<Metric> EfaCounter(std::string_view counter);
};

/// One metric the agent exports. Every metric is declared once, in metric_table.cc: the
/// Prometheus edge refuses samples of undeclared metrics, docs/metrics.md is generated from the
/// table, and a test keeps the two in step.
struct MetricDef {
  std::string_view name;
  MetricType type;
  std::string_view help;
  std::vector<std::string_view> labels;
};

/// The whole table, sorted by name.
const std::vector<MetricDef>& MetricTable();

/// The definition of `name`, or nullptr.
const MetricDef* FindMetric(std::string_view name);

/// Metrics that no rule of deploy/prometheus/efawatch-rules.yml and no dashboard panel reads, on
/// purpose, with why: for `curl /metrics` and ad-hoc queries when the agent itself, a device or
/// a probe is under investigation. docs/metrics.md lists them; tests/deploy/checks
/// (check_metric_use.py) fails on a metric that is neither read by a rule or panel nor here,
/// and on one here that a rule or panel reads.
struct DebugOnlyGroup {
  std::string_view why;
  std::vector<std::string_view> names;
};
const std::vector<DebugOnlyGroup>& DebugOnlyMetrics();

/// docs/metrics.md as generated from the table.
std::string RenderMetricsDoc();

}  // namespace efawatch::metrics
