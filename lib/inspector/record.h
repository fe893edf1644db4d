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

/// What a Prometheus-mode file (nccl_inspector_metrics_*.prom, rewritten at each dump) holds:
/// one op per nccl_bus_bandwidth_gbs / nccl_p2p_bus_bandwidth_gbs sample, with the exec time of
/// the sample with the same labels, its size from the `message_size` label ("2.00GB", binary
/// units) and its sequence number from `coll_sn` (or `p2p_sn`) where present. Lines it cannot
/// read are counted in `malformed`. Never throws.
struct PromFile {
  std::vector<InspectorOp> ops;
  uint64_t malformed = 0;
};
PromFile ParsePromText(std::string_view text);

/// A `message_size` label value ("2.00GB", "512.00KB", "8192", "1.5 MB") in bytes, binary units;
/// 0 when it cannot be read.
uint64_t ParseMessageSize(std::string_view v);

}  // namespace efawatch::inspector
