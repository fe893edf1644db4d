// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/common/finding.h"
#include "lib/nccl/verdict.h"

// Value types produced by the NCCL log analyzer (analyzer.h). They are plain data: copyable,
// no pointers into the analyzer, safe to hand to another thread once produced.
namespace efawatch::nccl {

// The agent's severities ("info", "warning", "critical"), so findings cross over unchanged.
using common::Severity;
using common::SeverityName;

// Where a finding comes from: the source name given to Analyzer::Feed, its line number and the
// (cleaned, length-capped) line text. The agent's one Evidence record.
using common::Evidence;

// Stable finding kinds (lib/common/finding_kind.h); docs/nccl-findings.md explains each one.
inline constexpr std::string_view kTcpFallback =
    common::FindingKindName(common::FindingKind::kTcpFallback);
inline constexpr std::string_view kLoopbackMisuse =
    common::FindingKindName(common::FindingKind::kLoopbackMisuse);
inline constexpr std::string_view kNetPluginMissing =
    common::FindingKindName(common::FindingKind::kNetPluginMissing);
inline constexpr std::string_view kGdrDisabled =
    common::FindingKindName(common::FindingKind::kGdrDisabled);
inline constexpr std::string_view kNcclWarning =
    common::FindingKindName(common::FindingKind::kNcclWarning);
inline constexpr std::string_view kNcclError =
    common::FindingKindName(common::FindingKind::kNcclError);
inline constexpr std::string_view kCollectiveTimeout =
    common::FindingKindName(common::FindingKind::kCollectiveTimeout);
inline constexpr std::string_view kCommAbort =
    common::FindingKindName(common::FindingKind::kCommAbort);
inline constexpr std::string_view kNetCompletionError =
    common::FindingKindName(common::FindingKind::kNetCompletionError);
inline constexpr std::string_view kConnectionFailure =
    common::FindingKindName(common::FindingKind::kConnectionFailure);

struct Finding {
  std::string kind;
  Severity severity = Severity::kInfo;
  std::string host;  // empty when the evidence names no process (launcher lines, banners)
  uint32_t pid = 0;
  std::string message;  // one human sentence
  // The states the message words: a proof of several nodes would make it certain; the job asked
  // for it (NCCL_IB_DISABLE=1, NCCL_NET=Socket). Read these, never the message.
  bool suspected = false;
  bool by_configuration = false;
  uint64_t count = 1;  // occurrences folded into this finding (WARN lines, error chains, ...)
  Evidence evidence;   // the first occurrence

  bool Is(common::FindingKind k) const { return common::IsKind(kind, k); }
};

struct Communicator {
  std::string id;  // commId (NCCL >= 2.16) when printed, else the comm pointer
  // True when `id` is NCCL's commId, the same on every rank of the communicator on every node
  // (what joins one job's logs across nodes); false when it is this process's comm pointer.
  bool has_comm_id = false;
  int rank = -1;
  int nranks = -1;
  int nnodes = -1;  // NCCL >= 2.20 "nNodes"; -1 when not printed
  int cuda_dev = -1;
  std::string bus_id;
  bool init_complete = false;
  bool aborted = false;
  // Channel connections by transport ("P2P/IPC", "SHM", "NET/Socket", "NET/IB/GDRDMA", ...).
  std::vector<std::pair<std::string, uint64_t>> transports;
};

struct Process {
  std::string host;
  uint32_t pid = 0;
  std::string source;  // first source this process was seen in
  std::string nccl_version;
  std::string cuda_version;
  std::string net_plugin;        // "aws-ofi-nccl 1.4.0aws", "IBext", "none", "" when unknown
  std::string net_plugin_state;  // "loaded", "not_found", "abi_mismatch", "init_failed", ""
  // aws-ofi-nccl's version from its own "Initializing aws-ofi-nccl 1.9.1-aws" line ("1.9.1-aws"),
  // "" when it printed none. Not in `analyze --json` (whose output stays as it was): the stack
  // (stack.h) carries it.
  std::string net_plugin_version;
  std::string network;         // NCCL's net name: "Socket", "IB", "IBext_v8", "AWS Libfabric"
  std::string network_family;  // "Socket", "IB", "OFI", "other", "" when unknown
  std::string ofi_provider;    // "efa", "tcp;ofi_rxm", ...
  std::string ofi_fabric;
  int ofi_nics = -1;
  std::string instance_type;  // from aws-ofi-nccl "Running on <type> platform"
  std::string bootstrap_interface;
  std::string bootstrap_address;
  std::string gdr;                                            // "on", "off", "unknown"
  std::vector<std::pair<std::string, std::string>> settings;  // echoed NCCL_* / FI_* settings
  std::vector<Communicator> communicators;
  uint64_t warnings = 0;
  uint64_t errors = 0;
};

/// The analyzer's summary of a log: the verdict record, the line it prints first, and how the
/// verdict was reached.
struct Summary {
  Verdict verdict;
  std::string headline;    // ReportHeadline(): the one-line verdict `efawatch analyze` prints
  std::string nodes_rule;  // the rule that proved the node count ("nnodes", ...); empty if none
  Evidence nodes_proof;    // the line it rests on
  uint64_t lines = 0;
  uint64_t nccl_lines = 0;
  uint64_t malformed_lines = 0;
  uint64_t warn_records = 0;
  uint64_t ray_repeated_lines = 0;  // Counters::ray_repeated_lines
};

struct Report {
  std::vector<Process> processes;
  std::vector<Finding> findings;
  Summary summary;

  // True when a finding of `kind` exists at warning severity or above.
  bool Has(std::string_view kind) const;
  // Highest severity among the findings (kInfo when there are none).
  Severity MaxSeverity() const;
  // False when the input held no NCCL output at all (no record, no version banner, no finding):
  // usually NCCL_DEBUG is unset, or the wrong file was given.
  bool HasNcclOutput() const;
};

struct Counters {
  uint64_t lines = 0;              // physical lines fed
  uint64_t nccl_lines = 0;         // lines holding at least one NCCL record or version banner
  uint64_t malformed_lines = 0;    // binary junk or broken envelopes: skipped
  uint64_t evicted_processes = 0;  // processes dropped to respect max_processes
  uint64_t evicted_comms = 0;      // communicators dropped to respect max_comms_per_process
  uint64_t truncated_lines = 0;    // lines cut to max_line_bytes
  uint64_t records = 0;            // NCCL records (a physical line can hold several)
  uint64_t warn_records = 0;       // "NCCL WARN" records
  uint64_t legacy_records = 0;     // pre-2.3 records without the NCCL token
  // Lines Ray's driver folded into the lines shown ("[repeated Nx across cluster]": the sum of
  // the N); their text is not seen, so the verdict rests on the lines that were printed.
  uint64_t ray_repeated_lines = 0;
  uint64_t ray_marker_lines = 0;  // ":task_name:", ":actor_name:" ... lines of worker files
  // Lines FeedLines() handed to the per-line path (envelope, cleaning, record search) instead of
  // only counting them: the NCCL-bearing lines plus what the block scan could not rule out. A
  // test bounds it on every log shape bench/analyze.sh times, so a change that widens the slow
  // path fails CI whatever the machine's speed. Feed() does not count here.
  uint64_t slow_path_lines = 0;
};

}  // namespace efawatch::nccl
