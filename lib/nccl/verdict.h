// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace efawatch::nccl {

struct Report;

/// The family of NCCL's selected net, as docs/nccl-findings.md names them.
enum class NetFamily { kUnknown, kSocket, kIB, kOFI, kOther };
/// GPUDirect RDMA on the NET transport: on, off, on for some ranks only (partial), not shown.
enum class Gdr { kUnknown, kOn, kOff, kPartial };
/// What the log proves about the number of nodes the job spans (docs/nccl-findings.md, "Node
/// count"). A TCP or loopback net is certain only when several nodes are proven.
enum class NodesEvidence { kUnknown, kProvenSingle, kProvenMulti };

/// The names every edge writes for the enums above (checkpoint, proto, labels, text): stable,
/// index by value.
template <typename E>
struct EnumNames;
template <>
struct EnumNames<NetFamily> {
  static constexpr std::array<std::string_view, 5> kNames = {"", "Socket", "IB", "OFI", "other"};
};
template <>
struct EnumNames<Gdr> {
  static constexpr std::array<std::string_view, 4> kNames = {"unknown", "on", "off", "partial"};
};
template <>
struct EnumNames<NodesEvidence> {
  static constexpr std::array<std::string_view, 3> kNames = {"unknown", "proven_single",
                                                             "proven_multi"};
};

template <typename E>
concept NamedEnum = requires {
  EnumNames<E>::kNames;
};

template <NamedEnum E>
constexpr std::string_view NameOf(E e) {
  return EnumNames<E>::kNames[static_cast<size_t>(e)];
}

/// The value named `name`; the first (unknown) value for a name no version wrote.
template <NamedEnum E>
constexpr E FromName(std::string_view name) {
  for (size_t i = 0; i < EnumNames<E>::kNames.size(); ++i) {
    if (EnumNames<E>::kNames[i] == name) return static_cast<E>(i);
  }
  return E{};
}

/// The NCCL verdict of one log (a container's current run, one file, a probe's own NCCL log):
/// the analyzer's output (Report::summary.verdict) and the one record every edge renders —
/// `efawatch analyze` and `efawatch status` (VerdictHeadline), metrics
/// (daemon/logs/verdict_metrics), the checkpoint (daemon/logs/checkpoint_codec), gRPC
/// (proto/codec/records: message NcclVerdict). A new field is added here, to ForEachField, and to
/// each edge's one mapping (or to that edge's list of fields it leaves out, with the reason);
/// tests/unit/records fails until it is. Plain data.
struct Verdict {
  // A TCP net (NCCL's Socket transport, or aws-ofi-nccl on a TCP libfabric provider) is selected
  // where ranks may talk across nodes: a warning or worse.
  bool tcp_fallback = false;
  // ... certainly: the job is proven to span nodes and did not ask for TCP (a page).
  bool tcp_certain = false;
  // ... suspected: this log does not show how many nodes the job spans.
  bool tcp_suspected = false;
  // ... chosen by configuration (NCCL_IB_DISABLE=1 or NCCL_NET=Socket): a ticket, not a page.
  bool tcp_deliberate = false;
  bool loopback_misuse = false;
  bool loopback_certain = false;  // a multi-node job bootstraps or sends over loopback
  bool net_plugin_missing = false;
  bool gdr_disabled = false;
  NetFamily family = NetFamily::kUnknown;
  std::string network;       // NCCL's net name: "Socket", "IB", "AWS Libfabric", ...
  std::string transport;     // inter-node transport: "NET/OFI", "NET/Socket", "none(single node)"
  std::string ofi_provider;  // "efa", "tcp;ofi_rxm", "none", "unknown"
  std::string nccl_version;
  Gdr gdr = Gdr::kUnknown;
  NodesEvidence nodes_evidence = NodesEvidence::kUnknown;
  int nodes = -1;  // best node count estimate, -1 unknown
  int ranks = -1;  // largest nranks seen, -1 unknown
  // "<kind>: <message>" of the first critical finding that is neither TCP nor loopback.
  std::string failure;
  std::vector<std::string> warning_kinds;  // kinds of the warning findings, each once, in order
  uint64_t processes = 0;
  uint64_t communicators = 0;
  uint64_t warnings = 0;  // NCCL WARN records, summed over processes
  uint64_t errors = 0;    // error records, summed over processes

  bool operator==(const Verdict&) const = default;
};

/// Calls `f(name, field)` for every field of `v`, in declaration order, with the names the JSON
/// and proto edges use. Codecs built on it cannot forget a field; the record test checks that it
/// visits as many fields as the struct has.
template <typename V, typename F>
requires std::is_same_v<std::remove_const_t<V>, Verdict>
void ForEachField(V& v, F&& f) {
  f("tcp_fallback", v.tcp_fallback);
  f("tcp_certain", v.tcp_certain);
  f("tcp_suspected", v.tcp_suspected);
  f("tcp_deliberate", v.tcp_deliberate);
  f("loopback_misuse", v.loopback_misuse);
  f("loopback_certain", v.loopback_certain);
  f("net_plugin_missing", v.net_plugin_missing);
  f("gdr_disabled", v.gdr_disabled);
  f("family", v.family);
  f("network", v.network);
  f("transport", v.transport);
  f("ofi_provider", v.ofi_provider);
  f("nccl_version", v.nccl_version);
  f("gdr", v.gdr);
  f("nodes_evidence", v.nodes_evidence);
  f("nodes", v.nodes);
  f("ranks", v.ranks);
  f("failure", v.failure);
  f("warning_kinds", v.warning_kinds);
  f("processes", v.processes);
  f("communicators", v.communicators);
  f("warnings", v.warnings);
  f("errors", v.errors);
}

/// The one-line verdict: what `efawatch analyze` prints first, `efawatch status` prints per pod
/// and the agent logs when a pod's verdict changes. Starts with the state in capitals ("TCP
/// FALLBACK:", "SUSPECTED TCP FALLBACK:", "OK:", ...).
std::string VerdictHeadline(const Verdict& v);

/// The headline of a report: VerdictHeadline, or the advice to turn NCCL's log on when the input
/// held no NCCL output at all.
std::string ReportHeadline(const Report& report);

/// Fills what `v` does not know from `earlier` (a verdict saved before an agent restart, whose
/// lines are not read again): flags are or-ed, unknown names taken, counts kept at the larger
/// (processes, communicators, nodes, ranks) or summed (warnings, errors: the earlier lines are
/// not re-counted), warning kinds joined.
void FillFromEarlier(Verdict& v, const Verdict& earlier);

}  // namespace efawatch::nccl
