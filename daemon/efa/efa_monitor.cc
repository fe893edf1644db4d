// SPDX-License-Identifier: Apache-2.0
#include "daemon/efa/efa_monitor.h"

#include <condition_variable>

#include "absl/strings/str_cat.h"
#include "daemon/efa/netdev.h"
#include "lib/common/efa_counters.h"

namespace efawatch::efa {

EfaMonitor::EfaMonitor(EfaMonitorOptions options, const common::Clock& clock,
                       common::FindingsBoard* board, std::function<bool()> nccl_active,
                       std::function<uint64_t()> own_probe_bytes)
    : options_(std::move(options)),
      clock_(clock),
      board_(board),
      nccl_active_(std::move(nccl_active)),
      own_probe_bytes_(std::move(own_probe_bytes)),
      rules_(options_.health) {}

EfaMonitor::~EfaMonitor() {
  if (thread_.joinable()) {
    thread_.request_stop();
    thread_.join();
  }
}

void EfaMonitor::Start() {
  thread_ = std::jthread([this](const std::stop_token& stop) {
    std::mutex mu;
    std::condition_variable_any cv;
    while (!stop.stop_requested()) {
      EvaluateOnce();
      std::unique_lock lock(mu);
      cv.wait_for(lock, stop, options_.evaluate_interval, [] { return false; });
    }
  });
}

std::vector<DeviceSnapshot> EfaMonitor::Read(std::chrono::steady_clock::time_point deadline,
                                             bool* complete) {
  *complete = true;
  auto names = ListRdmaDevices(options_.sysfs_root);
  if (!names.ok()) {
    *complete = false;
    return {};
  }
  std::lock_guard lock(cache_mu_);
  std::vector<DeviceSnapshot> out;
  std::map<std::string, Cached> kept;
  for (const auto& name : *names) {
    const auto now = clock_.Now();
    auto it = cache_.find(name);
    const bool fresh = it != cache_.end() && now - it->second.read_at < options_.min_read_interval;
    if (fresh || (it != cache_.end() && now >= deadline)) {
      // Fresh enough, or out of time: serve what we have (stale only past the deadline).
      if (!fresh) *complete = false;
      kept[name] = it->second;
    } else if (now < deadline) {
      ++device_reads_;
      kept[name] = Cached{now, ReadDevice(options_.sysfs_root, name)};
    } else {
      *complete = false;
      continue;
    }
    out.push_back(kept[name].snapshot);
  }
  cache_ = std::move(kept);  // devices that vanished leave the cache
  unsigned efa = 0;
  for (const auto& d : out) efa += d.is_efa ? 1 : 0;
  if (efa_devices_.exchange(efa) != efa && options_.on_efa_devices) options_.on_efa_devices(efa);
  return out;
}

void EfaMonitor::EvaluateOnce() {
  HealthInput input;
  bool complete = true;
  input.devices = Read(clock_.Now() + std::chrono::seconds(5), &complete);
  input.when = clock_.Now();
  auto interfaces = ReadNetDev(options_.procfs_root, options_.interface_prefixes);
  if (interfaces.ok()) input.interfaces = std::move(*interfaces);
  input.nccl_active = nccl_active_ && nccl_active_();
  input.own_probe_tcp_bytes = own_probe_bytes_ ? own_probe_bytes_() : 0;
  if (options_.advertised) input.advertised = options_.advertised();
  std::vector<common::Finding> findings;
  {
    std::lock_guard lock(rules_mu_);
    findings = rules_.Evaluate(input);
  }
  board_->Publish("efa", std::move(findings));
}

absl::Status EfaMonitor::Collect(std::chrono::steady_clock::time_point deadline,
                                 common::MetricSink& sink) {
  bool complete = true;
  const auto devices = Read(deadline, &complete);
  unsigned efa = 0;
  for (const auto& d : devices) {
    efa += d.is_efa ? 1 : 0;
    sink.Add(metrics::M::kRdmaDeviceInfo,
             {{"device", d.name},
              {"driver", d.driver},
              {"efa", d.is_efa ? "true" : "false"},
              {"pci_address", d.pci_address},
              {"numa_node", d.numa_node},
              {"local_cpus", d.local_cpus},
              {"uverbs", d.uverbs},
              {"p2p", d.p2p}},
             1);
    for (const auto& [name, value] : d.counters) {
      if (auto known = metrics::M::EfaCounter(name)) {
        sink.Add(*known, {{"device", d.name}}, static_cast<double>(value));
      } else {
        sink.Add(metrics::M::kRdmaHwStat, {{"device", d.name}, {"port", "0"}, {"counter", name}},
                 static_cast<double>(value));
      }
    }
    sink.Add(metrics::M::kRdmaHwReadErrors, {{"device", d.name}},
             static_cast<double>(d.unreadable.size() + [&] {
               size_t n = 0;
               for (const auto& p : d.ports) n += p.unreadable.size();
               return n;
             }()));
    for (const auto& p : d.ports) {
      const std::string port = absl::StrCat(p.port);
      if (p.state_id >= 0) {
        sink.Add(metrics::M::kRdmaPortState, {{"device", d.name}, {"port", port}}, p.state_id);
      }
      if (p.phys_state_id >= 0) {
        sink.Add(metrics::M::kRdmaPortPhysicalState, {{"device", d.name}, {"port", port}},
                 p.phys_state_id);
      }
      if (p.rate_bytes_per_second >= 0) {
        sink.Add(metrics::M::kRdmaPortRateBytesPerSecond, {{"device", d.name}, {"port", port}},
                 p.rate_bytes_per_second);
      }
      for (const auto& [name, value] : p.counters) {
        if (auto known = metrics::M::EfaCounter(name)) {
          sink.Add(*known, {{"device", d.name}, {"port", port}}, static_cast<double>(value));
        } else {
          sink.Add(metrics::M::kRdmaHwStat, {{"device", d.name}, {"port", port}, {"counter", name}},
                   static_cast<double>(value));
        }
      }
    }
  }
  sink.Add(metrics::M::kRdmaDevices, {}, static_cast<double>(devices.size()));
  sink.Add(metrics::M::kEfaDevices, {}, efa);
  sink.Add(metrics::M::kRdmaDeviceReadsTotal, {}, static_cast<double>(device_reads_.load()));
  {
    std::lock_guard lock(rules_mu_);
    sink.Add(metrics::M::kRdmaHwResetsTotal, {}, static_cast<double>(rules_.resets()));
    // What the latest evaluation expected: none on a node given no EFA.
    if (rules_.expected() > 0) sink.Add(metrics::M::kEfaDevicesExpected, {}, rules_.expected());
  }
  auto interfaces = ReadNetDev(options_.procfs_root, options_.interface_prefixes);
  if (interfaces.ok()) {
    for (const auto& [name, c] : *interfaces) {
      sink.Add(metrics::M::kNetReceiveBytesTotal, {{"interface", name}},
               static_cast<double>(c.rx_bytes));
      sink.Add(metrics::M::kNetTransmitBytesTotal, {{"interface", name}},
               static_cast<double>(c.tx_bytes));
    }
  }
  if (!complete) {
    return absl::DeadlineExceededError(
        "some RDMA devices could not be read within the time budget; served cached values");
  }
  if (!interfaces.ok()) return interfaces.status();
  return absl::OkStatus();
}

}  // namespace efawatch::efa
