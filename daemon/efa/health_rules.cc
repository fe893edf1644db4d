// SPDX-License-Identifier: Apache-2.0
#include "daemon/efa/health_rules.h"

#include "absl/strings/str_cat.h"
#include "lib/common/efa_counters.h"

namespace efawatch::efa {
namespace {

using common::Finding;
using common::Severity;

Finding Make(std::string kind, Severity severity, std::string subject, std::string message,
             std::string source, std::string text) {
  Finding f;
  f.kind = std::move(kind);
  f.severity = severity;
  f.subject = std::move(subject);
  f.message = std::move(message);
  f.evidence.source = std::move(source);
  f.evidence.text = std::move(text);
  return f;
}

std::string Where(const std::string& device, int port) {
  return port == 0 ? device : absl::StrCat(device, "/", port);
}

std::string CounterPath(const std::string& device, int port, const std::string& counter) {
  return port == 0
             ? absl::StrCat("class/infiniband/", device, "/hw_counters/", counter)
             : absl::StrCat("class/infiniband/", device, "/ports/", port, "/hw_counters/", counter);
}

// One finding for the counters of a device (port 0) or a port that could not be read; the first
// names the file in the evidence.
Finding Unreadable(const std::string& device, int port, const std::vector<std::string>& counters) {
  return Make(KindName(common::FindingKind::kEfaCounterUnreadable), Severity::kWarning,
              Where(device, port),
              absl::StrCat(counters.size(), " hw counter(s) of ", Where(device, port),
                           " could not be read; their values are unknown"),
              CounterPath(device, port, counters.front()), "read failed");
}

}  // namespace

void HealthRules::CheckCounter(const std::string& device, int port, const std::string& counter,
                               uint64_t value, std::chrono::steady_clock::time_point now) {
  const std::string key = absl::StrCat(device, "/", port, "/", counter);
  auto it = last_.find(key);
  const bool had = it != last_.end();
  const uint64_t previous = had ? it->second : value;
  last_[key] = value;
  if (!had) return;
  if (value < previous) {
    ++resets_;  // driver reload or device reset: start again from the new value
    return;
  }
  const KnownCounter* known = FindKnownCounter(counter);
  uint64_t threshold = 0;
  if (auto t = options_.rise_thresholds.find(counter); t != options_.rise_thresholds.end()) {
    threshold = t->second;
  } else if (known != nullptr && known->trouble) {
    threshold = 1;
  }
  // no_completion_cmds has its own rule (any non-zero value), not a rising one.
  if (threshold == 0 || counter == "no_completion_cmds" || value - previous < threshold) return;
  rising_[key] =
      Rising{now, Make(common::EfaCounterRiseKind(counter), Severity::kWarning, Where(device, port),
                       absl::StrCat(counter, " on ", Where(device, port), " rose by ",
                                    value - previous, " (", previous, " -> ", value, ")"),
                       CounterPath(device, port, counter), absl::StrCat(value))};
}

std::vector<Finding> HealthRules::Evaluate(const HealthInput& input) {
  std::vector<Finding> out;
  const auto now = input.when;
  std::set<std::string> present;
  uint64_t efa_bytes = 0;
  unsigned efa_devices = 0;
  for (const auto& d : input.devices) {
    present.insert(d.name);
    if (d.is_efa) ++efa_devices;
    efa_bytes += CheckDevice(d, now, out);
  }
  CheckDeviceCount(present, efa_devices, input.advertised, out);
  ReportRising(now, out);
  CheckFallback(input, efa_bytes, efa_devices, out);
  return out;
}

uint64_t HealthRules::CheckDevice(const DeviceSnapshot& d,
                                  std::chrono::steady_clock::time_point now,
                                  std::vector<Finding>& out) {
  uint64_t efa_bytes = 0;
  for (const auto& [name, value] : d.counters) CheckCounter(d.name, 0, name, value, now);
  for (const auto& p : d.ports) {
    for (const auto& [name, value] : p.counters) CheckCounter(d.name, p.port, name, value, now);
    if (d.is_efa) {
      for (const char* c : {"tx_bytes", "rx_bytes"}) {
        if (auto v = p.counters.find(c); v != p.counters.end()) efa_bytes += v->second;
      }
    }
    if (!p.unreadable.empty()) out.push_back(Unreadable(d.name, p.port, p.unreadable));
  }
  if (!d.unreadable.empty()) out.push_back(Unreadable(d.name, 0, d.unreadable));
  if (auto v = d.counters.find("no_completion_cmds"); v != d.counters.end() && v->second > 0) {
    out.push_back(Make(KindName(common::FindingKind::kEfaAdminQueueStuck), Severity::kCritical,
                       d.name,
                       absl::StrCat(d.name, ": ", v->second,
                                    " admin command(s) never completed; the driver has stopped "
                                    "the device's admin queue (reload the driver or replace "
                                    "the node)"),
                       CounterPath(d.name, 0, "no_completion_cmds"), absl::StrCat(v->second)));
  }
  return efa_bytes;
}

void HealthRules::CheckDeviceCount(const std::set<std::string>& present, unsigned efa_devices,
                                   std::optional<unsigned> advertised, std::vector<Finding>& out) {
  if (first_) {
    devices_at_start_ = present;
    efa_at_start_ = efa_devices;
    first_ = false;
  }
  for (const auto& name : devices_at_start_) {
    if (!present.contains(name)) {
      out.push_back(Make(
          KindName(common::FindingKind::kEfaDeviceGone), Severity::kCritical, name,
          absl::StrCat("RDMA device ", name, " was present when the agent started and is gone"),
          absl::StrCat("class/infiniband/", name), "missing"));
    }
  }
  // What the node was given, not what its type could have: EFA is optional on most types
  // (g5, g6, g6e node groups often run without it), so a type alone expects nothing. The EFA
  // device plugin advertises the devices it found at its start; a node advertising more than
  // it has lost some.
  std::string why;
  bool gone_explains = false;  // each lost device is an efa_device_gone already
  expected_ = 0;
  switch (options_.expectation) {
    case Expectation::kNone:
      break;
    case Expectation::kCount:
      expected_ = options_.expected_devices;
      why = "--efa-expected-devices";
      break;
    case Expectation::kAuto:
      expected_ = efa_at_start_;
      gone_explains = true;
      if (advertised.has_value() && *advertised > expected_) {
        expected_ = *advertised;
        why = "the node's allocatable vpc.amazonaws.com/efa";
        gone_explains = false;
      }
      break;
  }
  if (expected_ > 0 && efa_devices < expected_ && !gone_explains) {
    out.push_back(Make(
        KindName(common::FindingKind::kEfaDevicesMissing), Severity::kCritical, "node",
        absl::StrCat(efa_devices, " EFA devices present, ", expected_, " expected (", why, ")"),
        "class/infiniband", absl::StrCat(efa_devices)));
  }
  if (options_.expectation == Expectation::kAuto && expected_ == 0 && efa_devices == 0 &&
      options_.type_supports > 0) {
    out.push_back(Make(
        KindName(common::FindingKind::kEfaNotAttached), Severity::kInfo, "node",
        absl::StrCat(options_.instance_type, " supports ", options_.type_supports,
                     " EFA interface(s); this node was launched without any (no EFA device, none "
                     "advertised): its jobs cannot use EFA, and the agent checks no EFA device"),
        "class/infiniband", "0"));
  }
}

void HealthRules::ReportRising(std::chrono::steady_clock::time_point now,
                               std::vector<Finding>& out) {
  for (auto it = rising_.begin(); it != rising_.end();) {
    if (now - it->second.last_rise >= options_.clear_after) {
      it = rising_.erase(it);
    } else {
      out.push_back(it->second.finding);
      ++it;
    }
  }
}

void HealthRules::CheckFallback(const HealthInput& input, uint64_t efa_bytes, unsigned efa_devices,
                                std::vector<Finding>& out) {
  // Log-free fallback check over a sliding window of totals.
  const auto now = input.when;
  uint64_t ethernet = 0;
  for (const auto& [name, c] : input.interfaces) ethernet += c.rx_bytes + c.tx_bytes;
  ethernet = ethernet > input.own_probe_tcp_bytes ? ethernet - input.own_probe_tcp_bytes : 0;
  window_.push_back({now, efa_bytes, ethernet});
  while (window_.size() > 1 && now - window_[1].when >= options_.fallback_window) {
    window_.pop_front();
  }
  const Totals& oldest = window_.front();
  if (efa_devices == 0 || !input.nccl_active || now - oldest.when < options_.fallback_window ||
      ethernet < oldest.ethernet_bytes || efa_bytes < oldest.efa_bytes) {
    return;
  }
  const uint64_t d_eth = ethernet - oldest.ethernet_bytes;
  const uint64_t d_efa = efa_bytes - oldest.efa_bytes;
  if (d_eth < options_.fallback_ethernet_bytes || d_efa >= options_.fallback_efa_bytes) return;
  out.push_back(
      // A heuristic (a checkpoint to FSx looks alike): a warning, never a page.
      Make(KindName(common::FindingKind::kEfaIdleTcpBusy), Severity::kWarning, "node",
           absl::StrCat("NCCL jobs are active but the EFA devices moved ", d_efa,
                        " bytes while ethernet moved ", d_eth, " bytes in the last ",
                        std::chrono::duration_cast<std::chrono::seconds>(now - oldest.when).count(),
                        " s: the traffic is on TCP"),
           "hw_counters tx_bytes+rx_bytes vs net/dev", absl::StrCat(d_efa, " vs ", d_eth)));
}

}  // namespace efawatch::efa
