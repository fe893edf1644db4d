// SPDX-License-Identifier: Apache-2.0
#include "daemon/startup_log.h"

#include <filesystem>

#include "absl/strings/str_join.h"
#include "daemon/module_options.h"
#include "spdlog/spdlog.h"

namespace efawatch::startup {

void LogPodLogs(const Config& c) {
  std::error_code ec;
  if (!std::filesystem::is_directory(c.paths.pod_log_root, ec)) {
    spdlog::warn("pod log root {} does not exist: no pod logs to analyze until it does",
                 c.paths.pod_log_root.string());
  } else {
    spdlog::info("log analysis: pod log root {}", c.paths.pod_log_root.string());
  }
}

void LogInspector(const inspector::InspectorCollectorOptions& o) {
  spdlog::info("NCCL Inspector files: pod volumes{}{}",
               o.inspector_dir.empty() ? "" : " and " + o.inspector_dir.string(),
               o.expected_bytes_per_second > 0
                   ? fmt::format(", expected network bandwidth {:.1f} GB/s ({})",
                                 o.expected_bytes_per_second / 1e9, o.instance_type)
                   : "");
}

void LogEfa(const Config& c, unsigned devices, const efa::EfaMonitorOptions& o) {
  if (devices == 0) {
    spdlog::info("EFA: absent (no EFA devices under {}/class/infiniband)", c.paths.sysfs.string());
    return;
  }
  spdlog::info("EFA: {} device(s) under {}/class/infiniband{}", devices, c.paths.sysfs.string(),
               o.health.expectation == efa::Expectation::kCount
                   ? fmt::format(", {} expected", o.health.expected_devices)
                   : "");
}

void LogResponder(const fabric::Responder* r) {
  if (r == nullptr) {
    spdlog::info("fabric responder: off (--fabric-responder=false); probes still run");
    return;
  }
  spdlog::info("fabric responder: provider {} fabric {} domain {} at {}; {}", r->info().provider,
               r->info().fabric, r->info().domain, r->printable_address(),
               r->info().source ? "answers only the real sender (FI_SOURCE)"
                                : "answers the sender a message claims (no trusted FI_SOURCE "
                                  "on this provider; docs/security.md)");
}

void LogTargets(const agent::TargetPolicyOptions& t) {
  std::vector<std::string> blocks;
  for (const auto& c : t.allowed) blocks.push_back(c.ToString());
  spdlog::info("probe targets: agents in {}{}",
               blocks.empty() ? "(none)" : absl::StrJoin(blocks, ", "),
               t.allow_loopback ? " and on loopback" : "");
}

void LogEdges(const Config& c, int metrics_port, int grpc_port) {
  spdlog::info("metrics on {} (port {}, {}), gRPC on {} (port {}, {})", c.metrics_listen,
               metrics_port, MetricsSecurity(c), c.grpc_listen, grpc_port,
               c.grpc_tls_cert.empty()        ? "plaintext"
               : c.grpc_tls_client_ca.empty() ? "TLS"
                                              : "mutual TLS");
}

}  // namespace efawatch::startup
