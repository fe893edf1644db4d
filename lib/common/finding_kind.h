// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace efawatch::common {

/// Every fixed kind of Finding the agent and the CLI produce or read. Producers name a kind with
/// FindingKindName(); readers ask IsKind() (or Finding::Is); nobody outside lib/ spells a kind as
/// a string literal (tests/unit/common/finding_kind_test.cc checks the sources). The names are the
/// wire: the `kind` of metrics labels, gRPC findings, the checkpoint's JSON and alerts. They are
/// stable and documented in docs/findings.md and docs/nccl-findings.md; renaming one breaks
/// alerts and scripts.
///
/// One family is open: a rising EFA hardware counter is the finding `efa_<counter>` for whatever
/// counter the operator gives a threshold (`--efa-rise-thresholds`), built by EfaCounterRiseKind.
enum class FindingKind : uint8_t {
  // NCCL log findings (lib/nccl), docs/nccl-findings.md.
  kTcpFallback,
  kLoopbackMisuse,
  kNetPluginMissing,
  kGdrDisabled,
  kNcclWarning,
  kNcclError,
  kCollectiveTimeout,
  kCommAbort,
  kNetCompletionError,
  kConnectionFailure,
  // EFA device findings (daemon/efa), docs/findings.md.
  kEfaCounterUnreadable,
  kEfaAdminQueueStuck,
  kEfaDeviceGone,
  kEfaDevicesMissing,
  kEfaNotAttached,
  kEfaIdleTcpBusy,
  // Fleet ping mesh (probes/mesh), fabric responder (probes/fabric), TLS files, doctor.
  kMeshSelfSuspect,
  kFabricNotOnEfa,
  kFabricLoopbackAddress,
  kTlsCertificateExpired,
  kDoctorCheckFailed,
  kLast = kDoctorCheckFailed,
};

inline constexpr size_t kFindingKindCount = static_cast<size_t>(FindingKind::kLast) + 1;

/// The name table, in enum order. finding_kind_test checks that every kind has a name, that no
/// two share one, and that the table is in enum order; FindingKindName relies on the last.
inline constexpr std::array<std::pair<FindingKind, std::string_view>, kFindingKindCount>
    kFindingKindNames = {{
        {FindingKind::kTcpFallback, "tcp_fallback"},
        {FindingKind::kLoopbackMisuse, "loopback_misuse"},
        {FindingKind::kNetPluginMissing, "net_plugin_missing"},
        {FindingKind::kGdrDisabled, "gdr_disabled"},
        {FindingKind::kNcclWarning, "nccl_warning"},
        {FindingKind::kNcclError, "nccl_error"},
        {FindingKind::kCollectiveTimeout, "collective_timeout"},
        {FindingKind::kCommAbort, "comm_abort"},
        {FindingKind::kNetCompletionError, "net_completion_error"},
        {FindingKind::kConnectionFailure, "connection_failure"},
        {FindingKind::kEfaCounterUnreadable, "efa_counter_unreadable"},
        {FindingKind::kEfaAdminQueueStuck, "efa_admin_queue_stuck"},
        {FindingKind::kEfaDeviceGone, "efa_device_gone"},
        {FindingKind::kEfaDevicesMissing, "efa_devices_missing"},
        {FindingKind::kEfaNotAttached, "efa_not_attached"},
        {FindingKind::kEfaIdleTcpBusy, "efa_idle_tcp_busy"},
        {FindingKind::kMeshSelfSuspect, "mesh_self_suspect"},
        {FindingKind::kFabricNotOnEfa, "fabric_not_on_efa"},
        {FindingKind::kFabricLoopbackAddress, "fabric_loopback_address"},
        {FindingKind::kTlsCertificateExpired, "tls_certificate_expired"},
        {FindingKind::kDoctorCheckFailed, "doctor_check_failed"},
    }};

/// The wire name of `k` ("tcp_fallback"); empty for a value outside the enum.
constexpr std::string_view FindingKindName(FindingKind k) {
  const auto i = static_cast<size_t>(k);
  return i < kFindingKindNames.size() ? kFindingKindNames[i].second : std::string_view();
}

/// FindingKindName as a string, for a Finding's `kind`.
inline std::string KindName(FindingKind k) { return std::string(FindingKindName(k)); }

/// The kind named `name`, or nullopt for a name no fixed kind has (an `efa_<counter>` rise, a
/// kind from a newer agent).
std::optional<FindingKind> ParseFindingKind(std::string_view name);

/// True when the wire name `kind` is `k`.
constexpr bool IsKind(std::string_view kind, FindingKind k) { return kind == FindingKindName(k); }

/// The kind of a rising EFA hardware counter finding: "efa_" + the counter's sysfs name
/// ("rx_drops" -> "efa_rx_drops").
std::string EfaCounterRiseKind(std::string_view counter);

}  // namespace efawatch::common
