#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "lib/nccl/types.h"

namespace efawatch::nccl {

/// The NCCL verdict of one log (a container's current run, or one file): the one record every
/// edge of the agent renders — metrics (daemon/logs/pod_metrics), the checkpoint (daemon/logs/
/// checkpoint_codec), gRPC (daemon/rpc/records). A new field is added here, to ForEachField, and
/// to each edge's one mapping; tests/unit/records fails until every edge carries it. Plain data.
struct Verdict {
  bool tcp_fallback = false;
  bool tcp_deliberate = false;  // the TCP net was chosen by configuration
  bool loopback_misuse = false;
  bool net_plugin_missing = false;
  bool gdr_disabled = false;
  std::string network;       // NCCL's net name: "Socket", "IB", "AWS Libfabric", ...
  std::string transport;     // inter-node transport: "NET/OFI", "NET/Socket", "none(single node)"
  std::string ofi_provider;  // "efa", "tcp;ofi_rxm", "none", "unknown"
  std::string nccl_version;
  // What the log proves about the job's node count: "proven_single", "proven_multi", "unknown".
  // A TCP or loopback net is a certain fault only when multi-node is proven (a suspected one
  // otherwise): alerts take their severity from it.
  std::string nodes_evidence;
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
  f("tcp_deliberate", v.tcp_deliberate);
  f("loopback_misuse", v.loopback_misuse);
  f("net_plugin_missing", v.net_plugin_missing);
  f("gdr_disabled", v.gdr_disabled);
  f("network", v.network);
  f("transport", v.transport);
  f("ofi_provider", v.ofi_provider);
  f("nccl_version", v.nccl_version);
  f("nodes_evidence", v.nodes_evidence);
  f("processes", v.processes);
  f("communicators", v.communicators);
  f("warnings", v.warnings);
  f("errors", v.errors);
}

/// The verdict of an analyzer's report.
Verdict VerdictOf(const Report& report);

/// Fills what `v` does not know from `earlier` (a verdict saved before an agent restart, whose
/// lines are not read again): flags are or-ed, unknown names taken, counts kept at the larger
/// (processes, communicators) or summed (warnings, errors: the earlier lines are not re-counted).
void FillFromEarlier(Verdict& v, const Verdict& earlier);

}  // namespace efawatch::nccl
