// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/fabric_collector.h"

#include <string>

namespace efawatch::fabric {

absl::Status FabricCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                      common::MetricSink& sink) {
  if (const Responder* r = service_.responder(); r != nullptr) {
    sink.Add(metrics::M::kFabricProviderInfo,
             {{"provider", r->info().provider},
              {"fabric", r->info().fabric},
              {"domain", r->info().domain}},
             1);
    const ResponderCounters c = r->counters();
    const std::pair<const char*, uint64_t> kinds[] = {{"ping", c.pings},
                                                      {"bandwidth", c.bw_messages},
                                                      {"garbage", c.garbage + c.unresolvable},
                                                      {"error", c.recv_errors + c.send_errors},
                                                      {"unverified", c.unverified},
                                                      {"spoofed", c.spoofed}};
    for (const auto& [kind, n] : kinds) {
      sink.Add(metrics::M::kFabricResponderMessagesTotal, {{"kind", kind}}, static_cast<double>(n));
    }
  }
  for (const PeerProbeState& p : service_.PeerStates()) {
    if (p.ping) {
      const RttSummary& s = p.ping->rtt;
      const std::pair<const char*, double> q[] = {{"0", s.min_us},
                                                  {"0.5", s.median_us},
                                                  {"0.9", s.p90_us},
                                                  {"0.99", s.p99_us},
                                                  {"1", s.max_us}};
      if (s.count > 0) {
        for (const auto& [quantile, us] : q) {
          sink.Add(metrics::M::kFabricPingRttSeconds, {{"peer", p.peer}, {"quantile", quantile}},
                   us / 1e6);
        }
      }
      sink.Add(metrics::M::kFabricPingLossRatio, {{"peer", p.peer}}, p.ping->loss_ratio);
    }
    if (p.bandwidth) {
      const char* direction = p.bandwidth->bidirectional ? "bidirectional" : "unidirectional";
      for (const BandwidthPoint& b : p.bandwidth->points) {
        sink.Add(
            metrics::M::kFabricBandwidthBytesPerSecond,
            {{"peer", p.peer}, {"size", std::to_string(b.message_bytes)}, {"direction", direction}},
            b.gbytes_per_second * 1e9);
      }
    }
    sink.Add(metrics::M::kFabricProbeLastRunTimestampSeconds, {{"peer", p.peer}},
             std::chrono::duration<double>(p.last_run.time_since_epoch()).count());
    sink.Add(metrics::M::kFabricProbeFailuresTotal, {{"peer", p.peer}},
             static_cast<double>(p.failures));
  }
  return absl::OkStatus();
}

}  // namespace efawatch::fabric
