// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/analyzer.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "lib/common/utf8.h"
#include "lib/nccl/block_scanner.h"
#include "lib/nccl/comm_line.h"
#include "lib/nccl/handlers.h"
#include "lib/nccl/record_scanner.h"
#include "lib/nccl/state.h"
#include "lib/nccl/text_util.h"
#include "lib/nccl/unwrap.h"

namespace efawatch::nccl {

using internal::After;
using internal::Contains;
using internal::FindIn;
using internal::IsDigitChar;
using internal::ParseInt;
using internal::ProcState;
using internal::SourceState;
using internal::StartsWith;
using internal::State;

namespace {

using internal::AddSetting;
using internal::AddUniqueString;
using internal::Count;
using internal::Ctx;
using internal::HandleInfo;
using internal::HandleWarn;
using internal::SetEv;
using internal::SetRef;

ProcState* GetProc(State* st, const Record& r, uint32_t source) {
  std::string_view key = r.proc_key;
  if (key.empty()) {
    // Records without a prefix share one process per source. Built in a reused buffer: a local
    // string here was constructed (and destroyed) for every record.
    st->unattributed_key.assign("?").append(std::to_string(source));
    key = st->unattributed_key;
  }
  if (st->last_proc != nullptr && internal::Eq(st->last_key, key)) return st->last_proc;
  // Interleaved ranks defeat the last-process cache; a small table indexed by pid avoids most
  // hash lookups.
  internal::PidSlot& slot = st->pid_cache[r.pid % st->pid_cache.size()];
  if (!r.proc_key.empty() && slot.proc != nullptr && slot.proc->pid == r.pid &&
      internal::Eq(slot.proc->host, r.host)) {
    return slot.proc;
  }
  auto it = st->procs.find(absl::string_view(key.data(), key.size()));
  if (it == st->procs.end()) {
    if (st->procs.size() >= st->options.max_processes && !st->proc_order.empty()) {
      st->procs.erase(st->proc_order.front());
      st->proc_order.pop_front();
      ++st->counters.evicted_processes;
      st->last_proc = nullptr;
      st->pid_cache.fill({});
    }
    auto p = std::make_unique<ProcState>();
    p->host.assign(r.host);
    p->pid = r.pid;
    p->source = source;
    it = st->procs.emplace(std::string(key), std::move(p)).first;
    st->proc_order.emplace_back(key);
  }
  st->last_key.assign(key);
  st->last_proc = it->second.get();
  if (!r.proc_key.empty()) slot.proc = st->last_proc;
  return st->last_proc;
}

// Assignments such as "export NCCL_SOCKET_IFNAME=lo", "mpirun -x NCCL_SOCKET_IFNAME=lo",
// "NCCL_NET='AWS Libfabric' \", "FI_PROVIDER=efa" in launcher output and env dumps.
void ScanAssignments(SourceState* ss, std::string_view line, std::string_view prefix,
                     const Ctx& c) {
  size_t at = 0;
  for (int guard = 0; guard < 16; ++guard) {
    at = FindIn(line, prefix, at);
    if (at == std::string_view::npos) return;
    if (at > 0) {
      char before = line[at - 1];
      if ((before >= 'A' && before <= 'Z') || before == '_' || IsDigitChar(before)) {
        at += prefix.size();
        continue;
      }
    }
    size_t e = at + prefix.size();
    while (e < line.size() &&
           ((line[e] >= 'A' && line[e] <= 'Z') || IsDigitChar(line[e]) || line[e] == '_')) {
      ++e;
    }
    if (e >= line.size() || line[e] != '=') {
      at = e;
      continue;
    }
    std::string_view name = line.substr(at, e - at);
    size_t vb = e + 1;
    size_t ve = vb;
    if (vb < line.size() && (line[vb] == '\'' || line[vb] == '"')) {
      char q = line[vb];
      ++vb;
      ve = line.find(q, vb);
      if (ve == std::string_view::npos) ve = line.size();
    } else {
      while (ve < line.size() && line[ve] != ' ' && line[ve] != '\t' && line[ve] != ';' &&
             line[ve] != '`') {
        ++ve;
      }
    }
    std::string_view value = line.substr(vb, ve - vb);
    AddSetting(&ss->launcher_env, 64, name, value);
    if (name == "NCCL_SOCKET_IFNAME" && internal::IfnameSelectsLoopback(value)) {
      SetEv(&ss->ev_launcher_ifname, c);
    } else if ((name == "NCCL_IB_DISABLE" && value == "1") ||
               (name == "NCCL_NET" && Contains(value, "Socket"))) {
      SetEv(&ss->ev_launcher_ib_disable, c);
    }
    at = ve;
  }
}

// nccl-tests prints the placement of every rank: "#  Rank  0 Group  0 Pid  27255 on kolyoz1
// device  0 [0x42] NVIDIA H100 80GB HBM3" (older: no Group).
void HandleTestsHeader(SourceState* ss, std::string_view line, const Ctx& c) {
  size_t pos = 1;
  std::string_view prev;
  int rank = -1;
  int pid = -1;
  std::string_view host;
  bool device = false;
  for (int guard = 0; guard < 16; ++guard) {
    std::string_view tok = internal::NextToken(line, &pos);
    if (tok.empty()) break;
    if (prev == "Rank") rank = ParseInt(tok);
    if (prev == "Pid") pid = ParseInt(tok);
    if (prev == "on") host = tok;
    if (tok == "device" && !host.empty()) device = true;
    prev = tok;
  }
  if (rank < 0 || host.empty() || !device || ss->header.size() >= 4096) return;
  for (const auto& h : ss->header) {
    if (h.rank == rank) return;
  }
  ss->header.push_back(
      {rank, static_cast<uint32_t>(std::max(pid, 0)), std::string(host.substr(0, 255))});
  SetEv(&ss->ev_header, c);
}

void HandleOther(State* st, SourceState* ss, std::string_view line, const Ctx& c) {
  std::string_view version, cuda;
  if (FindVersionBanner(line, &version, &cuda)) {
    ++st->counters.nccl_lines;
    if (ss->banner_version.empty()) {
      ss->banner_version.assign(version.substr(0, 32));
      ss->banner_cuda.assign(cuda.substr(0, 32));
    } else if (ss->banner_version != version) {
      ss->banner_conflict = true;
    }
    return;
  }
  if (line[0] == '#') {
    HandleTestsHeader(ss, line, c);
    return;
  }
  // libfabric's own log lines ("libfabric:<pid>:<time>:<prov>:...") begin the line unless a
  // wrapper CleanLine does not know (a compose service name, a syslog header) comes first.
  std::string_view fabric_line;
  if (After(line, "libfabric:", &fabric_line) && !fabric_line.empty() &&
      IsDigitChar(fabric_line[0])) {
    uint32_t pid = static_cast<uint32_t>(std::max(0, ParseInt(fabric_line)));
    if (Contains(line, "FI_HMEM capability requires RDMA")) {
      if (ss->libfabric_warn_pids.size() < 256) ss->libfabric_warn_pids.emplace_back(pid, "hmem");
      SetEv(&ss->ev_hmem, c);
    } else if (Contains(line, "provider efa output empty list")) {
      SetEv(&ss->ev_efa_empty, c);
    }
    return;
  }
  if (Contains(line, "NCCL")) {
    if (Contains(line, "Watchdog caught collective operation timeout") ||
        Contains(line, "Timeout at NCCL work") || Contains(line, "detected by watchdog")) {
      Count(&ss->watchdog, c);
    } else if (Contains(line, "NCCL error") || Contains(line, "Test NCCL failure") ||
               Contains(line, "NCCL communicator was aborted") ||
               Contains(line, "ncclSystemError") || Contains(line, "ncclRemoteError")) {
      Count(&ss->framework_errors, c);
    }
    if (Contains(line, "NCCL_")) ScanAssignments(ss, line, "NCCL_", c);
  }
  if (Contains(line, "FI_")) ScanAssignments(ss, line, "FI_", c);
}

// `may_hold_ansi` false: the caller knows the text holds no ESC byte (FeedLines checked the
// whole block at once).
// Where a launcher says a record's process runs: Ray's "(... pid=N, ip=A)" names the node by
// its address, and prints no "ip=" for workers on the driver's node; pdsh and similar put
// "<host>: " before the record. Empty when the line shows neither.
std::string LauncherLocation(std::string_view ray_prefix, std::string_view before_record) {
  if (ray_prefix.empty()) ray_prefix = RayPrefixBefore(before_record);
  if (!ray_prefix.empty()) {
    std::string_view v;
    if (!After(ray_prefix, "ip=", &v)) return "ray-driver-node";
    size_t e = 0;
    while (e < v.size() && v[e] != ')' && v[e] != ',' && v[e] != ' ' && e < 64) ++e;
    return "ip=" + std::string(v.substr(0, e));
  }
  // "rdma-gpu-train-worker-0: rdma-gpu-train-worker-0:19487:21056 [3] NCCL INFO ..."
  if (before_record.size() < 4 || before_record.size() > 130 || before_record[0] == '[' ||
      !StartsWith(before_record.substr(before_record.size() - 2), ": ")) {
    return "";
  }
  std::string_view host = before_record.substr(0, before_record.size() - 2);
  for (char ch : host) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || IsDigitChar(ch) ||
              ch == '-' || ch == '.' || ch == '_';
    if (!ok) return "";
  }
  return "host=" + std::string(host.substr(0, host.find('.')));
}

// A cleaned, non-empty line that is no Ray marker: its records, or what else it says.
void ProcessClean(State* st, uint32_t source, uint64_t line_no, std::string_view line,
                  std::string_view ray_prefix) {
  Ctx c{st, source, line_no, line};
  size_t n = FindRecords(line, &st->records);
  if (n == 0) {
    // Binary junk is counted and skipped. Checked only here: a NUL inside an NCCL record's
    // text is harmless to the scanner, and the common path saves a pass over every line.
    if (memchr(line.data(), '\0', line.size()) != nullptr) {
      ++st->counters.malformed_lines;
      return;
    }
    HandleOther(st, st->sources[source].get(), line, c);
    return;
  }
  ++st->counters.nccl_lines;
  for (const Record& r : st->records) {
    ++st->counters.records;
    if (r.legacy) ++st->counters.legacy_records;
    ProcState* p = GetProc(st, r, source);
    if (r.dev >= 0 && r.dev < 64) p->devices |= uint64_t{1} << r.dev;
    if (!p->ev_first.set()) SetRef(&p->ev_first, c);
    // Launcher prefixes are rare: checked only when the record does not start the line.
    if ((!ray_prefix.empty() || r.full.data() != line.data()) && !r.proc_key.empty() &&
        &r == &st->records.front()) {
      std::string where = LauncherLocation(
          ray_prefix, line.substr(0, static_cast<size_t>(r.full.data() - line.data())));
      if (!where.empty()) {
        AddUniqueString(&p->launcher_hosts, where, 8);
        SetEv(&p->ev_launcher, c);
      }
    }
    if (r.level == Level::kWarn) {
      if (!r.legacy) ++st->counters.warn_records;
      HandleWarn(p, r, c);
    } else if (r.level == Level::kInfo) {
      HandleInfo(st, p, r.message, c);
    }
  }
}

void ProcessText(State* st, uint32_t source, uint64_t line_no, std::string_view text,
                 bool may_hold_ansi) {
  RayWrapping ray;
  std::string_view line = CleanLine(text, &st->scratch, may_hold_ansi, &ray);
  if (line.empty()) return;
  st->counters.ray_repeated_lines += ray.repeated;
  if (IsRayMarkerLine(line)) {
    ++st->counters.ray_marker_lines;
    return;
  }
  ProcessClean(st, source, line_no, line, ray.prefix);
}

// Where the lines of `name` go without adding a source: its own slot, or the last one when the
// table is full (overflow shares it); nullopt when `name` would get a new slot.
std::optional<uint32_t> KnownSourceIndex(const State* st, std::string_view name) {
  auto it = st->source_index.find(absl::string_view(name.data(), name.size()));
  if (it != st->source_index.end()) return it->second;
  if (!st->sources.empty() && st->sources.size() >= st->options.max_sources) {
    return static_cast<uint32_t>(st->sources.size() - 1);
  }
  return std::nullopt;
}

uint32_t SourceIndex(State* st, std::string_view name) {
  // Every line names its source: memcmp beats a byte loop on path-length strings.
  if (st->have_last_source && st->last_source_name.size() == name.size() &&
      memcmp(st->last_source_name.data(), name.data(), name.size()) == 0) {
    return st->last_source;
  }
  uint32_t idx;
  if (const std::optional<uint32_t> known = KnownSourceIndex(st, name)) {
    idx = *known;
  } else {
    idx = static_cast<uint32_t>(st->sources.size());
    auto ss = std::make_unique<SourceState>();
    ss->name.assign(name.substr(0, 1024));
    ss->joiner = std::make_unique<PartialJoiner>(st->options.max_line_bytes);
    st->sources.push_back(std::move(ss));
    st->source_index.emplace(std::string(name), idx);
  }
  st->last_source_name.assign(name);
  st->last_source = idx;
  st->have_last_source = true;
  return idx;
}

}  // namespace

namespace internal {

uint32_t SourceIndexFor(State* st, std::string_view name) { return SourceIndex(st, name); }

void AddSettingTo(std::vector<std::pair<std::string, std::string>>* settings, size_t cap,
                  std::string_view name, std::string_view value) {
  AddSetting(settings, cap, name, value);
}

void AddUnique(std::vector<std::string>* set, std::string_view value, size_t cap) {
  AddUniqueString(set, value, cap);
}

}  // namespace internal

Analyzer::Analyzer(AnalyzerOptions options) : state_(std::make_unique<State>(options)) {
  if (state_->options.max_processes == 0) state_->options.max_processes = 1;
  if (state_->options.max_comms_per_process == 0) state_->options.max_comms_per_process = 1;
  if (state_->options.max_sources == 0) state_->options.max_sources = 1;
  if (state_->options.max_line_bytes < 256) state_->options.max_line_bytes = 256;
}

Analyzer::~Analyzer() = default;

const Counters& Analyzer::counters() const { return state_->counters; }

const AnalyzerOptions& Analyzer::options() const { return state_->options; }

namespace {

// Feed() for a source already looked up. `raw_has_esc` false: the caller checked that the
// raw line holds no ESC byte.
void FeedLine(State* st, uint32_t source_idx, uint64_t line_no, std::string_view raw_line,
              bool raw_has_esc) {
  ++st->counters.lines;
  // A line is cut by its bytes as read, before anything else: whether it counts as truncated
  // cannot depend on what the steps below make of it.
  if (raw_line.size() > st->options.max_line_bytes) {
    raw_line = raw_line.substr(0, st->options.max_line_bytes);
    ++st->counters.truncated_lines;
  }
  // Bytes that are not UTF-8 (a binary write, a character cut by a writer or by the cut above)
  // are replaced before anything is parsed, for the agent and `analyze` alike: every name and
  // message kept from the line is then valid text, as JSON, label values and proto strings must
  // be. The replacement can make the line longer than the cut; it is not cut again.
  if (!common::IsValidUtf8(raw_line)) {
    st->valid_line = common::ToValidUtf8(raw_line);
    raw_line = st->valid_line;
  }
  // Most lines of an NCCL log need no envelope or cleaning: a line CleanLine() would return as
  // it is (IsCleanAsIs; it starts with a letter, so it holds no CRI time stamp, docker '{' or
  // Ray marker either) goes straight to its records instead of through the steps below.
  if (!raw_has_esc && st->options.envelope == Envelope::kAuto && IsCleanAsIs(raw_line)) {
    ProcessClean(st, source_idx, line_no, raw_line, {});
    return;
  }
  SourceState* ss = st->sources[source_idx].get();
  Envelope env = st->options.envelope;
  CriRecord cri;
  bool partial = false;
  if (env == Envelope::kAuto && !raw_line.empty()) {
    if (IsDigitChar(raw_line[0]) && ParseCri(raw_line, &cri)) {
      env = Envelope::kCri;
    } else if (raw_line[0] == '{' && ss->json_records != 0 &&
               ParseDockerJson(raw_line, &st->json_text, &partial)) {
      env = Envelope::kDockerJson;
    } else {
      env = Envelope::kPlain;
    }
  } else if (env == Envelope::kCri) {
    if (!ParseCri(raw_line, &cri)) {
      ++st->counters.malformed_lines;
      return;
    }
  } else if (env == Envelope::kDockerJson) {
    if (!ParseDockerJson(raw_line, &st->json_text, &partial)) {
      ++st->counters.malformed_lines;
      return;
    }
  }
  std::string_view text = raw_line;
  if (env == Envelope::kCri || env == Envelope::kDockerJson) {
    std::string_view piece = env == Envelope::kCri ? cri.text : std::string_view(st->json_text);
    if (env == Envelope::kCri) partial = cri.partial;
    if (partial) {
      ss->joiner->AddPartial(piece);
      return;
    }
    bool truncated = false;
    text = ss->joiner->Complete(piece, &truncated);
    if (truncated) ++st->counters.truncated_lines;
  }
  // Text decoded from JSON or joined from earlier pieces is not part of the checked line.
  bool in_raw = text.data() >= raw_line.data() &&
                text.data() + text.size() <= raw_line.data() + raw_line.size();
  ProcessText(st, source_idx, line_no, text, raw_has_esc || !in_raw);
}

// A docker json-file log is json from its first line on; in any other file a '{' at a line's
// start (Trainer's metric dicts, JSON-lines logging) is text, for the block scan and the
// per-line path alike. Decided once per source, by its first line.
void DecideJsonRecords(State* st, SourceState* ss, std::string_view first) {
  if (ss->json_records >= 0) return;
  bool partial = false;
  ss->json_records =
      !first.empty() && first[0] == '{' && ParseDockerJson(first, &st->json_text, &partial) ? 1 : 0;
}

}  // namespace

void Analyzer::Feed(std::string_view source, uint64_t line_no, std::string_view raw_line) {
  if (raw_line.empty()) {
    ++state_->counters.lines;  // FeedLines() of no bytes is no line
    return;
  }
  FeedLines(source, line_no, raw_line);
}

void Analyzer::DeclareSource(std::string_view source, bool docker_json) {
  State* st = state_.get();
  st->sources[SourceIndex(st, source)]->json_records = docker_json ? 1 : 0;
}

uint64_t Analyzer::FeedLines(std::string_view source, uint64_t first_line_no,
                             std::string_view data) {
  if (data.empty()) return 0;
  State* st = state_.get();
  const uint32_t source_idx = SourceIndex(st, source);
  const Envelope env = st->options.envelope;
  if (env == Envelope::kCri || env == Envelope::kDockerJson || !st->options.block_scan) {
    // A forced envelope counts every line that does not parse as malformed: all are looked at.
    DecideJsonRecords(st, st->sources[source_idx].get(), data.substr(0, data.find('\n')));
    uint64_t n = 0;
    for (size_t start = 0; start < data.size(); ++n) {
      size_t end = data.find('\n', start);
      if (end == std::string_view::npos) end = data.size();
      FeedLine(st, source_idx, first_line_no + n, data.substr(start, end - start), true);
      start = end + 1;
    }
    st->counters.slow_path_lines += n;
    return n;
  }
  // Lines the block scan passes over hold nothing the per-line path would react to; they are
  // only counted. A split record's rest is fed even when it holds no needle.
  SourceState* ss = st->sources[source_idx].get();
  DecideJsonRecords(st, ss, data.substr(0, data.find('\n')));
  PartialJoiner* joiner = ss->joiner.get();
  uint64_t fed = 0;
  const uint64_t n = ForEachCandidateLine(
      data, st->options.max_line_bytes, joiner->pending(),
      [&](uint64_t index, std::string_view line) {
        // ESC bytes are looked for in the line alone: in windows of the block ahead of it, a log
        // of chatter paid a second pass over its bytes for its few candidate lines (5 % of the
        // instructions of `efawatch analyze`, callgrind, bench/analyze.sh's 2 %-NCCL log).
        FeedLine(st, source_idx, first_line_no + index, line,
                 memchr(line.data(), '\x1b', line.size()) != nullptr);
        ++fed;
        return joiner->pending();
      },
      /*dense_runs=*/true, /*json=*/ss->json_records == 1);
  st->counters.lines += n - fed;
  st->counters.slow_path_lines += fed;
  return n;
}

bool Analyzer::AwaitsContinuation(std::string_view source) const {
  const State* st = state_.get();
  const std::optional<uint32_t> idx = KnownSourceIndex(st, source);
  return idx.has_value() && st->sources[*idx]->joiner->pending();
}

}  // namespace efawatch::nccl
