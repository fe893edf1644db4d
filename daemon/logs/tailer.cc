// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/tailer.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

#include "spdlog/spdlog.h"

namespace efawatch::logs {

namespace {
// How long the tailer waits after an inotify wake-up before it reads, so that the writes of
// many containers are read in one pass (the lag from a line to its metric stays well under 1 s).
constexpr int kCoalesceMs = 200;

// What WaitReadable() saw readable.
constexpr int kInotify = 1;
constexpr int kWoken = 2;

// Waits up to `left` for `inotify_fd` or `wake_fd` (either may be -1) to be readable; returns a
// mask of kInotify and kWoken, 0 on timeout, -1 on error (EINTR included: the caller loops).
int WaitReadable(int inotify_fd, int wake_fd, std::chrono::steady_clock::duration left) {
  pollfd p[2];
  nfds_t n = 0;
  int inotify_at = -1, wake_at = -1;
  if (inotify_fd >= 0) {
    inotify_at = static_cast<int>(n);
    p[n++] = {inotify_fd, POLLIN, 0};
  }
  if (wake_fd >= 0) {
    wake_at = static_cast<int>(n);
    p[n++] = {wake_fd, POLLIN, 0};
  }
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  const int r =
      ::poll(n == 0 ? nullptr : p, n, static_cast<int>(std::clamp<int64_t>(ms, 0, 60000)));
  if (r <= 0) return r;
  int mask = 0;
  if (inotify_at >= 0 && (p[inotify_at].revents & POLLIN) != 0) mask |= kInotify;
  if (wake_at >= 0 && (p[wake_at].revents & POLLIN) != 0) mask |= kWoken;
  return mask;
}

void WakeEventfd(int fd) {
  if (fd < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof(one));
}

void DrainEventfd(int fd) {
  uint64_t v;
  [[maybe_unused]] const ssize_t n = ::read(fd, &v, sizeof(v));
}

uint64_t ThreadCpuNanoseconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

void LineSink::OnLines(const LogSource& source, uint64_t first_line_no, uint64_t count,
                       std::string_view block) {
  for (uint64_t i = 0; i < count && !block.empty(); ++i) {
    const size_t nl = block.find('\n');
    OnLine(source, first_line_no + i, block.substr(0, nl));
    block.remove_prefix(nl == std::string_view::npos ? block.size() : nl + 1);
  }
}

Tailer::Tailer(TailerOptions options, LineSink* sink, const common::Clock& clock)
    : options_(std::move(options)),
      sink_(sink),
      clock_(clock),
      reader_(options_, sink_, counters_),
      follower_(options_, reader_, counters_),
      scanner_(options_, follower_, reader_, watcher_, sink_, counters_),
      checkpoint_(options_.state_file, counters_) {}

Tailer::~Tailer() { Stop(); }

absl::Status Tailer::Start() {
  LoadCheckpoint();
  if (!watcher_.Open()) {
    spdlog::warn("inotify unavailable; polling pod logs every {} ms",
                 options_.poll_interval.count());
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
  return absl::OkStatus();
}

void Tailer::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
    std::lock_guard lock(run_mu_);
    try {
      WriteCheckpoint();
    } catch (const std::exception& e) {
      ++counters_.internal_errors;
      spdlog::error("last checkpoint not written (internal error): {}", e.what());
    }
  }
  watcher_.Close();
  if (wake_fd_ >= 0) {
    ::close(wake_fd_);
    wake_fd_ = -1;
  }
}

void Tailer::Run(const std::stop_token& stop) {
  const std::chrono::milliseconds interval = FallbackInterval();
  ScanSchedule schedule(interval);
  // Stop() wakes the wait through the eventfd instead of the wait polling for it.
  const std::stop_callback on_stop(stop, [this] { WakeEventfd(wake_fd_); });
  // At least one pass, even when stopped at once: a restart must catch up before it checkpoints.
  do {
    const uint64_t read_before = counters_.bytes_read;
    const TimePoint start = clock_.Now();
    const bool backlog = GuardedPass(schedule);
    const TimePoint not_before =
        backlog ? BudgetEnd(start, counters_.bytes_read - read_before) : start;
    WaitForWork(stop, schedule, interval, PassEnd{start, backlog, not_before});
  } while (!stop.stop_requested());
}

std::chrono::milliseconds Tailer::FallbackInterval() const {
  // inotify reports everything it can see at once, so with it the fallback only covers what it
  // cannot (docs/limits.md, idle cost).
  return watcher_.fd() >= 0 ? std::max(options_.poll_interval, options_.rescan_interval)
                            : options_.poll_interval;
}

bool Tailer::GuardedPass(ScanSchedule& schedule) {
  std::lock_guard lock(run_mu_);
  // A directory walk costs far more than reading the files we follow: walk only when inotify saw
  // a file or directory come or go, and on the poll interval as a fallback, and never more often
  // than the walks' own cost allows (ScanSchedule).
  // Last resort: an exception here is a bug on some input; letting it end the thread would end
  // the agent, and a restart would read the same bytes again (a crash loop). The pass is
  // dropped, counted and logged, and the next one goes on.
  try {
    const bool walk = schedule.Due(clock_.Now());
    const uint64_t walked_ns = counters_.scan_nanoseconds;
    const bool backlog = Pass(walk);
    if (walk) {
      schedule.Walked(clock_.Now(),
                      std::chrono::nanoseconds(counters_.scan_nanoseconds - walked_ns));
    }
    return backlog;
  } catch (const std::exception& e) {
    if (counters_.internal_errors++ % 100 == 0) {
      spdlog::error("pod log pass failed (internal error {}): {}", counters_.internal_errors.load(),
                    e.what());
    }
    return false;
  }
}

Tailer::TimePoint Tailer::BudgetEnd(TimePoint start, uint64_t bytes) const {
  // The read budget: with a backlog, the next pass waits until this one's bytes are paid for
  // (every file gets its share of each pass, so a flood delays the others' lines by a pass, not
  // by its backlog).
  if (options_.read_budget_bytes_per_second == 0) return start;
  const double secs =
      static_cast<double>(bytes) / static_cast<double>(options_.read_budget_bytes_per_second);
  return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(secs));
}

void Tailer::WaitForWork(const std::stop_token& stop, ScanSchedule& schedule,
                         std::chrono::milliseconds interval, const PassEnd& pass) {
  // No timer of our own, so an idle agent wakes once per fallback interval and not ten times a
  // second (it did, and an idle agent cost three times what it does now). The wait is cut at
  // that interval so a test clock moved forward is seen within one.
  while (!stop.stop_requested()) {
    auto deadline = schedule.NextWake();
    if (pass.backlog) deadline = std::min(deadline, pass.not_before);
    // What the sink waits for (a grace period's end); one already due at the pass that just ran
    // is not waited for again (no busy loop on a sink that keeps answering the past).
    if (const auto due = sink_->NextDue(); due && *due > pass.start) {
      deadline = std::min(deadline, *due);
    }
    const auto now = clock_.Now();
    if (now >= deadline) return;
    const auto left = std::min<std::chrono::steady_clock::duration>(deadline - now, interval);
    const int r = WaitReadable(watcher_.fd(), wake_fd_, left);
    if (r <= 0) continue;
    if ((r & kWoken) != 0) DrainEventfd(wake_fd_);
    if ((r & kInotify) == 0) continue;
    {
      std::lock_guard lock(run_mu_);
      if (watcher_.ReadEvents()) schedule.Ask();
    }
    // Coalesce a burst of writes into one pass: at most ~5 passes a second however many
    // containers write, and still well under a second of lag. Each pass costs a read per
    // written file and a verdict per changed container, so with many busy containers the pass
    // rate, not the line rate, sets most of the agent's CPU (bench/pod_logs.sh). Stop() cuts
    // the wait short.
    if (!pass.backlog && WaitReadable(-1, wake_fd_, std::chrono::milliseconds(kCoalesceMs)) > 0) {
      DrainEventfd(wake_fd_);
    }
    if (pass.backlog && clock_.Now() < pass.not_before) continue;  // the budget's wait goes on
    return;
  }
}

bool Tailer::PollOnce() { return Pass(true); }

bool Tailer::Pass(bool scan) {
  if (scan) TimedScan();
  const bool backlog = follower_.ReadAll();
  sink_->OnPassComplete();
  if (checkpoint_.enabled() && (follower_.checkpoint_due() || clock_.Now() >= next_checkpoint_)) {
    follower_.ClearCheckpointDue();
    WriteCheckpoint();
    next_checkpoint_ = clock_.Now() + options_.checkpoint_interval;
  }
  return backlog;
}

void Tailer::TimedScan() {
  // The walk's cost is this thread's CPU time, not wall time: a walk preempted on a busy node
  // cost the node nothing more, and must not hold the next one off (ScanSchedule).
  const uint64_t start = ThreadCpuNanoseconds();
  scanner_.Scan();
  ++counters_.scans;
  counters_.scan_nanoseconds += ThreadCpuNanoseconds() - start;
}

void Tailer::WriteCheckpoint() {
  if (!checkpoint_.enabled()) return;
  TailerCheckpoint state;
  state.files = follower_.ResumePoints();
  state.counters = {counters_.bytes_read.load(), counters_.lines_read.load(),
                    counters_.rotations.load(), counters_.truncations.load(),
                    counters_.lines_truncated.load()};
  state.sink = sink_->Checkpoint();
  // A failure is counted and logged by the store; the next checkpoint tries again.
  checkpoint_.Write(state).IgnoreError();
}

void Tailer::LoadCheckpoint() {
  absl::StatusOr<TailerCheckpoint> state = checkpoint_.Load(*sink_);
  // None (a fresh start), or one set aside (counted and logged by the store): nothing to take.
  if (!state.ok()) return;
  follower_.Restore(state->files);
  const TailerCheckpoint::Counters& c = state->counters;
  counters_.bytes_read = c.bytes_read;
  counters_.lines_read = c.lines_read;
  counters_.rotations = c.rotations;
  counters_.truncations = c.truncations;
  counters_.lines_truncated = c.lines_truncated;
  sink_->Restore(state->sink);
}

}  // namespace efawatch::logs
