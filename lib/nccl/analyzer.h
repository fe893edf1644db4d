// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "lib/nccl/types.h"
#include "lib/nccl/unwrap.h"

// Streaming analyzer for NCCL_DEBUG=INFO output (and the aws-ofi-nccl, libfabric, launcher and
// PyTorch lines that share its stream). Tells whether inter-node traffic runs over EFA/IB RDMA
// or fell back to TCP sockets, whether loopback is misused, and collects other NCCL health
// findings. Usage:
//   1. Create one Analyzer per scope (a node's pods, or the files of one job).
//   2. Feed() every physical line with its source name and line number, in order per source.
//   3. Snapshot() at any time for the report so far; feeding may continue afterwards.
// Thread-safety: NOT thread-safe. The caller serializes all calls (one tailer thread, or a
// mutex); Snapshot() returns a self-contained value that may be handed to other threads.
// Memory: bounded by AnalyzerOptions whatever the input; what is dropped is counted.
namespace efawatch::nccl {

namespace internal {
struct State;
}  // namespace internal

struct AnalyzerOptions {
  size_t max_processes = 4096;           // oldest process state is evicted beyond this
  size_t max_comms_per_process = 256;    // oldest communicator of a process is evicted beyond
  size_t max_line_bytes = 64 * 1024;     // longer lines (and joined partials) are truncated
  size_t max_sources = 4096;             // distinct source names tracked (later ones share one)
  size_t max_evidence_bytes = 512;       // evidence text kept per finding
  size_t max_settings_per_process = 64;  // echoed NCCL_*/FI_* settings kept per process
  Envelope envelope = Envelope::kAuto;   // how lines are packaged (auto: detected per line)
  // When true, node-count reasoning from host names and addresses stays within one source
  // (the daemon: one source per container, and pods of one node have different host names).
  // When false (the CLI: the files of one job), hosts of all sources are counted together.
  bool group_by_source = false;
  // False: every line goes to the per-line parser, none is passed over by the block scan. The
  // reference the differential tests and fuzz target compare the scan with; slower.
  bool block_scan = true;
};

class Analyzer {
 public:
  explicit Analyzer(AnalyzerOptions options = {});
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // Feeds one physical line (without or with its trailing newline): FeedLines() of that line.
  // `source` names the file or container log; `line_no` is its 1-based line number, kept as
  // evidence. Never fails: junk is counted in counters().malformed_lines and skipped.
  void Feed(std::string_view source, uint64_t line_no, std::string_view raw_line);

  // Feeds every line of `data` (split at '\n'; the last line may lack its newline), numbered
  // from `first_line_no`: the same as Feed() for each line, but cheaper for blocks of many
  // lines (the source is looked up once, some per-line checks run once per block). Returns the
  // number of lines fed. Lines that hold nothing the analyzer reacts to (IsCandidateLine() in
  // block_scanner.h) are only counted, found by one vector scan of the block.
  // The one feed rule, for the agent and `analyze` alike: candidate lines (above), the
  // envelope of each line (CRI, docker json-file, or none; DeclareSource), and UTF-8 (bytes that
  // are not are replaced by U+FFFD before a line is parsed).
  uint64_t FeedLines(std::string_view source, uint64_t first_line_no, std::string_view data);

  // Declares whether `source` is a docker json-file log, where the caller knows (the agent, by
  // the file's name): its lines are JSON records from the first on; any other file's '{' lines
  // (Trainer's metric dicts, JSON-lines logging) are text. Undeclared, the source's first line
  // decides. Call before its first line.
  void DeclareSource(std::string_view source, bool docker_json);

  // Whether `source`'s last line was a piece of a split record (CRI "P", docker json-file
  // without its newline) whose rest has not come yet: a caller that skips lines must feed the
  // next one whatever it holds.
  bool AwaitsContinuation(std::string_view source) const;

  // What Snapshot() puts in the report besides the summary, findings and processes.
  struct SnapshotOptions {
    // Each process's communicators (Process::communicators): the bulk of a large job's report
    // (tens of thousands, with their transports), which the CLI's text output does not show.
    bool communicators = true;
  };
  // The report for everything fed so far (processes, findings, summary). Cost grows with the
  // number of processes and communicators, not with the number of lines.
  Report Snapshot(SnapshotOptions options) const;
  Report Snapshot() const { return Snapshot(SnapshotOptions{}); }

  const Counters& counters() const;
  const AnalyzerOptions& options() const;

  // Adds the state of `later`, an analyzer (same options) that was fed the lines that directly
  // follow the ones fed to this one, e.g. the second half of a file analyzed on another thread.
  // `line_offset` is added to `later`'s line numbers (its first line is line_offset + 1).
  // Equivalent to feeding both parts in order, except for a runtime-split (CRI "P") record or
  // a communicator's channel lines that straddle the cut. `later` is left empty; the memory of
  // what it held is freed with this analyzer, not during the merge.
  void Merge(Analyzer&& later, uint64_t line_offset);

 private:
  std::unique_ptr<internal::State> state_;
};

}  // namespace efawatch::nccl
