// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace efawatch::inspector {

/// What one Inspector record is about: a collective (coll_perf) or a point-to-point op
/// (p2p_perf).
enum class OpKind { kCollective, kP2p };

/// One operation as the NCCL Inspector recorded it (format v4.0; docs/inspector.md). Units are
/// the Inspector's: bandwidths in GB/s (10^9 bytes a second), times in microseconds.
struct InspectorOp {
  /// The communicator's hash as the Inspector prints it ("0x" and lower-case hex, no padding):
  /// the same shape as NCCL's `commId` in its INFO log, so the two meet on one label.
  std::string comm_id;
  int rank = -1;
  int n_ranks = -1;
  int nnodes = -1;
  OpKind kind = OpKind::kCollective;
  std::string op;  // "AllReduce", "AllGather", ..., or "Send"/"Recv"
  uint64_t msg_size_bytes = 0;
  double exec_time_us = 0;
  double algobw_gbs = 0;
  double busbw_gbs = 0;
  /// The operation's sequence number in its communicator (coll_sn, p2p_sn); -1 when absent.
  int64_t sn = -1;
  std::string hostname;
  int64_t pid = -1;
  /// What the application named the communicator (NCCL's commName; "" when the record has none,
  /// "unknown" as the Prometheus-mode v5.1 lines write an unnamed one).
  std::string comm_name;
  /// Prometheus mode v5.1 only: NCCL's algorithm and protocol ("RING_SIMPLE"), and the GPU as the
  /// container sees it ("GPU0"). Neither becomes a label of an exported series.
  std::string algo_proto;
  std::string gpu;
  /// True for a v5.1 sample: not one op but every op of one (collective, size class, algo_proto)
  /// in one dump interval, busbw their geometric mean and exec_time_us their arithmetic mean.
  /// The op count is not written, so a sample is one observation, never N.
  bool aggregated = false;
  /// JSON only: metadata.dump_timestamp_us, when the plugin wrote the record (Unix time, µs);
  /// -1 when absent.
  int64_t dump_timestamp_us = -1;
};

/// What a line of an Inspector JSON Lines file held.
enum class LineKind {
  kOp,              // a record of a known format version, parsed into the op
  kOpOtherVersion,  // a record of another format version: the fields this reader knows, parsed
  kMalformed,       // not JSON, not an object, or without the fields an op needs: skipped
  kBlank,           // empty or white space only: skipped, not counted as malformed
};

/// The format version this reader is written for.
inline constexpr std::string_view kFormatVersion = "v4.0";

/// Parses one line (without its newline) of an Inspector JSON Lines file. Verbose records
/// (event_trace_*) are read like the others, the traces ignored. A busbw missing from a record
/// is computed from its algbw (nccl-tests' factors, BusBwFactor). Never throws.
LineKind ParseJsonLine(std::string_view line, InspectorOp* out);

/// True when `first_line` is an Inspector record: a JSON object with
/// metadata.inspector_output_format_version. How a file is recognised, whatever its name.
bool LooksLikeInspectorJson(std::string_view first_line);

/// nccl-tests' bus bandwidth factor for a collective on `n_ranks` ranks: AllReduce 2(n-1)/n,
/// AllGather and ReduceScatter (n-1)/n, AlltoAll (n-1)/n, Broadcast, Reduce, Send/Recv 1.
double BusBwFactor(std::string_view op, int n_ranks);

/// What a Prometheus-mode file (nccl_inspector_metrics_<gpu uuid>.prom, rewritten in place at
/// each dump) holds. Both generations the plugin has written (docs/inspector.md), told apart per
/// sample by their labels:
///  - NCCL 2.29.x: one sample set per completed op, with `comm_id`, `rank`, `coll_sn`, a
///    `message_size` like "32.00MB". An op per nccl_bus_bandwidth_gbs sample, its sequence number
///    from `coll_sn` (or `p2p_sn`) so a reader counts it once.
///  - NCCL >= 2.30.3 (`version="v5.1"` and later): one aggregate per dump interval and
///    (comm_name, collective or p2p_operation, size class, algo_proto), no communicator id; the
///    op's `aggregated` is set, `message_size` like "32-33MB" gives the class's lower bound.
/// The exec time is the sample with the same labels. Lines it cannot read are counted in
/// `malformed`; a sample whose bandwidth is 0 (an interval without a timed op) in `empty`. Lines
/// of other metrics (the plugin's optional stats, another exporter's) are ignored. Never throws.
struct PromFile {
  std::vector<InspectorOp> ops;
  uint64_t malformed = 0;
  uint64_t empty = 0;
};
PromFile ParsePromText(std::string_view text);

/// A `message_size` label value in bytes, binary units: "2.00GB", "512.00KB", "8192", "1.5 MB"
/// (2.29), or a v5.1 class "32-33MB", "4-5GB", "1-2KB", "0B" (its lower bound). 0 when it cannot
/// be read.
uint64_t ParseMessageSize(std::string_view v);

}  // namespace efawatch::inspector
