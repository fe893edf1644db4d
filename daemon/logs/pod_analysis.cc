#include "daemon/logs/pod_analysis.h"

#include <nlohmann/json.hpp>

#include "daemon/logs/checkpoint_codec.h"
#include "lib/nccl/record_scanner.h"

namespace efawatch::logs {
namespace {

// "<time> <stream> P <text>": a record the runtime split; its first piece may lack the NCCL
// token that a later piece carries, so partial pieces always reach the analyzer.
bool IsCriPartial(std::string_view line) {
  const size_t a = line.find(' ');
  if (a == std::string_view::npos) return false;
  const size_t b = line.find(' ', a + 1);
  return b != std::string_view::npos && b + 2 < line.size() && line[b + 1] == 'P' &&
         line[b + 2] == ' ';
}

common::Labels PodLabels(const LogSource& s) {
  return {{"namespace", s.namespace_name}, {"pod", s.pod}, {"container", s.container}};
}

}  // namespace

PodAnalysis::PodAnalysis(const PodAnalysisOptions& options, const common::Clock& clock,
                         common::FindingsBoard* board, const TailerCounters* tailer)
    : options_(options), clock_(clock), board_(board), tailer_(tailer) {}

PodAnalysis::Container& PodAnalysis::Get(const LogSource& source) {
  // Lines arrive in runs from one file: the tailer's LogSource object is stable while the file
  // is followed, so its address finds the container without building a key per line.
  if (&source == last_source_ && last_path_ == &source.path && last_ != nullptr) return *last_;
  const std::string key = source.Key();
  auto it = containers_.find(key);
  if (it == containers_.end()) {
    if (containers_.size() >= options_.max_containers) {
      auto oldest = containers_.begin();
      for (auto i = containers_.begin(); i != containers_.end(); ++i) {
        if (i->second.last_write < oldest->second.last_write) oldest = i;
      }
      containers_.erase(oldest);
      last_ = nullptr;
      ++evicted_;
    }
    it = containers_.emplace(key, Container{}).first;
    it->second.source = source;
  }
  Container& c = it->second;
  if (c.analyzer == nullptr || c.source.path != source.path) {
    // A new run of the container (new restart file): its verdict starts afresh.
    if (c.analyzer != nullptr) {
      c.nccl_lines_before += c.analyzer->counters().nccl_lines;
      c.malformed_before += c.analyzer->counters().malformed_lines;
      c.has_restored = false;
    } else if (c.has_restored && c.source.path != source.path) {
      c.has_restored = false;
    }
    c.source = source;
    nccl::AnalyzerOptions o = options_.analyzer;
    o.envelope = source.format == Format::kCri          ? nccl::Envelope::kCri
                 : source.format == Format::kDockerJson ? nccl::Envelope::kDockerJson
                                                        : nccl::Envelope::kAuto;
    o.group_by_source = true;
    c.analyzer = std::make_unique<nccl::Analyzer>(o);
    c.source_name = source.path.string();
    c.needs_eval = true;
  }
  last_source_ = &source;
  last_path_ = &source.path;
  last_ = &c;
  return c;
}

void PodAnalysis::MarkWritten(Container& c) {
  c.dirty = true;
  if (c.gone) {
    // Written again after it was reported gone: its verdict and findings are live again.
    c.gone = false;
    c.needs_eval = true;
  }
}

void PodAnalysis::OnLine(const LogSource& source, uint64_t line_no, std::string_view line) {
  Container& c = Get(source);
  ++c.lines;
  MarkWritten(c);
  if (!nccl::MaybeNcclLine(line) && !IsCriPartial(line)) return;
  c.analyzer->Feed(c.source_name, line_no, line);
  c.needs_eval = true;
}

void PodAnalysis::OnLines(const LogSource& source, uint64_t first_line_no, uint64_t count,
                          std::string_view block) {
  Container& c = Get(source);
  c.lines += count;
  MarkWritten(c);
  // The same lines as OnLine() would feed: those MaybeNcclLine() accepts and CRI partial pieces
  // (which always hold " P "), found by one search per substring over the whole block.
  nccl::ForEachMaybeNcclLine(block, " P ", [&](uint64_t index, std::string_view line, bool nccl) {
    if (!nccl && !IsCriPartial(line)) return;
    c.analyzer->Feed(c.source_name, first_line_no + index, line);
    c.needs_eval = true;
  });
}

void PodAnalysis::OnSourceGone(const LogSource& source) {
  last_ = nullptr;  // the tailer is about to drop this LogSource
  auto it = containers_.find(source.Key());
  if (it == containers_.end()) return;
  it->second.gone = true;
  it->second.gone_at = clock_.Now();
  it->second.dirty = true;
  it->second.needs_eval = true;
}

ContainerVerdict PodAnalysis::Evaluate(Container& c, std::vector<common::Finding>* findings) const {
  ContainerVerdict v;
  v.source = c.source;
  v.gone = c.gone;
  v.lines = c.lines;
  v.nccl_lines = c.nccl_lines_before;
  v.malformed_lines = c.malformed_before;
  bool own_evidence = false;
  if (c.analyzer != nullptr) {
    const nccl::Report r = c.analyzer->Snapshot();
    v.nccl_lines += c.analyzer->counters().nccl_lines;
    v.malformed_lines += c.analyzer->counters().malformed_lines;
    v.nccl = nccl::VerdictOf(r);
    for (const auto& p : r.processes) own_evidence = own_evidence || !p.communicators.empty();
    for (const auto& f : r.findings) {
      if (f.severity == nccl::Severity::kInfo) continue;
      common::Finding cf;
      cf.kind = f.kind;
      cf.severity = f.severity;
      cf.subject = c.source.PodKey() + "/" + c.source.container;
      cf.message = f.message;
      cf.evidence = f.evidence;
      findings->push_back(std::move(cf));
    }
  }
  // Until this run shows communicators of its own, the verdict saved before an agent restart
  // stands (the lines it came from are not read again).
  if (c.has_restored && !own_evidence) {
    nccl::FillFromEarlier(v.nccl, c.restored.nccl);
    findings->insert(findings->end(), c.restored_findings.begin(), c.restored_findings.end());
  }
  return v;
}

void PodAnalysis::OnPassComplete() {
  const auto now = clock_.Now();
  last_ = nullptr;  // the tailer may free or reuse its LogSource objects between passes
  // Only what changed is evaluated and published: with hundreds of busy containers a pass
  // comes several times a second, and rebuilding every verdict and finding each time cost more
  // than reading the lines (bench/pod_logs.sh).
  std::vector<std::string> removed;
  std::vector<std::pair<const std::string*, const ContainerVerdict*>> changed;
  bool findings_changed = false;
  for (auto it = containers_.begin(); it != containers_.end();) {
    Container& c = it->second;
    if (c.gone && now - c.gone_at >= options_.grace_period) {
      removed.push_back(it->first);
      findings_changed = true;
      it = containers_.erase(it);
      continue;
    }
    if (c.dirty) {
      c.last_write = now;
      if (c.needs_eval) {
        // Reports are cheap (they grow with processes, not lines) but not free.
        c.findings.clear();
        c.verdict = Evaluate(c, &c.findings);
        c.needs_eval = false;
        findings_changed = true;
      } else {
        // Only lines the analyzer never saw came: nothing but the line count moved.
        c.verdict.lines = c.lines;
      }
      c.dirty = false;
      changed.emplace_back(&it->first, &c.verdict);
    }
    ++it;
  }
  if (removed.empty() && changed.empty() && evicted_published_ == evicted_) return;
  {
    std::lock_guard lock(mu_);
    for (const auto& key : removed) verdicts_.erase(key);
    for (const auto& [key, verdict] : changed) verdicts_[*key] = *verdict;
    // A container evicted by Get() leaves a verdict behind: drop the ones with no container.
    if (evicted_published_ != evicted_) {
      for (auto v = verdicts_.begin(); v != verdicts_.end();) {
        v = containers_.contains(v->first) ? std::next(v) : verdicts_.erase(v);
      }
      findings_changed = true;
    }
    evicted_published_ = evicted_;
  }
  if (!findings_changed) return;
  std::vector<common::Finding> findings;
  for (const auto& [key, c] : containers_) {
    if (!c.gone) findings.insert(findings.end(), c.findings.begin(), c.findings.end());
  }
  board_->Publish("nccl", std::move(findings));
}

std::string PodAnalysis::Checkpoint() const {
  nlohmann::json j = nlohmann::json::array();
  std::lock_guard lock(mu_);
  for (const auto& [key, c] : containers_) {
    auto v = verdicts_.find(key);
    if (v == verdicts_.end()) continue;
    const ContainerVerdict& x = v->second;
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : c.findings) findings.push_back(FindingToJson(f));
    nlohmann::json e = {{"key", key},
                        {"path", c.source.path.string()},
                        {"namespace", c.source.namespace_name},
                        {"pod", c.source.pod},
                        {"uid", c.source.uid},
                        {"container", c.source.container},
                        {"lines", x.lines},
                        {"nccl_lines", x.nccl_lines},
                        {"malformed_lines", x.malformed_lines},
                        {"findings", findings}};
    VerdictToJson(x.nccl, e);
    j.push_back(std::move(e));
  }
  return j.dump();
}

void PodAnalysis::Restore(std::string_view state) {
  auto j = nlohmann::json::parse(state, nullptr, false);
  if (!j.is_array()) return;
  for (const auto& e : j) {
    Container c;
    c.source.path = e.value("path", std::string());
    c.source.format = Format::kCri;
    c.source.namespace_name = e.value("namespace", std::string());
    c.source.pod = e.value("pod", std::string());
    c.source.uid = e.value("uid", std::string());
    c.source.container = e.value("container", std::string());
    c.lines = e.value("lines", uint64_t{0});
    c.nccl_lines_before = e.value("nccl_lines", uint64_t{0});
    c.malformed_before = e.value("malformed_lines", uint64_t{0});
    c.restored.source = c.source;
    c.restored.nccl = VerdictFromJson(e);
    for (const auto& f : e.value("findings", nlohmann::json::array())) {
      c.restored_findings.push_back(FindingFromJson(f));
    }
    c.has_restored = true;
    c.last_write = clock_.Now();
    containers_[e.value("key", std::string())] = std::move(c);
  }
}

bool PodAnalysis::NcclActive() const {
  std::lock_guard lock(mu_);
  for (const auto& [key, v] : verdicts_) {
    if (!v.gone && v.nccl.processes > 0) return true;
  }
  return false;
}

std::vector<ContainerVerdict> PodAnalysis::Verdicts() const {
  std::lock_guard lock(mu_);
  std::vector<ContainerVerdict> out;
  for (const auto& [key, v] : verdicts_) out.push_back(v);
  return out;
}

void WriteVerdictMetrics(const ContainerVerdict& v, common::MetricSink& sink) {
  const common::Labels l = PodLabels(v.source);
  sink.Add(metrics::M::kLogsLinesTotal, l, static_cast<double>(v.lines));
  sink.Add(metrics::M::kLogsNcclLinesTotal, l, static_cast<double>(v.nccl_lines));
  if (v.nccl_lines == 0) return;  // pods without NCCL get no verdict series
  const nccl::Verdict& n = v.nccl;
  sink.Add(metrics::M::kNcclTcpFallback, l, n.tcp_fallback ? 1 : 0);
  sink.Add(metrics::M::kNcclLoopbackMisuse, l, n.loopback_misuse ? 1 : 0);
  sink.Add(metrics::M::kNcclNetPluginMissing, l, n.net_plugin_missing ? 1 : 0);
  sink.Add(metrics::M::kNcclGdrDisabled, l, n.gdr_disabled ? 1 : 0);
  common::Labels info = l;
  info.push_back({"network", n.network});
  info.push_back({"transport", n.transport});
  info.push_back({"ofi_provider", n.ofi_provider});
  info.push_back({"nccl_version", n.nccl_version});
  info.push_back({"nodes", n.nodes_evidence.empty() ? "unknown" : n.nodes_evidence});
  sink.Add(metrics::M::kNcclInfo, info, 1);
  sink.Add(metrics::M::kNcclProcesses, l, static_cast<double>(n.processes));
  sink.Add(metrics::M::kNcclCommunicators, l, static_cast<double>(n.communicators));
  sink.Add(metrics::M::kNcclWarningsTotal, l, static_cast<double>(n.warnings));
  sink.Add(metrics::M::kNcclErrorsTotal, l, static_cast<double>(n.errors));
}

absl::Status PodAnalysis::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                  common::MetricSink& sink) {
  std::lock_guard lock(mu_);
  for (const auto& [key, v] : verdicts_) {
    WriteVerdictMetrics(v, sink);
  }
  uint64_t malformed = 0;
  for (const auto& [key, v] : verdicts_) malformed += v.malformed_lines;
  sink.Add(metrics::M::kLogsMalformedLinesTotal, {}, static_cast<double>(malformed));
  sink.Add(metrics::M::kLogsStateEvictedTotal, {}, static_cast<double>(evicted_published_));
  if (tailer_ != nullptr) {
    sink.Add(metrics::M::kLogsFilesWatched, {}, static_cast<double>(tailer_->files_watched));
    sink.Add(metrics::M::kLogsReadBytesTotal, {}, static_cast<double>(tailer_->bytes_read));
    sink.Add(metrics::M::kLogsReadLinesTotal, {}, static_cast<double>(tailer_->lines_read));
    sink.Add(metrics::M::kLogsRotationsTotal, {}, static_cast<double>(tailer_->rotations));
    sink.Add(metrics::M::kLogsTruncationsTotal, {}, static_cast<double>(tailer_->truncations));
    sink.Add(metrics::M::kLogsCheckpointWritesTotal, {},
             static_cast<double>(tailer_->checkpoint_writes));
    sink.Add(metrics::M::kLogsFilesRefusedTotal, {}, static_cast<double>(tailer_->files_refused));
    sink.Add(metrics::M::kLogsFilesOverCapTotal, {}, static_cast<double>(tailer_->files_over_cap));
    sink.Add(metrics::M::kLogsTruncatedLinesTotal, {},
             static_cast<double>(tailer_->lines_truncated));
  }
  return absl::OkStatus();
}

}  // namespace efawatch::logs
