// SPDX-License-Identifier: Apache-2.0
// Soak: the real efawatchd over a pod log tree that many writers fill with what tenants print
// (random bytes, 1 MiB lines, invalid UTF-8, NCCL lines with junk fields, CRI partial pieces),
// with container restarts and pod deletions, while /metrics is scraped through
// `promtool check metrics` and every read RPC is called. At the end it asserts: the agent stayed
// alive, every scrape was valid, its peak RSS stayed under the pod limit, and once every pod is
// gone its open descriptors are back to where they started.
//
// Usage: soak_test [--duration 120s|30m|1h]   (ctest -L soak runs 120 s; exit 0 on success)
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "efawatch/v1/agent.grpc.pb.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kPodLimitBytes = 256u << 20;  // the shipped DaemonSet's memory limit
constexpr int kWriters = 8;
// Descriptors the agent may hold at the end beyond those at the start: a scrape connection and
// the inotify watch set's churn, not one per file or pod that came and went.
constexpr size_t kFdSlack = 4;

struct Stats {
  std::atomic<uint64_t> bytes{0}, lines{0}, restarts{0}, pods_deleted{0};
  std::atomic<uint64_t> scrapes{0}, bad_scrapes{0}, rpcs{0}, bad_rpcs{0};
  std::string first_bad;  // written once, under the first failure
  std::atomic<bool> failed{false};
  void Fail(const std::string& why) {
    if (!failed.exchange(true)) first_bad = why;
  }
};

std::chrono::seconds ParseDuration(int argc, char** argv) {
  std::chrono::seconds d = 120s;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) != "--duration") continue;
    const std::string v = argv[i + 1];
    const long n = std::stol(v);
    d = v.ends_with("h")   ? std::chrono::hours(n)
        : v.ends_with("m") ? std::chrono::minutes(n)
                           : std::chrono::seconds(n);
  }
  return d;
}

uint64_t ProcStatus(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

size_t OpenFds(pid_t pid) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

// One line of what a tenant's pod may print, CRI-framed (the runtime frames whatever comes).
std::string HostileLine(std::mt19937_64& rng) {
  static const char* kJunk[] = {
      "Socket", "IB",          "\xff\xfe", "AWS Libfabric", "Net\x01x",
      "efa",    "tcp;ofi_rxm", "\xc3",     "2.21.5",        "2.99.x\xe2\x82"};
  auto junk = [&] { return std::string(kJunk[rng() % std::size(kJunk)]); };
  const std::string who = "host" + std::to_string(rng() % 4) + ":" + std::to_string(rng() % 50) +
                          ":" + std::to_string(rng() % 50) + " [" + std::to_string(rng() % 8) +
                          "] ";
  std::string text;
  switch (rng() % 10) {
    case 0: {  // random bytes, newlines excluded (a newline would end the CRI record)
      text.resize(rng() % 512);
      for (char& c : text) {
        c = static_cast<char>(rng());
        if (c == '\n') c = ' ';
      }
      break;
    }
    case 1:
      text = rng() % 2000 == 0 ? std::string(1u << 20, 'x') : who + "NCCL WARN bad " + junk();
      break;
    case 2:
      text = who + "NCCL INFO Using network " + junk();
      break;
    case 3:
      text = who + "NCCL INFO NET/OFI Selected provider is " + junk() + ", fabric is " + junk();
      break;
    case 4:
      text = who + "NCCL INFO comm 0x" + std::to_string(rng()) + " rank " +
             std::to_string(rng() % 16) + " nranks 16 cudaDev 0 nvmlDev 0 busId 1000 commId 0x" +
             std::to_string(rng() % 1000) + junk() + " - Init START";
      break;
    case 5:
      text = who + "NCCL INFO NCCL version " + junk() + "+cuda12.2";
      break;
    case 6:
      text = who + "NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/" + junk() + "/0";
      break;
    default:
      text = "step " + std::to_string(rng()) + " loss 0.1";
  }
  const char tag = rng() % 8 == 0 ? 'P' : 'F';
  return std::string("2026-12-02T10:00:00.000000001Z stdout ") + tag + " " + text + "\n";
}

// One writer: its own pod with one container. The container restarts every ~20 s (a new
// <N>.log, the old one deleted), the file rotates past 4 MiB (rename, new file, the rotated one
// deleted), and every ~60 s the whole pod is deleted and a new one starts.
void Writer(int id, const fs::path& root, Clock::time_point end, Stats& stats) {
  std::mt19937_64 rng(static_cast<uint64_t>(id) * 7919 + 1);
  int generation = 0, restart = 0;
  auto pod_dir = [&] {
    return root / ("soak_w" + std::to_string(id) + "-" + std::to_string(generation) + "_uid" +
                   std::to_string(id) + "x" + std::to_string(generation));
  };
  auto log = [&] { return pod_dir() / "main" / (std::to_string(restart) + ".log"); };
  fs::create_directories(pod_dir() / "main");
  auto last_restart = Clock::now(), last_pod = Clock::now();
  while (Clock::now() < end) {
    std::string chunk;
    for (int i = 0; i < 64; ++i) chunk += HostileLine(rng);
    {
      std::ofstream out(log(), std::ios::app | std::ios::binary);
      out << chunk;
    }
    stats.bytes += chunk.size();
    stats.lines += 64;
    std::error_code ec;
    if (fs::file_size(log(), ec) > (4u << 20)) {
      const fs::path rotated = log().string() + ".20261202-100000";
      fs::rename(log(), rotated, ec);
      std::ofstream(log()).flush();
      std::this_thread::sleep_for(50ms);
      fs::remove(rotated, ec);
    }
    if (Clock::now() - last_restart > 20s) {
      fs::remove(log(), ec);
      ++restart;
      ++stats.restarts;
      last_restart = Clock::now();
    }
    if (Clock::now() - last_pod > 60s) {
      fs::remove_all(pod_dir(), ec);
      ++stats.pods_deleted;
      ++generation;
      restart = 0;
      fs::create_directories(pod_dir() / "main", ec);
      last_pod = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 30));
  }
}

// Scrapes /metrics every 500 ms and runs each scrape through promtool (when installed).
void Scraper(int port, const std::string& tmp, Clock::time_point end, Stats& stats) {
  const bool promtool = testing::OnPath("promtool");
  while (Clock::now() < end) {
    auto [code, body] = testing::HttpGet(port, "/metrics");
    ++stats.scrapes;
    if (code != 200) {
      ++stats.bad_scrapes;
      stats.Fail("scrape: HTTP " + std::to_string(code));
    } else if (promtool) {
      testing::WriteFile(tmp, body);
      auto [rc, out] =
          testing::RunCommand({"/bin/sh", "-c", "promtool check metrics < " + tmp + " 2>&1"}, 30s);
      if (rc != 0) {
        ++stats.bad_scrapes;
        stats.Fail("promtool: " + out.substr(0, 300));
      }
    }
    std::this_thread::sleep_for(500ms);
  }
}

// Calls every read RPC once a second: GetNodeHealth, GetFabricAddress, a short WatchFindings.
void RpcCaller(const std::string& address, Clock::time_point end, Stats& stats) {
  auto stub = v1::Agent::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  auto deadline = [] { return std::chrono::system_clock::now() + 5s; };
  while (Clock::now() < end) {
    grpc::ClientContext c1, c2, c3;
    c1.set_deadline(deadline());
    c2.set_deadline(deadline());
    c3.set_deadline(std::chrono::system_clock::now() + 300ms);
    v1::NodeHealth h;
    const grpc::Status s1 = stub->GetNodeHealth(&c1, v1::GetNodeHealthRequest(), &h);
    v1::FabricAddress a;
    const grpc::Status s2 = stub->GetFabricAddress(&c2, v1::GetFabricAddressRequest(), &a);
    auto reader = stub->WatchFindings(&c3, v1::WatchFindingsRequest());
    v1::FindingEvent e;
    while (reader->Read(&e)) {
    }
    const grpc::Status s3 = reader->Finish();
    stats.rpcs += 3;
    const bool ok = s1.ok() &&
                    (s2.ok() || s2.error_code() == grpc::StatusCode::NOT_FOUND ||
                     s2.error_code() == grpc::StatusCode::FAILED_PRECONDITION) &&
                    (s3.ok() || s3.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
    if (!ok) {
      ++stats.bad_rpcs;
      stats.Fail("rpc: " + s1.error_message() + " / " + s2.error_message() + " / " +
                 s3.error_message());
    }
    std::this_thread::sleep_for(1s);
  }
}

double Metric(int port, const std::string& series) {
  const std::string body = testing::HttpGet(port, "/metrics").second;
  auto p = body.find("\n" + series + " ");
  return p == std::string::npos ? -1 : std::stod(body.substr(p + series.size() + 2));
}

}  // namespace
}  // namespace efawatch

namespace {

using namespace efawatch;

// Starts the agent and returns {metrics port, grpc port}, or {0, 0}.
std::pair<int, int> WaitForPorts(testing::Subprocess& proc, const std::string& port_file) {
  const std::regex re(R"re("metrics": (\d+), "grpc": (\d+))re");
  const auto deadline = Clock::now() + 20s;
  while (Clock::now() < deadline && !proc.Wait(0ms)) {
    std::smatch m;
    const std::string text = testing::ReadFileOrEmpty(port_file);
    if (std::regex_search(text, m, re)) return {std::stoi(m[1]), std::stoi(m[2])};
    std::this_thread::sleep_for(20ms);
  }
  return {0, 0};
}

// After the writers: every pod is deleted; once the agent follows no file, its descriptors
// must be back to where they were before the first pod came.
// (Polled: the server closes the connections of the finished RPC caller a little later.)
size_t FdsAfterAllPodsGone(const fs::path& pods, int port, pid_t pid, size_t fds_start) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(pods, ec)) fs::remove_all(e.path(), ec);
  const auto deadline = Clock::now() + 30s;
  while (Clock::now() < deadline && (Metric(port, "efawatch_logs_files_watched") != 0 ||
                                     OpenFds(pid) > fds_start + kFdSlack)) {
    std::this_thread::sleep_for(100ms);
  }
  return OpenFds(pid);
}

}  // namespace

int main(int argc, char** argv) {
  const auto duration = ParseDuration(argc, argv);
  testing::TempDir dir;
  const fs::path pods = dir.File("pods");
  fs::create_directories(pods);
  testing::Subprocess agent({testing::BinaryPath("bin/efawatchd"), "--metrics-listen=127.0.0.1:0",
                             "--grpc-listen=127.0.0.1:0", "--port-file=" + dir.File("ports.json"),
                             "--pod-log-root=" + pods.string(), "--state-dir=" + dir.File("state"),
                             "--sysfs-root=" + dir.File("nosys"), "--pod-grace-period-seconds=5",
                             "--fabric-providers=tcp", "--fabric-interface=lo"});
  const std::pair<int, int> ports = WaitForPorts(agent, dir.File("ports.json"));
  const int port = ports.first;  // not a structured binding: lambdas below capture it
  const int grpc_port = ports.second;
  if (port == 0) {
    std::fprintf(stderr, "agent did not start: %s\n", agent.Stderr().c_str());
    return 1;
  }
  std::this_thread::sleep_for(1s);
  const size_t fds_start = OpenFds(agent.pid());
  Stats stats;
  const auto end = Clock::now() + duration;
  std::vector<std::jthread> threads;
  threads.reserve(kWriters + 2);
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] { Writer(i, pods, end, stats); });
  }
  threads.emplace_back([&] { Scraper(port, dir.File("scrape.prom"), end, stats); });
  threads.emplace_back([&] { RpcCaller("127.0.0.1:" + std::to_string(grpc_port), end, stats); });
  uint64_t peak_rss = 0;
  while (Clock::now() < end && !stats.failed) {
    if (agent.Wait(0ms)) stats.Fail("the agent exited: " + agent.Stderr().substr(0, 2000));
    peak_rss = std::max(peak_rss, ProcStatus(agent.pid(), "VmRSS"));
    std::this_thread::sleep_for(1s);
  }
  threads.clear();  // joins (each ends at `end`)
  if (agent.Wait(0ms)) stats.Fail("the agent exited: " + agent.Stderr().substr(0, 2000));
  peak_rss = std::max(peak_rss, ProcStatus(agent.pid(), "VmHWM"));
  const size_t fds_end = FdsAfterAllPodsGone(pods, port, agent.pid(), fds_start);
  std::printf(
      "soak %llds: %llu bytes and %llu lines fed by %d writers, %llu restarts, %llu pods deleted; "
      "%llu scrapes (%llu bad), %llu RPCs (%llu bad); peak RSS %.1f MiB; fds %zu at start, %zu "
      "at end\n",
      static_cast<long long>(duration.count()), static_cast<unsigned long long>(stats.bytes.load()),
      static_cast<unsigned long long>(stats.lines.load()), kWriters,
      static_cast<unsigned long long>(stats.restarts.load()),
      static_cast<unsigned long long>(stats.pods_deleted.load()),
      static_cast<unsigned long long>(stats.scrapes.load()),
      static_cast<unsigned long long>(stats.bad_scrapes.load()),
      static_cast<unsigned long long>(stats.rpcs.load()),
      static_cast<unsigned long long>(stats.bad_rpcs.load()), peak_rss / 1048576.0, fds_start,
      fds_end);
  if (peak_rss >= kPodLimitBytes) stats.Fail("peak RSS over the pod limit");
  if (fds_end > fds_start + kFdSlack) stats.Fail("descriptors grew");
  agent.Signal(SIGTERM);
  if (auto code = agent.Wait(5s); !code || *code != 0) stats.Fail("no clean stop on SIGTERM");
  if (stats.failed) {
    std::fprintf(stderr, "FAILED: %s\n", stats.first_bad.c_str());
    return 1;
  }
  return 0;
}
