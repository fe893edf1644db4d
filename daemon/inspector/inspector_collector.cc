// SPDX-License-Identifier: Apache-2.0
#include "daemon/inspector/inspector_collector.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "daemon/logs/beneath.h"
#include "lib/common/metric_table.h"
#include "spdlog/spdlog.h"

namespace efawatch::inspector {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPromPattern = "nccl_inspector_metrics_*.prom";
// A first line longer than this is not looked at: verbose records are a few KiB.
constexpr size_t kFirstLineMax = 64 << 10;
constexpr size_t kMaxAccepted = 1 << 16;  // remembered files; past it the memory starts again

std::string KeyOf(std::string_view ns, std::string_view pod) {
  return std::string(ns) + "/" + std::string(pod);
}

// Reads up to `max` bytes of a file opened beneath `root` (or directly when root is empty: the
// operator's own --inspector-dir). Empty with ok=false when it cannot be opened.
std::string ReadHead(const fs::path& root, const fs::path& path, size_t max, bool* ok) {
  const int fd = root.empty() ? ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                              : logs::OpenBeneath(root, path, O_CLOEXEC);
  *ok = fd >= 0;
  if (fd < 0) return {};
  std::string buf(max, '\0');
  size_t got = 0;
  while (got < max) {
    const ssize_t n = ::pread(fd, buf.data() + got, max - got, static_cast<off_t>(got));
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  buf.resize(got);
  return buf;
}

}  // namespace

logs::TailerOptions InspectorTailerOptions(const InspectorCollectorOptions& options,
                                           InspectorCollector* collector) {
  logs::TailerOptions o;
  o.pod_log_root = options.pod_log_root;
  o.container_logs = false;
  o.volumes.volume_root = options.volume_root;
  o.volumes.debug_file_patterns = {"*.log", "*.jsonl"};
  o.volumes.ray_sessions = false;
  o.volumes.accept = [collector](const fs::path& volume, const fs::path& file) {
    return collector->Accept(volume, file);
  };
  if (!options.inspector_dir.empty()) {
    for (const char* p : {"*.log", "*.jsonl", "*/*.log", "*/*.jsonl"}) {
      o.globs.push_back((options.inspector_dir / p).string());
    }
  }
  // A job on 8 GPUs records a few thousand operations a second (~1 MiB/s); 8 MiB/s leaves room
  // and bounds what a hostile file costs (a record per byte is a line per byte).
  o.read_budget_bytes_per_second = 8ull << 20;
  o.history_bytes = 0;
  o.first_read_max_bytes = 4ull << 20;
  o.head_bytes = 64ull << 10;  // the first record, which names the communicator
  o.tail_bytes = 4ull << 20;
  o.max_backlog_bytes = 64ull << 20;
  o.max_files = 1024;
  return o;
}

InspectorCollector::InspectorCollector(InspectorCollectorOptions options,
                                       const common::Clock& clock)
    : options_(std::move(options)), clock_(clock) {}

int64_t InspectorCollector::NowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.Now().time_since_epoch())
      .count();
}

bool InspectorCollector::Accept(const fs::path& volume, const fs::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const std::string key = file.string();
  {
    std::lock_guard lock(mu_);
    if (auto it = accepted_.find(key); it != accepted_.end() && it->second.first == st.st_ino) {
      return it->second.second;
    }
  }
  bool ok = false;
  const std::string head = ReadHead(volume, file, kFirstLineMax, &ok);
  const size_t nl = head.find('\n');
  if (!ok || nl == std::string::npos) {
    // No whole first line yet (a file just created): looked at again on the next walk, unless
    // its first line is longer than any record.
    if (ok && head.size() < kFirstLineMax) return false;
    std::lock_guard lock(mu_);
    accepted_[key] = {st.st_ino, false};
    return false;
  }
  const bool yes = LooksLikeInspectorJson(std::string_view(head).substr(0, nl));
  std::lock_guard lock(mu_);
  if (accepted_.size() >= kMaxAccepted) accepted_.clear();
  accepted_[key] = {st.st_ino, yes};
  return yes;
}

void InspectorCollector::OnLine(const logs::LogSource& source, uint64_t /*line_no*/,
                                std::string_view line) {
  std::lock_guard lock(mu_);
  Handle(source, line);
}

void InspectorCollector::OnLines(const logs::LogSource& source, uint64_t /*first_line_no*/,
                                 uint64_t count, std::string_view block) {
  std::lock_guard lock(mu_);
  for (uint64_t i = 0; i < count && !block.empty(); ++i) {
    const size_t nl = block.find('\n');
    Handle(source, block.substr(0, nl));
    block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
  }
}

void InspectorCollector::Handle(const logs::LogSource& source, std::string_view line) {
  Source& s = sources_[source.path.string()];
  if (!s.decided) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
    // The first record decides (files in --inspector-dir are not looked at before).
    s.decided = true;
    s.recognised = LooksLikeInspectorJson(line);
  }
  if (!s.recognised) return;
  InspectorOp op;
  switch (ParseJsonLine(line, &op)) {
    case LineKind::kBlank:
      return;
    case LineKind::kMalformed:
      ++malformed_;
      return;
    case LineKind::kOpOtherVersion:
      ++other_version_;
      break;
    case LineKind::kOp:
      ++ops_;
      break;
  }
  if (s.pod_key.empty()) s.pod_key = PodFor(source, op);
  AddOp(s.pod_key, source.path.string(), op);
  if (auto pod = pods_.find(s.pod_key); pod != pods_.end() && op.dump_timestamp_us > 0) {
    NoteProgress(pod->second, op, op.dump_timestamp_us);
  }
}

void InspectorCollector::NoteProgress(Pod& pod, const InspectorOp& op, int64_t unix_us) {
  std::string key = CommKey(op);
  auto it = pod.progress.find(key);
  if (it == pod.progress.end()) {
    if (pod.progress.size() >= options_.max_comms_per_pod) {
      // Full: the communicator silent longest makes room (torn down, most likely).
      auto oldest = pod.progress.begin();
      for (auto p = pod.progress.begin(); p != pod.progress.end(); ++p) {
        if (p->second.unix_us < oldest->second.unix_us) oldest = p;
      }
      if (oldest->second.unix_us > unix_us) return;
      pod.progress.erase(oldest);
    }
    it = pod.progress.emplace(std::move(key), Progress{op.comm_id, op.comm_name, 0}).first;
  }
  it->second.unix_us = std::max(it->second.unix_us, unix_us);
}

std::string InspectorCollector::PodFor(const logs::LogSource& source, const InspectorOp& op) {
  if (source.HasPod()) {
    return PodEntry(source.namespace_name, source.pod);
  }
  const auto now = clock_.Now();
  if (now >= next_names_) {
    next_names_ = now + std::chrono::seconds(30);
    pods_by_name_.clear();
    std::set<std::string> ambiguous;
    for (const auto& [uid, names] : logs::PodNamesByUid(options_.pod_log_root)) {
      if (!pods_by_name_.emplace(names.second, names).second) ambiguous.insert(names.second);
    }
    for (const auto& name : ambiguous) pods_by_name_.erase(name);
  }
  std::string ns, name;
  if (auto it = pods_by_name_.find(op.hostname); it != pods_by_name_.end()) {
    ns = it->second.first;
    name = it->second.second;
  }
  return PodEntry(ns, name);
}

std::string InspectorCollector::PodEntry(const std::string& ns, const std::string& name) {
  std::string key = KeyOf(ns, name);
  auto [it, added] = pods_.try_emplace(key);
  if (added) {
    it->second.namespace_name = ns;
    it->second.pod = name;
    it->second.table = CommTable(CommTable::Limits{.max_comms = options_.max_comms_per_pod});
  }
  return key;
}

void InspectorCollector::AddOp(const std::string& pod_key, const std::string& path,
                               const InspectorOp& op) {
  auto it = pods_.find(pod_key);
  if (it == pods_.end()) return;
  it->second.sources.insert(path);
  if (!it->second.table.Add(op, NowNs())) ++dropped_;
}

void InspectorCollector::Forget(const std::string& path, const std::string& pod_key) {
  auto it = pods_.find(pod_key);
  if (it == pods_.end()) return;
  it->second.sources.erase(path);
  if (it->second.sources.empty()) pods_.erase(it);  // the pod's series go with its files
}

void InspectorCollector::OnSourceGone(const logs::LogSource& source) {
  std::lock_guard lock(mu_);
  const std::string path = source.path.string();
  auto it = sources_.find(path);
  if (it == sources_.end()) return;
  Forget(path, it->second.pod_key);
  sources_.erase(it);
  accepted_.erase(path);
}

void InspectorCollector::OnPassComplete() {
  const auto now = clock_.Now();
  const bool due = now >= next_prom_;
  if (due) {
    next_prom_ = now + options_.prom_interval;
    ReadPromFiles();
  }
  {
    std::lock_guard lock(mu_);
    const int64_t cutoff =
        NowNs() -
        std::chrono::duration_cast<std::chrono::nanoseconds>(options_.stale_after).count();
    for (auto& [key, pod] : pods_) pod.table.DropSeenBefore(cutoff);
  }
  if (due) PublishSummaries();
}

void InspectorCollector::PublishSummaries() {
  if (!options_.on_summaries) return;
  auto now = std::make_shared<const std::vector<CommSummary>>(Summaries());
  // Only a change is published: a busy job's passes come many times a second.
  if (published_ != nullptr && *published_ == *now) return;
  published_ = now;
  options_.on_summaries(std::move(now));
}

InspectorCollector::ReadResult InspectorCollector::ReadSettled(const fs::path& beneath,
                                                               const fs::path& path,
                                                               std::string* text, struct stat* st) {
  // The plugin rewrites the file in place (fopen "w": truncate, then a write and a flush per
  // sample pair), so a read can see it empty or cut. A read counts when the file did not change
  // while it was read, ends with a whole line, and either parses to its end or is what the read
  // before it saw; else it is read again shortly, a bounded number of times.
  std::string previous;
  for (int attempt = 0; attempt < std::max(1, options_.torn_read_tries); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(options_.torn_read_pause);
    struct stat before {};
    if (::lstat(path.c_str(), &before) != 0 || !S_ISREG(before.st_mode)) {
      return ReadResult::kUnreadable;
    }
    if (static_cast<uint64_t>(before.st_size) > options_.max_prom_bytes) {
      *st = before;
      return ReadResult::kTooBig;
    }
    bool ok = false;
    *text = ReadHead(beneath, path, options_.max_prom_bytes, &ok);
    if (!ok) return ReadResult::kUnreadable;
    struct stat after {};
    if (::lstat(path.c_str(), &after) != 0) return ReadResult::kUnreadable;
    const bool stable = before.st_ino == after.st_ino && before.st_size == after.st_size &&
                        before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
                        before.st_mtim.tv_nsec == after.st_mtim.tv_nsec &&
                        text->size() == static_cast<size_t>(after.st_size);
    if (stable && !text->empty() && text->back() == '\n' &&
        (ParsePromText(*text).malformed == 0 || *text == previous)) {
      *st = after;
      return ReadResult::kOk;
    }
    previous = std::move(*text);
  }
  return ReadResult::kTorn;
}

void InspectorCollector::ReadPromFile(const fs::path& beneath, const fs::path& path,
                                      const logs::LogSource* pod, std::set<std::string>& seen) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  const std::string key = path.string();
  seen.insert(key);
  const auto mtime_ns = [](const struct stat& s) {
    return static_cast<int64_t>(s.st_mtim.tv_sec) * 1'000'000'000 +
           static_cast<int64_t>(s.st_mtim.tv_nsec);
  };
  bool first_sight = false;
  {
    std::lock_guard lock(mu_);
    auto it = prom_.find(key);
    if (it != prom_.end() && it->second.ino == st.st_ino &&
        it->second.size == static_cast<uint64_t>(st.st_size) &&
        it->second.mtime_ns == mtime_ns(st)) {
      return;  // unchanged since the last read
    }
    first_sight = it == prom_.end();
  }
  std::string text;
  const ReadResult read = ReadSettled(beneath, path, &text, &st);
  std::lock_guard lock(mu_);
  PromTracked& t = prom_[key];
  if (read == ReadResult::kUnreadable) return;
  if (read == ReadResult::kTorn) {
    ++prom_torn_;  // the stamp stays as it was: read again on the next pass
    return;
  }
  if (t.ino != st.st_ino) {
    t.last_sn.clear();
    t.last_text.clear();
  }
  t.ino = st.st_ino;
  t.size = static_cast<uint64_t>(st.st_size);
  const int64_t previous_mtime = t.mtime_ns;
  t.mtime_ns = mtime_ns(st);
  if (read == ReadResult::kTooBig) {
    ++prom_malformed_;
    return;
  }
  // Count only what this rewrite adds to the one before when it continues it (see last_text):
  // a v5.1 dump takes milliseconds, and dumps are 30 s apart at least.
  std::string_view fresh = text;
  if (!t.last_text.empty() && text.starts_with(t.last_text) &&
      t.mtime_ns - previous_mtime < 15'000'000'000) {
    fresh.remove_prefix(t.last_text.size());
  }
  t.last_text = text.size() <= (64u << 10) ? text : std::string();
  const PromFile file = ParsePromText(fresh);
  prom_malformed_ += file.malformed;
  prom_empty_ += file.empty;
  const int64_t progress_us = t.mtime_ns / 1000;
  const int64_t wall_us =
      std::chrono::duration_cast<std::chrono::microseconds>(clock_.WallNow().time_since_epoch())
          .count();
  // A file first seen already stale holds a hung (or ended) job's last interval: its progress
  // time shows, its values are no current bandwidth.
  const bool stale_at_first_sight =
      first_sight && wall_us - progress_us > std::chrono::duration_cast<std::chrono::microseconds>(
                                                 options_.progress_stale_after)
                                                 .count();
  for (const InspectorOp& op : file.ops) {
    if (t.pod_key.empty()) {
      logs::LogSource src;
      if (pod != nullptr) src = *pod;
      src.path = path;
      t.pod_key = PodFor(src, op);
    }
    if (auto p = pods_.find(t.pod_key); p != pods_.end()) {
      p->second.sources.insert(key);
      NoteProgress(p->second, op, progress_us);
    }
    if (stale_at_first_sight) {
      ++prom_stale_;
      continue;
    }
    // A 2.29-era dump holds the latest op of each (communicator, collective, size): counted
    // once, by its sequence number. A v5.1 sample is new with every rewrite.
    const std::string id = op.comm_id + "/" + op.op + "/" +
                           std::string(SizeBucketLabel(SizeBucket(op.msg_size_bytes)));
    if (op.sn >= 0) {
      auto [last, added] = t.last_sn.try_emplace(id, op.sn);
      if (!added) {
        if (last->second == op.sn) continue;
        last->second = op.sn;
      }
      if (t.last_sn.size() > 4096) t.last_sn.clear();
    }
    ++prom_ops_;
    AddOp(t.pod_key, key, op);
  }
}

void InspectorCollector::ReadPromFiles() {
  std::set<std::string> seen;
  if (!options_.volume_root.empty()) {
    logs::PodVolumeOptions o;
    o.volume_root = options_.volume_root;
    o.pod_log_root = options_.pod_log_root;
    o.debug_file_patterns = {std::string(kPromPattern)};
    o.ray_sessions = false;
    for (const logs::LogSource& s : logs::ScanPodVolumes(o).files) {
      ReadPromFile(s.beneath, s.path, &s, seen);
    }
  }
  if (!options_.inspector_dir.empty()) {
    for (const char* p : {"", "*/"}) {
      const std::string pattern =
          (options_.inspector_dir / (std::string(p) + std::string(kPromPattern))).string();
      glob_t g{};
      if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) ReadPromFile({}, g.gl_pathv[i], nullptr, seen);
      }
      ::globfree(&g);
    }
  }
  std::lock_guard lock(mu_);
  for (auto it = prom_.begin(); it != prom_.end();) {
    if (seen.contains(it->first)) {
      ++it;
      continue;
    }
    Forget(it->first, it->second.pod_key);
    it = prom_.erase(it);
  }
}

std::vector<CommSummary> InspectorCollector::Summaries() {
  const int64_t wall_us =
      std::chrono::duration_cast<std::chrono::microseconds>(clock_.WallNow().time_since_epoch())
          .count();
  const int64_t stale_us =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.progress_stale_after).count();
  std::lock_guard lock(mu_);
  std::vector<CommSummary> out;
  for (const auto& pod_entry : pods_) {
    const Pod& pod = pod_entry.second;  // a plain reference: the lambda below captures it
    // Progress and counts are kept apart (a communicator can have one without the other: a
    // stale first read, a cap); one summary per communicator key.
    std::map<std::string, CommSummary> comms;
    const auto entry = [&](const std::string& comm_key, const std::string& id,
                           const std::string& name) -> CommSummary& {
      CommSummary& c = comms[comm_key];
      c.namespace_name = pod.namespace_name;
      c.pod = pod.pod;
      c.comm_id = id;
      c.comm_name = name;
      return c;
    };
    for (const auto& [comm_key, p] : pod.progress) {
      CommSummary& c = entry(comm_key, p.comm_id, p.comm_name);
      c.last_progress_unix_us = p.unix_us;
      c.stale = wall_us - p.unix_us > stale_us;
    }
    for (const auto& [comm_key, comm] : pod.table.comms()) {
      CommSummary& c = entry(comm_key, comm.comm_id, comm.comm_name);
      for (const auto& [op_key, stats] : comm.ops) {
        c.ops.push_back({.collective = op_key.op,
                         .size_bucket = std::string(SizeBucketLabel(op_key.size_bucket)),
                         .count = stats.count,
                         .exec_seconds = stats.exec_seconds_sum});
      }
    }
    for (auto& [comm_key, c] : comms) out.push_back(std::move(c));
  }
  return out;
}

absl::Status InspectorCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                         common::MetricSink& sink) {
  using metrics::M;
  if (options_.expected_bytes_per_second > 0) {
    sink.Add(M::kFabricExpectedBandwidthBytesPerSecond, {{"instance_type", options_.instance_type}},
             options_.expected_bytes_per_second);
  }
  std::lock_guard lock(mu_);
  uint64_t jsonl = 0;
  for (const auto& [path, s] : sources_) jsonl += s.recognised ? 1 : 0;
  sink.Add(M::kNcclInspectorFiles, {{"format", "jsonl"}}, static_cast<double>(jsonl));
  sink.Add(M::kNcclInspectorFiles, {{"format", "prom"}}, static_cast<double>(prom_.size()));
  for (const auto& [result, n] : {std::pair<const char*, uint64_t>{"op", ops_},
                                  {"other_version", other_version_},
                                  {"malformed", malformed_},
                                  {"dropped", dropped_},
                                  {"prom_op", prom_ops_},
                                  {"prom_malformed", prom_malformed_},
                                  {"prom_empty", prom_empty_},
                                  {"prom_torn", prom_torn_},
                                  {"prom_stale", prom_stale_}}) {
    sink.Add(M::kNcclInspectorRecordsTotal, {{"result", result}}, static_cast<double>(n));
  }
  common::HistogramSample h;
  h.bounds.assign(kBusbwBounds.begin(), kBusbwBounds.end());
  const double wall_s = std::chrono::duration<double>(clock_.WallNow().time_since_epoch()).count();
  const double stale_s = std::chrono::duration<double>(options_.progress_stale_after).count();
  for (const auto& [key, pod] : pods_) {
    for (const auto& [comm_key, p] : pod.progress) {
      const common::Labels labels = {{"namespace", pod.namespace_name},
                                     {"pod", pod.pod},
                                     {"comm_id", p.comm_id},
                                     {"comm_name", p.comm_name}};
      const double at_s = static_cast<double>(p.unix_us) * 1e-6;
      sink.Add(M::kNcclInspectorProgressTimestampSeconds, labels, at_s);
      sink.Add(M::kNcclInspectorStale, labels, wall_s - at_s > stale_s ? 1 : 0);
    }
    for (const auto& [comm_key, comm] : pod.table.comms()) {
      for (const auto& [op_key, stats] : comm.ops) {
        const common::Labels labels = {
            {"namespace", pod.namespace_name},
            {"pod", pod.pod},
            {"comm_id", comm.comm_id},
            {"comm_name", comm.comm_name},
            {"collective", op_key.op},
            {"size_bucket", std::string(SizeBucketLabel(op_key.size_bucket))}};
        h.cumulative.assign(stats.buckets.size(), 0);
        uint64_t running = 0;
        for (size_t i = 0; i < stats.buckets.size(); ++i) {
          running += stats.buckets[i];
          h.cumulative[i] = running;
        }
        h.sum = stats.busbw_sum_bytes_per_second;
        h.count = stats.count;
        sink.AddHistogram(M::kNcclBusbwBytesPerSecond, labels, h);
        sink.Add(M::kNcclExecSecondsTotal, labels, stats.exec_seconds_sum);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace efawatch::inspector
