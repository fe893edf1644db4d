// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "daemon/logs/container_verdict.h"
#include "daemon/logs/source.h"
#include "daemon/logs/tailer.h"
#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "lib/common/findings_board.h"
#include "lib/nccl/analyzer.h"
#include "lib/nccl/communicators.h"
#include "lib/nccl/verdict.h"

namespace efawatch::logs {

struct PodAnalysisOptions {
  /// A container's series and findings are removed this long after its logs disappear.
  std::chrono::seconds grace_period{300};
  /// Containers analyzed at once; beyond it the least recently written one is evicted.
  size_t max_containers = 1024;
  /// efawatch_nccl_communicator_info series per pod (all its containers together); further
  /// communicators are counted in efawatch_nccl_communicators_dropped_total. 32 covers a 3D-
  /// parallel job on an 8-GPU pod (world, one tensor-parallel group, and a data- and a
  /// pipeline-parallel group per rank: about 2 x 8 + 2 commIds) with room to spare, while a
  /// fleet of 1,000 NCCL pods stays under 32,000 such series. Communicators that use a NET
  /// transport (the ones that cross nodes) are kept first, then the newest.
  size_t max_communicators_per_pod = 32;
  nccl::AnalyzerOptions analyzer;
  /// Called with every container's verdict, in key order, whenever a pass changed any (on the
  /// tailer's thread): the node-state board takes them.
  std::function<void(std::shared_ptr<const std::vector<ContainerVerdict>>)> on_verdicts;
};

/// Feeds every container's log lines to its own NCCL analyzer (lines without NCCL are counted
/// and skipped by a cheap pre-filter), turns the analyzers' reports into per-container verdicts,
/// publishes their findings (owner "nccl") and hands the verdicts to readers (VerdictCollector
/// for /metrics, the gRPC node health, the Kubernetes signals); logs each container's headline
/// when it changes.
///
/// A container's verdict covers its current run: when the container restarts (a new
/// `<restart>.log`), its analyzer starts afresh, so a fixed job stops firing. Counts and verdicts
/// are saved in the tailer's checkpoint, so a restarted agent neither loses nor doubles them.
///
/// Threads: the LineSink methods run on the tailer's thread; the readers on theirs (scrape, gRPC);
/// they share only the verdict table, under a mutex.
class PodAnalysis final : public LineSink {
 public:
  PodAnalysis(const PodAnalysisOptions& options, const common::Clock& clock,
              common::FindingsBoard* board);

  void OnLine(const LogSource& source, uint64_t line_no, std::string_view line) override;
  void OnLines(const LogSource& source, uint64_t first_line_no, uint64_t count,
               std::string_view block) override;
  void OnSourceGone(const LogSource& source) override;
  void OnPassComplete() override;
  /// The end of the earliest grace period of a gone container.
  std::optional<std::chrono::steady_clock::time_point> NextDue() const override;
  std::string Checkpoint() const override;
  bool CheckpointValid(std::string_view state) const override;
  /// Restores what Checkpoint() saved. A container whose log directory is gone (its pod was
  /// deleted while the agent was down) is restored as gone: it expires after the grace period.
  void Restore(std::string_view state) override;

  std::vector<ContainerVerdict> Verdicts() const;
  /// Calls `f` for every container's verdict under the table's lock (no copies: the scrape).
  void ForEachVerdict(const std::function<void(const ContainerVerdict&)>& f) const;
  /// Containers evicted to respect max_containers, and communicators no series could show.
  struct Drops {
    uint64_t containers = 0;
    uint64_t communicators = 0;
  };
  Drops Dropped() const;

 private:
  struct Container {
    LogSource source;
    std::unique_ptr<nccl::Analyzer> analyzer;
    ContainerVerdict restored;  // from the checkpoint, until this run shows its own evidence
    std::vector<common::Finding> restored_findings;
    bool has_restored = false;
    std::string source_name;      // the path of the file being fed, the analyzer's source name
    std::set<std::string> files;  // files this run was fed from (at most kMaxFilesNamed)
    uint64_t lines = 0;
    uint64_t nccl_lines_before = 0;  // counted by earlier runs' analyzers
    uint64_t malformed_before = 0;
    bool dirty = true;       // lines came (or the container went) since the last pass
    bool needs_eval = true;  // the verdict may have changed beyond its line count
    std::chrono::steady_clock::time_point last_write{};
    std::chrono::steady_clock::time_point gone_at{};
    bool gone = false;
    ContainerVerdict verdict;               // latest evaluation
    std::vector<common::Finding> findings;  // latest evaluation's findings
    // The latest evaluation's communicators, most telling first, at most the pod's cap; the
    // pod's share of them goes to verdict.communicators (ApportionCommunicators).
    std::vector<CommunicatorSeries> comm_candidates;
    uint64_t comms_seen = 0;            // communicators with a commId in this run (see above)
    uint64_t comms_dropped = 0;         // of this run, never exported (only grows)
    uint64_t comms_dropped_before = 0;  // by earlier runs of the container
    std::string headline;               // the verdict headline last logged
  };
  // Files counted per container run; the tailer's caps keep the real number far below.
  static constexpr size_t kMaxFilesNamed = 4096;
  Container& Get(const LogSource& source);
  void StartRun(Container& c, const LogSource& source) const;
  void MarkWritten(Container& c);
  // Feeds `lines` (one line or a block of them) to the container's analyzer; marks it for
  // evaluation when any was parsed.
  void Feed(Container& c, uint64_t first_line_no, std::string_view lines);
  ContainerVerdict Evaluate(Container& c, std::vector<common::Finding>* findings) const;
  // Shares the pod's communicator cap among the containers of the pod whose key starts at
  // `pod_prefix` ("ns/pod/"), in key order, and counts what no container may export.
  void ApportionCommunicators(const std::string& pod_prefix);
  // Verdicts a pass changed, by container key (both point into containers_).
  using Changed = std::vector<std::pair<const std::string*, const ContainerVerdict*>>;
  void ReapportionPods(std::vector<std::string> pods, Changed* changed);
  void Publish(const std::vector<std::string>& removed, const Changed& changed,
               bool findings_changed);
  void LogHeadlines(const Changed& changed);

  const PodAnalysisOptions options_;
  const common::Clock& clock_;
  common::FindingsBoard* board_;
  std::map<std::string, Container> containers_;  // tailer thread only
  uint64_t evicted_ = 0;
  uint64_t comms_dropped_retired_ = 0;  // by containers that are gone from containers_
  std::string last_path_;               // OnLine's cache; see Get()
  Container* last_ = nullptr;           // the container of last_path_; null: look it up

  mutable std::mutex mu_;                             // guards the fields below
  std::map<std::string, ContainerVerdict> verdicts_;  // updated in place, entry by entry
  uint64_t evicted_published_ = 0;
  uint64_t comms_dropped_published_ = 0;
};

}  // namespace efawatch::logs
