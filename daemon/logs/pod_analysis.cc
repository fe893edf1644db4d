// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/pod_analysis.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "daemon/logs/checkpoint_codec.h"
#include "lib/common/utf8.h"
#include "lib/nccl/block_scanner.h"
#include "spdlog/spdlog.h"

namespace efawatch::logs {
namespace {

// "<time> <stream> P <text>": a record the runtime split; its first piece may lack the NCCL
// token that a later piece carries, so partial pieces always reach the analyzer.

// Feeds one candidate line as valid UTF-8: a pod may print any bytes, and what the analyzer keeps
// of them ends up in JSON, label values and proto3 strings, whose writers all reject (or throw
// on) anything else. Valid lines, nearly all of them, are fed without a copy.
// The analyzer cuts names at byte counts (64, 32, ...), which can split a character of valid
// input: the record leaving for the board, the scrape and the checkpoint is made valid once here.
void MakeValid(ContainerVerdict& v, std::vector<common::Finding>& findings) {
  // Names from the file system: kubelet's are valid, a glob's file name need not be.
  for (std::string* s : {&v.source.namespace_name, &v.source.pod, &v.source.container}) {
    common::MakeValidUtf8(s);
  }
  nccl::ForEachField(v.nccl, [](const char* /*name*/, auto& field) {
    using T = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<T, std::string>) {
      common::MakeValidUtf8(&field);
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      for (std::string& s : field) common::MakeValidUtf8(&s);
    }
  });
  // The stack crosses gRPC (proto strings must be UTF-8) and the checkpoint as it is.
  for (std::string* s : {&v.stack.nccl_version, &v.stack.net_plugin, &v.stack.net_plugin_version,
                         &v.stack.ofi_provider, &v.stack.gdr}) {
    common::MakeValidUtf8(s);
  }
  for (auto& [name, value] : v.stack.settings) {
    common::MakeValidUtf8(&name);
    common::MakeValidUtf8(&value);
  }
  for (common::Finding& f : findings) {
    for (std::string* s : {&f.subject, &f.message, &f.evidence.source, &f.evidence.text,
                           &f.namespace_name, &f.pod}) {
      common::MakeValidUtf8(s);
    }
  }
}

}  // namespace

PodAnalysis::PodAnalysis(const PodAnalysisOptions& options, const common::Clock& clock,
                         common::FindingsBoard* board)
    : options_(options), clock_(clock), board_(board) {}

PodAnalysis::Container& PodAnalysis::Get(const LogSource& source) {
  // Lines arrive in runs from one file: the last file's path finds its container without
  // building a key per line. By value, not by the LogSource's address: the tailer builds
  // another pod's LogSource where a freed one was (a stack object per file rotated while the
  // agent was down, a reused allocation), and an address cache then credited that pod's lines
  // to the previous one.
  if (last_ != nullptr && source.path.native() == last_path_) return *last_;
  const std::string key = source.Key();
  auto it = containers_.find(key);
  if (it == containers_.end()) {
    if (containers_.size() >= options_.max_containers) {
      auto oldest = containers_.begin();
      for (auto i = containers_.begin(); i != containers_.end(); ++i) {
        if (i->second.last_write < oldest->second.last_write) oldest = i;
      }
      comms_dropped_retired_ += oldest->second.comms_dropped_before + oldest->second.comms_dropped;
      containers_.erase(oldest);
      last_ = nullptr;
      ++evicted_;
    }
    it = containers_.emplace(key, Container{}).first;
    it->second.source = source;
  }
  Container& c = it->second;
  if (c.analyzer == nullptr || c.source.RunId() != source.RunId()) StartRun(c, source);
  if (c.source_name != source.path.native()) {
    // A pod volume's files share one analysis, each file its own analyzer source.
    c.source_name = source.path.string();
    if (c.files.size() < kMaxFilesNamed) c.files.insert(c.source_name);
  }
  // The file's envelope is known: only docker json-file logs hold records starting with '{';
  // elsewhere such lines (Trainer's metric dicts) are text.
  c.analyzer->DeclareSource(c.source_name, source.format == Format::kDockerJson);
  last_path_ = source.path.native();
  last_ = &c;
  return c;
}

void PodAnalysis::StartRun(Container& c, const LogSource& source) const {
  // A new run of the container (new restart file, new Ray session): its verdict starts afresh.
  if (c.analyzer != nullptr) {
    c.nccl_lines_before += c.analyzer->counters().nccl_lines;
    c.malformed_before += c.analyzer->counters().malformed_lines;
    c.comms_dropped_before += c.comms_dropped;
    c.comms_dropped = 0;
    c.has_restored = false;
    c.files.clear();
  } else if (c.has_restored && c.source.RunId() != source.RunId()) {
    c.has_restored = false;
    c.files.clear();
  }
  c.source = source;
  nccl::AnalyzerOptions o = options_.analyzer;
  o.envelope = source.format == Format::kCri          ? nccl::Envelope::kCri
               : source.format == Format::kDockerJson ? nccl::Envelope::kDockerJson
                                                      : nccl::Envelope::kAuto;
  o.group_by_source = true;
  c.analyzer = std::make_unique<nccl::Analyzer>(o);
  c.source_name.clear();
  c.needs_eval = true;
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
  Feed(c, line_no, line);
}

void PodAnalysis::OnLines(const LogSource& source, uint64_t first_line_no, uint64_t count,
                          std::string_view block) {
  Container& c = Get(source);
  c.lines += count;
  MarkWritten(c);
  Feed(c, first_line_no, block);
}

void PodAnalysis::Feed(Container& c, uint64_t first_line_no, std::string_view lines) {
  // The analyzer's one feed rule, as `efawatch analyze` uses it: one vector scan of the block
  // hands it the lines it reacts to; every other line is only counted.
  const uint64_t before = c.analyzer->counters().slow_path_lines;
  c.analyzer->FeedLines(c.source_name, first_line_no, lines);
  if (c.analyzer->counters().slow_path_lines != before) c.needs_eval = true;
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
  v.files = std::max<uint64_t>(c.files.size(), c.restored.files);
  bool own_evidence = false;
  if (c.analyzer != nullptr) {
    const nccl::Report r = c.analyzer->Snapshot();
    v.nccl_lines += c.analyzer->counters().nccl_lines;
    v.malformed_lines += c.analyzer->counters().malformed_lines;
    v.nccl = r.summary.verdict;
    v.stack = nccl::StackOf(r);
    for (const auto& p : r.processes) own_evidence = own_evidence || !p.communicators.empty();
    c.comm_candidates =
        nccl::CommunicatorsOf(r, c.analyzer->counters().evicted_comms, &c.comms_seen);
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
  // The lines before an agent restart are not read again: what the run printed once (the
  // version banner, the provider, a missing plugin) comes from the verdict saved then wherever
  // this run's lines since do not say it; and until they show communicators of their own, the
  // saved findings and communicators stand too.
  if (c.has_restored) nccl::FillFromEarlier(v.nccl, c.restored.nccl);
  if (c.has_restored) nccl::FillFromEarlier(v.stack, c.restored.stack);
  if (c.has_restored && !own_evidence) {
    findings->insert(findings->end(), c.restored_findings.begin(), c.restored_findings.end());
    c.comm_candidates = c.restored.communicators;
    c.comms_seen = c.comm_candidates.size();
  }
  // Every finding of the container names its pod (restored ones from before this field was
  // saved too): alerts page the job whose log showed it, not its neighbours on the node.
  for (common::Finding& f : *findings) {
    f.namespace_name = c.source.HasPod() ? c.source.namespace_name : "";
    f.pod = c.source.HasPod() ? c.source.pod : "";
  }
  MakeValid(v, *findings);
  for (CommunicatorSeries& s : c.comm_candidates) {
    for (std::string* f : {&s.id, &s.transport, &s.provider}) common::MakeValidUtf8(f);
  }
  if (c.comm_candidates.size() > options_.max_communicators_per_pod) {
    c.comm_candidates.resize(options_.max_communicators_per_pod);
  }
  v.communicators = c.verdict.communicators;  // ApportionCommunicators decides
  return v;
}

void PodAnalysis::ApportionCommunicators(const std::string& pod_prefix) {
  size_t budget = options_.max_communicators_per_pod;
  auto apportion = [&](Container& c) {
    const size_t k = std::min(budget, c.comm_candidates.size());
    budget -= k;
    std::vector<CommunicatorSeries> mine(c.comm_candidates.begin(),
                                         c.comm_candidates.begin() + static_cast<ptrdiff_t>(k));
    std::sort(mine.begin(), mine.end(),
              [](const CommunicatorSeries& a, const CommunicatorSeries& b) { return a.id < b.id; });
    c.verdict.communicators = std::move(mine);
    if (c.comms_seen > k) c.comms_dropped = std::max(c.comms_dropped, c.comms_seen - k);
  };
  if (!pod_prefix.ends_with('/')) {  // a log outside the CRI tree: its own pod
    if (auto it = containers_.find(pod_prefix); it != containers_.end()) apportion(it->second);
    return;
  }
  for (auto it = containers_.lower_bound(pod_prefix);
       it != containers_.end() && it->first.starts_with(pod_prefix); ++it) {
    apportion(it->second);
  }
}

std::optional<std::chrono::steady_clock::time_point> PodAnalysis::NextDue() const {
  std::optional<std::chrono::steady_clock::time_point> due;
  for (const auto& [key, c] : containers_) {  // tailer thread only, as OnPassComplete
    if (c.gone && (!due || c.gone_at + options_.grace_period < *due)) {
      due = c.gone_at + options_.grace_period;
    }
  }
  return due;
}

void PodAnalysis::OnPassComplete() {
  const auto now = clock_.Now();
  last_ = nullptr;  // the tailer may free or reuse its LogSource objects between passes
  // Only what changed is evaluated and published: with hundreds of busy containers a pass
  // comes several times a second, and rebuilding every verdict and finding each time cost more
  // than reading the lines (bench/pod_logs.sh).
  std::vector<std::string> removed;
  Changed changed;
  std::vector<std::string> pods;  // pods whose communicator series may have changed
  auto pod_prefix = [](const LogSource& s) { return s.HasPod() ? s.PodKey() + "/" : s.Key(); };
  bool findings_changed = false;
  for (auto it = containers_.begin(); it != containers_.end();) {
    Container& c = it->second;
    if (c.gone && now - c.gone_at >= options_.grace_period) {
      removed.push_back(it->first);
      findings_changed = true;
      comms_dropped_retired_ += c.comms_dropped_before + c.comms_dropped;
      if (!c.verdict.communicators.empty()) pods.push_back(pod_prefix(c.source));
      it = containers_.erase(it);
      continue;
    }
    if (c.dirty) {
      c.last_write = now;
      if (c.needs_eval) {
        // Reports are cheap (they grow with processes, not lines) but not free.
        c.findings.clear();
        const size_t candidates = c.comm_candidates.size();
        c.verdict = Evaluate(c, &c.findings);
        c.needs_eval = false;
        findings_changed = true;
        if (candidates != 0 || !c.comm_candidates.empty()) pods.push_back(pod_prefix(c.source));
      } else {
        // Only lines the analyzer never saw came: nothing but the line count moved.
        c.verdict.lines = c.lines;
      }
      c.dirty = false;
      changed.emplace_back(&it->first, &c.verdict);
    }
    ++it;
  }
  ReapportionPods(std::move(pods), &changed);
  Publish(removed, changed, findings_changed);
}

// A pod's containers share its communicator cap: re-share it where one of them changed, and
// publish every container of those pods again.
void PodAnalysis::ReapportionPods(std::vector<std::string> pods, Changed* changed) {
  std::sort(pods.begin(), pods.end());
  pods.erase(std::unique(pods.begin(), pods.end()), pods.end());
  for (const std::string& pod : pods) {
    ApportionCommunicators(pod);
    // A container may be listed twice: the second copy writes the same verdict.
    auto publish = [&](auto it) { changed->emplace_back(&it->first, &it->second.verdict); };
    if (!pod.ends_with('/')) {
      if (auto it = containers_.find(pod); it != containers_.end()) publish(it);
      continue;
    }
    for (auto it = containers_.lower_bound(pod);
         it != containers_.end() && it->first.starts_with(pod); ++it) {
      publish(it);
    }
  }
}

// The agent's log says each container's verdict when its headline changes (a few lines per job,
// not per pass).
void PodAnalysis::LogHeadlines(const Changed& changed) {
  for (const auto& [key, verdict] : changed) {
    if (verdict->nccl_lines == 0) continue;
    auto it = containers_.find(*key);
    if (it == containers_.end()) continue;
    std::string headline = nccl::VerdictHeadline(verdict->nccl);
    if (headline == it->second.headline) continue;
    spdlog::info("NCCL {}: {}", *key, headline);
    it->second.headline = std::move(headline);
  }
}

// Hands what this pass changed to the scrape side (under mu_), then the findings to the board.
void PodAnalysis::Publish(const std::vector<std::string>& removed, const Changed& changed,
                          bool findings_changed) {
  uint64_t comms_dropped = comms_dropped_retired_;
  for (const auto& [key, c] : containers_)
    comms_dropped += c.comms_dropped_before + c.comms_dropped;
  LogHeadlines(changed);
  if (removed.empty() && changed.empty() && evicted_published_ == evicted_ &&
      comms_dropped_published_ == comms_dropped) {
    return;
  }
  std::shared_ptr<std::vector<ContainerVerdict>> all;
  {
    std::lock_guard lock(mu_);
    comms_dropped_published_ = comms_dropped;
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
    if (options_.on_verdicts) {
      all = std::make_shared<std::vector<ContainerVerdict>>();
      all->reserve(verdicts_.size());
      for (const auto& [key, v] : verdicts_) all->push_back(v);
    }
  }
  if (all) options_.on_verdicts(std::move(all));
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
    SavedContainer saved{.key = key, .verdict = v->second, .findings = c.findings};
    saved.verdict.source = c.source;
    j.push_back(ContainerToJson(saved));
  }
  // Everything in it was made valid UTF-8 (Evaluate); paths are bytes, and a last resort must
  // not throw on the tailer's thread.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// True when the log a restored container was read from is gone: the pod was deleted while the
// agent was down, so the tailer will never report it (it never follows it again).
bool RestoredSourceGone(const LogSource& s) {
  if (s.path.empty()) return true;
  std::error_code ec;
  return !std::filesystem::exists(s.format == Format::kCri ? s.path.parent_path() : s.path, ec);
}

}  // namespace

bool PodAnalysis::CheckpointValid(std::string_view state) const {
  if (state.empty()) return true;  // written by a tailer without a sink state
  const auto j = nlohmann::json::parse(state, nullptr, false);
  return !j.is_discarded() && ContainersHaveShape(j);
}

void PodAnalysis::Restore(std::string_view state) {
  const auto j = nlohmann::json::parse(state, nullptr, false);
  if (j.is_discarded() || !ContainersHaveShape(j)) return;  // CheckpointValid() said so first
  for (const auto& e : j) {
    SavedContainer saved = ContainerFromJson(e);
    Container c;
    c.source = saved.verdict.source;
    c.lines = saved.verdict.lines;
    c.nccl_lines_before = saved.verdict.nccl_lines;
    c.malformed_before = saved.verdict.malformed_lines;
    c.restored = std::move(saved.verdict);
    c.restored_findings = std::move(saved.findings);
    c.has_restored = true;
    c.last_write = clock_.Now();
    if (RestoredSourceGone(c.source)) {
      // Its pod went while the agent was down: it expires after the grace period like any
      // other gone container, instead of showing its findings forever.
      c.gone = true;
      c.gone_at = clock_.Now();
    }
    containers_[saved.key] = std::move(c);
  }
}

std::vector<ContainerVerdict> PodAnalysis::Verdicts() const {
  std::lock_guard lock(mu_);
  std::vector<ContainerVerdict> out;
  for (const auto& [key, v] : verdicts_) out.push_back(v);
  return out;
}

void PodAnalysis::ForEachVerdict(const std::function<void(const ContainerVerdict&)>& f) const {
  std::lock_guard lock(mu_);
  for (const auto& [key, v] : verdicts_) f(v);
}

PodAnalysis::Drops PodAnalysis::Dropped() const {
  std::lock_guard lock(mu_);
  return {.containers = evicted_published_, .communicators = comms_dropped_published_};
}

}  // namespace efawatch::logs
