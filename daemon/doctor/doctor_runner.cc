// SPDX-License-Identifier: Apache-2.0
#include "daemon/doctor/doctor_runner.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <map>
#include <sstream>

#include "daemon/logs/pod_volumes.h"
#include "lib/common/metric_table.h"
#include "lib/common/read_file.h"

namespace efawatch::doctor {
namespace {

namespace fs = std::filesystem;

// The node as the agent sees it: the host's /sys and /proc.
Target NodeTarget(const DoctorRunnerOptions& o) {
  Target t;
  t.sys = o.sysfs;
  t.host_proc = o.procfs;
  return t;
}

std::vector<common::Finding> FailFindings(const Report& r,
                                          std::chrono::system_clock::time_point now) {
  std::vector<common::Finding> out;
  // A check of a pod's NCCL process names that pod (namespace_name, pod), as log findings do.
  auto add = [&](const Check& c, const std::string& subject, const std::string& namespace_name,
                 const std::string& pod) {
    if (c.status != Status::kFail) return;
    out.push_back(
        {.kind = KindName(common::FindingKind::kDoctorCheckFailed),
         .severity = common::Severity::kWarning,
         .subject = subject,
         .message = c.id + ": " + c.summary + (c.fix.empty() ? "" : " (fix: " + c.fix + ")"),
         .evidence = {.source = "efawatch doctor", .line = 0, .text = c.evidence},
         .first_seen = now,
         .last_seen = now,
         .namespace_name = namespace_name,
         .pod = pod});
  };
  for (const Check& c : r.node) add(c, "node", "", "");
  for (const ProcessReport& p : r.processes) {
    const std::string who =
        p.pod.empty() ? "pid " + std::to_string(p.pid) : p.namespace_name + "/" + p.pod;
    for (const Check& c : p.checks) {
      add(c, who, p.pod.empty() ? "" : p.namespace_name, p.pod);
    }
  }
  return out;
}

}  // namespace

std::vector<pid_t> NcclProcesses(const fs::path& procfs) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(procfs, ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream maps(e.path() / "maps");
    for (std::string line; std::getline(maps, line);) {
      if (line.find("/libnccl.so") != std::string::npos) {
        pids.push_back(static_cast<pid_t>(std::stol(name)));
        break;
      }
    }
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

DoctorRunner::DoctorRunner(DoctorRunnerOptions options, common::FindingsBoard* findings,
                           const common::Clock& clock)
    : options_(std::move(options)), findings_(findings), clock_(clock) {}

DoctorRunner::~DoctorRunner() { Stop(); }

void DoctorRunner::Start() {
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void DoctorRunner::Stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    wake_.notify_all();
    thread_.join();
  }
  std::vector<Done> left;
  {
    std::lock_guard lock(wait_mu_);
    left.swap(waiting_);
  }
  for (Done& d : left) d(absl::UnavailableError("the agent is stopping"));
}

void DoctorRunner::RunAsync(Done done) {
  {
    std::lock_guard lock(wait_mu_);
    if (waiting_.size() < kMaxWaiting && thread_.joinable()) {
      waiting_.push_back(std::move(done));
      wake_.notify_all();
      return;
    }
  }
  done(absl::ResourceExhaustedError("too many doctor runs are waiting; try again later"));
}

// A run at start, then one per interval (each on-demand run restarts the wait), and one for
// the requests waiting whenever there are some: they share that run's report.
void DoctorRunner::Run(const std::stop_token& stop) {
  bool first = true;
  while (!stop.stop_requested()) {
    std::vector<Done> asked;
    {
      std::unique_lock lock(wait_mu_);
      auto asked_for = [&] { return !waiting_.empty(); };
      if (!first && options_.interval.count() > 0) {
        wake_.wait_for(lock, stop, options_.interval, asked_for);  // a request, or the interval
      } else if (!first) {
        wake_.wait(lock, stop, asked_for);
      }
      if (stop.stop_requested()) return;
      asked.swap(waiting_);
    }
    first = false;
    const Report r = RunNow();
    for (Done& d : asked) d(r);
  }
}

Report DoctorRunner::RunNow() {
  std::lock_guard run(run_mu_);
  Report r;
  r.ran_at = clock_.WallNow();
  r.node = RunNodeChecks(NodeTarget(options_));
  const auto pods = logs::PodNamesByUid(options_.pod_log_root);
  for (pid_t pid : NcclProcesses(options_.procfs)) {
    if (r.processes.size() >= options_.max_processes) {
      ++r.processes_skipped;
      continue;
    }
    auto t = ProcessTarget(options_.procfs, pid);
    if (!t.ok()) continue;  // gone since the scan
    ProcessReport p;
    p.pid = pid;
    const logs::CgroupPod cg = logs::PodOfCgroup(
        common::ReadWholeFile((options_.procfs / std::to_string(pid) / "cgroup").string())
            .value_or(""));
    p.container_id = cg.container_id;
    if (auto it = pods.find(cg.uid); it != pods.end()) {
      p.namespace_name = it->second.first;
      p.pod = it->second.second;
    }
    p.checks = RunChecks(*t);
    r.processes.push_back(std::move(p));
  }
  Publish(r);
  return r;
}

void DoctorRunner::Publish(const Report& r) {
  if (findings_ != nullptr) findings_->Publish("doctor", FailFindings(r, r.ran_at));
  if (options_.on_report) options_.on_report(r);
  std::lock_guard lock(mu_);
  last_ = std::make_shared<const Report>(r);
}

absl::Status DoctorRunner::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                   common::MetricSink& sink) {
  std::shared_ptr<const Report> r;
  {
    std::lock_guard lock(mu_);
    r = last_;
  }
  if (r == nullptr) return absl::OkStatus();
  for (const Check& c : r->node) {
    sink.Add(metrics::M::kDoctorChecks,
             {{"check", c.id}, {"status", std::string(StatusName(c.status))}}, 1);
  }
  std::map<std::pair<std::string, std::string>, int> failures;
  for (const ProcessReport& p : r->processes) {
    if (p.pod.empty()) continue;
    int& n = failures[{p.namespace_name, p.pod}];
    for (const Check& c : p.checks) n += c.status == Status::kFail ? 1 : 0;
  }
  for (const auto& [pod, n] : failures) {
    sink.Add(metrics::M::kDoctorPodFailures, {{"namespace", pod.first}, {"pod", pod.second}}, n);
  }
  return absl::OkStatus();
}

}  // namespace efawatch::doctor
