// SPDX-License-Identifier: Apache-2.0
#include "cli/status.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <iomanip>
#include <nlohmann/json.hpp>

#include "absl/time/time.h"
#include "lib/nccl/stack.h"
#include "proto/codec/records.h"

namespace efawatch::cli {
namespace {

std::string_view SeverityText(v1::Severity s) { return common::SeverityName(codec::FromProto(s)); }

// "NCCL 2.27.5, aws-ofi-nccl 1.14.0, provider efa, GDR on, NCCL_PROTO=simple, other settings
// 1a2b3c4d": what the fleet's EfawatchNcclJobInconsistent compares across a job's pods.
std::string StackLine(const v1::NcclStack& s) {
  std::string line = "NCCL " + (s.nccl_version().empty() ? "?" : s.nccl_version());
  if (!s.net_plugin().empty()) {
    line += ", " + s.net_plugin() +
            (s.net_plugin_version().empty() ? "" : " " + s.net_plugin_version());
  }
  if (!s.ofi_provider().empty()) line += ", provider " + s.ofi_provider();
  line += ", GDR " + (s.gdr().empty() ? std::string("unknown") : s.gdr());
  for (const auto& kv : s.settings()) {
    for (std::string_view name : nccl::kLabelledSettings) {
      if (kv.name() == name) line += ", " + kv.name() + "=" + kv.value();
    }
  }
  if (!s.settings_fingerprint().empty()) line += ", other settings " + s.settings_fingerprint();
  return line;
}

void PrintText(const v1::NodeHealth& h, std::ostream& out) {
  out << "node:     " << h.node() << "\n"
      << "agent:    " << h.agent_version() << " (" << h.agent_revision() << ")\n"
      << "started:  "
      << absl::FormatTime(absl::RFC3339_sec, absl::FromUnixSeconds(h.start_time().seconds()),
                          absl::UTCTimeZone())
      << "\n"
      << "efa:      "
      << (h.efa_devices() == 0 ? std::string("absent") : std::to_string(h.efa_devices())) << "\n"
      << "fabric:   " << (h.fabric_provider().empty() ? "-" : h.fabric_provider()) << "\n"
      << "collectors:\n";
  for (const auto& c : h.collectors()) {
    out << "  " << std::left << std::setw(20) << c.name() << (c.ok() ? "ok" : "FAILED");
    if (!c.last_error().empty()) out << "  " << c.last_error();
    out << "\n";
  }
  out << "nccl pods: " << (h.pods().empty() ? "none" : "") << "\n";
  for (const auto& p : h.pods()) {
    const nccl::Verdict v = codec::FromProto(p.nccl());
    out << "  " << p.namespace_() << "/" << p.pod() << "/" << p.container() << "  NCCL "
        << (v.nccl_version.empty() ? "?" : v.nccl_version)
        << (p.workload().empty() ? "" : "  " + p.workload_kind() + " " + p.workload())
        << (p.source().empty() ? ""
                               : "  from " + p.source() + " (" + std::to_string(p.files()) +
                                     (p.files() == 1 ? " file)" : " files)"))
        << "\n    " << nccl::VerdictHeadline(v) << "\n";
    if (p.has_stack()) out << "    stack: " << StackLine(p.stack()) << "\n";
  }
  // The node's side of the fleet's stall and straggler alerts: Prometheus compares these across
  // the job's nodes (a job's median time per operation, its newest progress).
  out << "nccl inspector: " << (h.inspector().empty() ? "none" : "") << "\n";
  for (const auto& c : h.inspector()) {
    out << "  " << (c.pod().empty() ? "(no pod)" : c.namespace_() + "/" + c.pod()) << "  comm "
        << (c.comm_id().empty() ? "named " + c.comm_name() : c.comm_id());
    if (c.has_last_progress()) {
      const absl::Duration age = absl::Now() - absl::FromUnixSeconds(c.last_progress().seconds());
      out << "  last progress " << absl::FormatDuration(absl::Trunc(age, absl::Seconds(1)))
          << " ago" << (c.stale() ? " (STALE)" : "");
    }
    out << "\n";
    for (const auto& op : c.ops()) {
      out << "    " << op.collective() << " " << op.size_bucket() << ": " << op.count() << " ops";
      if (op.count() > 0) {
        out << ", " << std::fixed << std::setprecision(3)
            << op.exec_seconds() * 1000 / static_cast<double>(op.count()) << " ms/op"
            << std::defaultfloat;
      }
      out << "\n";
    }
  }
  out << "findings: " << (h.findings().empty() ? "none" : "") << "\n";
  for (const auto& f : h.findings()) {
    out << "  [" << SeverityText(f.severity()) << "] " << f.kind() << " " << f.subject() << ": "
        << f.message() << "\n";
  }
}

// A pod in `status --format json` as since its first version: the verdict's keys beside the
// pod's names, in this order (the API nests the verdict in `nccl`). Scripts read these; the
// whole verdict is in the API and in the text's headline.
constexpr std::string_view kJsonPodKeys[] = {
    "namespace",          "pod",          "container",     "tcp_fallback",   "loopback_misuse",
    "net_plugin_missing", "gdr_disabled", "network",       "transport",      "ofi_provider",
    "nccl_version",       "processes",    "communicators", "nodes_evidence", "workload_kind",
    "workload",           "source",       "files",         "tcp_deliberate", "stack"};

std::string FlatPods(const std::string& json) {
  auto doc = nlohmann::ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("pods")) return json;
  for (auto& pod : doc["pods"]) {
    const nlohmann::ordered_json verdict = pod.value("nccl", nlohmann::ordered_json::object());
    nlohmann::ordered_json flat = nlohmann::ordered_json::object();
    for (std::string_view k : kJsonPodKeys) {
      const std::string key(k);
      flat[key] = pod.contains(key) ? pod[key] : verdict.value(key, nlohmann::ordered_json());
    }
    pod = std::move(flat);
  }
  return doc.dump();
}

}  // namespace

int RunStatus(const AgentConnection& conn, const std::string& format, std::ostream& out,
              std::ostream& err) {
  if (format != "text" && format != "json") {
    err << "efawatch status: --format must be text or json\n";
    return 2;
  }
  auto channel = MakeChannel(conn);
  if (!channel.ok()) {
    err << "efawatch status: " << channel.status().message() << "\n";
    return 2;
  }
  auto stub = v1::Agent::NewStub(*channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + conn.timeout);
  v1::NodeHealth health;
  grpc::Status st = stub->GetNodeHealth(&ctx, v1::GetNodeHealthRequest(), &health);
  if (!st.ok()) {
    err << "efawatch status: agent " << conn.address << " unreachable or failing ("
        << st.error_message() << ")" << SecurityHint(st, conn) << "\n";
    return 1;
  }
  if (format == "json") {
    std::string json;
    google::protobuf::util::JsonPrintOptions opts;
    opts.always_print_primitive_fields = true;
    opts.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(health, &json, opts);
    out << FlatPods(json) << "\n";
  } else {
    PrintText(health, out);
  }
  return 0;
}

}  // namespace efawatch::cli
