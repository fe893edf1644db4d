// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/report_json.h"

#include <cstdint>
#include <string>

#include "lib/common/utf8.h"

namespace efawatch::nccl {
namespace {

// Log text is arbitrary bytes; JSON strings must be UTF-8 (nlohmann throws on dump otherwise).
// Invalid sequences become U+FFFD.
std::string Utf8(const std::string& in) { return common::ToValidUtf8(in); }

nlohmann::json Str(const std::string& s) { return nlohmann::json(Utf8(s)); }

nlohmann::json OrNull(const std::string& s) { return s.empty() ? nlohmann::json() : Str(s); }
nlohmann::json OrNull(int v) { return v < 0 ? nlohmann::json() : nlohmann::json(v); }

}  // namespace

nlohmann::json ReportToJson(const Report& report) {
  nlohmann::json processes = nlohmann::json::array();
  for (const Process& p : report.processes) {
    nlohmann::json comms = nlohmann::json::array();
    for (const Communicator& c : p.communicators) {
      nlohmann::json transports = nlohmann::json::object();
      for (const auto& [name, count] : c.transports) transports[Utf8(name)] = count;
      comms.push_back({{"id", Str(c.id)},
                       {"rank", OrNull(c.rank)},
                       {"nranks", OrNull(c.nranks)},
                       {"nnodes", OrNull(c.nnodes)},
                       {"cuda_dev", OrNull(c.cuda_dev)},
                       {"bus_id", OrNull(c.bus_id)},
                       {"init_complete", c.init_complete},
                       {"aborted", c.aborted},
                       {"transports", transports}});
    }
    nlohmann::json settings = nlohmann::json::object();
    for (const auto& [name, value] : p.settings) settings[Utf8(name)] = Utf8(value);
    processes.push_back({{"host", Str(p.host)},
                         {"pid", p.pid},
                         {"source", Str(p.source)},
                         {"nccl_version", OrNull(p.nccl_version)},
                         {"cuda_version", OrNull(p.cuda_version)},
                         {"net_plugin", OrNull(p.net_plugin)},
                         {"net_plugin_state", OrNull(p.net_plugin_state)},
                         {"network", OrNull(p.network)},
                         {"network_family", OrNull(p.network_family)},
                         {"ofi_provider", OrNull(p.ofi_provider)},
                         {"ofi_fabric", OrNull(p.ofi_fabric)},
                         {"ofi_nics", OrNull(p.ofi_nics)},
                         {"instance_type", OrNull(p.instance_type)},
                         {"bootstrap_interface", OrNull(p.bootstrap_interface)},
                         {"bootstrap_address", OrNull(p.bootstrap_address)},
                         {"gdr", Str(p.gdr)},
                         {"settings", settings},
                         {"warnings", p.warnings},
                         {"errors", p.errors},
                         {"communicators", comms}});
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : report.findings) {
    findings.push_back({{"kind", Str(f.kind)},
                        {"severity", SeverityName(f.severity)},
                        {"host", Str(f.host)},
                        {"pid", f.pid},
                        {"message", Str(f.message)},
                        {"count", f.count},
                        {"evidence",
                         {{"file", Str(f.evidence.source)},
                          {"line", f.evidence.line},
                          {"text", Str(f.evidence.text)}}}});
  }
  const Summary& s = report.summary;
  const Verdict& v = s.verdict;
  nlohmann::json summary = {
      {"verdict", Str(s.headline)},
      {"tcp_fallback", v.tcp_fallback},
      {"tcp_deliberate", v.tcp_deliberate},
      {"loopback_misuse", v.loopback_misuse},
      {"net_plugin_missing", v.net_plugin_missing},
      {"gdr_disabled", v.gdr_disabled},
      {"network", Str(v.network)},
      {"network_family", Str(std::string(NameOf(v.family)))},
      {"ofi_provider", Str(v.ofi_provider)},
      {"nccl_version", Str(v.nccl_version)},
      {"inter_node_transport", Str(v.transport)},
      {"gdr", Str(std::string(NameOf(v.gdr)))},
      {"nodes", OrNull(v.nodes)},
      {"ranks", OrNull(v.ranks)},
      {"nodes_evidence", Str(std::string(NameOf(v.nodes_evidence)))},
      {"nodes_proof", s.nodes_rule.empty() ? nlohmann::json()
                                           : nlohmann::json{{"rule", Str(s.nodes_rule)},
                                                            {"file", Str(s.nodes_proof.source)},
                                                            {"line", s.nodes_proof.line},
                                                            {"text", Str(s.nodes_proof.text)}}},
      {"lines", s.lines},
      {"nccl_lines", s.nccl_lines},
      {"malformed_lines", s.malformed_lines},
      {"warn_records", s.warn_records}};
  // Only where Ray folded lines: the JSON of every other log stays as it was.
  if (s.ray_repeated_lines != 0) summary["ray_repeated_lines"] = s.ray_repeated_lines;
  return {{"processes", processes}, {"findings", findings}, {"summary", summary}};
}

}  // namespace efawatch::nccl
