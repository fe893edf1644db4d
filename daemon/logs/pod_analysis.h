#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/logs/source.h"
#include "daemon/logs/tailer.h"
#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "lib/common/findings_board.h"
#include "lib/nccl/analyzer.h"
#include "lib/nccl/verdict.h"

namespace efawatch::logs {

struct PodAnalysisOptions {
  /// A container's series and findings are removed this long after its logs disappear.
  std::chrono::seconds grace_period{300};
  /// Containers analyzed at once; beyond it the least recently written one is evicted.
  size_t max_containers = 1024;
  nccl::AnalyzerOptions analyzer;
};

/// One container's current run: where its log is, how much of it was read, and its NCCL verdict.
struct ContainerVerdict {
  LogSource source;
  nccl::Verdict nccl;
  uint64_t lines = 0, nccl_lines = 0, malformed_lines = 0;
  bool gone = false;
};

/// The container's series: line counts always; the verdict's series once NCCL lines were seen.
/// The Prometheus mapping of the verdict record, in one place.
void WriteVerdictMetrics(const ContainerVerdict& v, common::MetricSink& sink);

/// Feeds every container's log lines to its own NCCL analyzer (lines without NCCL are counted
/// and skipped by a cheap pre-filter), turns the analyzers' reports into per-container verdicts,
/// publishes their findings (owner "nccl") and exports them as metrics.
///
/// A container's verdict covers its current run: when the container restarts (a new
/// `<restart>.log`), its analyzer starts afresh, so a fixed job stops firing. Counts and verdicts
/// are saved in the tailer's checkpoint, so a restarted agent neither loses nor doubles them.
///
/// Threads: the LineSink methods run on the tailer's thread; Collect() on the scrape thread;
/// they share only the verdict table, under a mutex.
class PodAnalysis final : public LineSink, public common::Collector {
 public:
  PodAnalysis(const PodAnalysisOptions& options, const common::Clock& clock,
              common::FindingsBoard* board, const TailerCounters* tailer);

  void OnLine(const LogSource& source, uint64_t line_no, std::string_view line) override;
  void OnLines(const LogSource& source, uint64_t first_line_no, uint64_t count,
               std::string_view block) override;
  void OnSourceGone(const LogSource& source) override;
  void OnPassComplete() override;
  std::string Checkpoint() const override;
  void Restore(std::string_view state) override;

  std::string_view Name() const override { return "nccl_logs"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

  /// The tailer feeding us, whose counters Collect() exports. Set before the first scrape.
  void set_tailer_counters(const TailerCounters* tailer) { tailer_ = tailer; }

  /// True when a container that is not gone has NCCL processes (for the EFA fallback rule).
  bool NcclActive() const;
  std::vector<ContainerVerdict> Verdicts() const;

 private:
  struct Container {
    LogSource source;
    std::unique_ptr<nccl::Analyzer> analyzer;
    ContainerVerdict restored;  // from the checkpoint, until this run shows its own evidence
    std::vector<common::Finding> restored_findings;
    bool has_restored = false;
    std::string source_name;  // source.path as a string, the analyzer's source name
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
  };
  Container& Get(const LogSource& source);
  void MarkWritten(Container& c);
  ContainerVerdict Evaluate(Container& c, std::vector<common::Finding>* findings) const;

  const PodAnalysisOptions options_;
  const common::Clock& clock_;
  common::FindingsBoard* board_;
  const TailerCounters* tailer_ = nullptr;
  std::map<std::string, Container> containers_;  // tailer thread only
  uint64_t evicted_ = 0;
  const LogSource* last_source_ = nullptr;  // OnLine's cache; see Get()
  const std::filesystem::path* last_path_ = nullptr;
  Container* last_ = nullptr;

  mutable std::mutex mu_;                             // guards the fields below
  std::map<std::string, ContainerVerdict> verdicts_;  // updated in place, entry by entry
  uint64_t evicted_published_ = 0;
};

}  // namespace efawatch::logs
