#include "daemon/nccl/report_json.h"

namespace efawatch::nccl {
namespace {

nlohmann::json OrNull(const std::string& s) {
  return s.empty() ? nlohmann::json() : nlohmann::json(s);
}
nlohmann::json OrNull(int v) { return v < 0 ? nlohmann::json() : nlohmann::json(v); }

}  // namespace

nlohmann::json ReportToJson(const Report& report) {
  nlohmann::json processes = nlohmann::json::array();
  for (const Process& p : report.processes) {
    nlohmann::json comms = nlohmann::json::array();
    for (const Communicator& c : p.communicators) {
      nlohmann::json transports = nlohmann::json::object();
      for (const auto& [name, count] : c.transports) transports[name] = count;
      comms.push_back({{"id", c.id},
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
    for (const auto& [name, value] : p.settings) settings[name] = value;
    processes.push_back({{"host", p.host},
                         {"pid", p.pid},
                         {"source", p.source},
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
                         {"gdr", p.gdr},
                         {"settings", settings},
                         {"warnings", p.warnings},
                         {"errors", p.errors},
                         {"communicators", comms}});
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : report.findings) {
    findings.push_back(
        {{"kind", f.kind},
         {"severity", SeverityName(f.severity)},
         {"host", f.host},
         {"pid", f.pid},
         {"message", f.message},
         {"count", f.count},
         {"evidence",
          {{"file", f.evidence.file}, {"line", f.evidence.line}, {"text", f.evidence.text}}}});
  }
  const Summary& s = report.summary;
  nlohmann::json summary = {{"verdict", s.verdict},
                            {"tcp_fallback", s.tcp_fallback},
                            {"loopback_misuse", s.loopback_misuse},
                            {"net_plugin_missing", s.net_plugin_missing},
                            {"gdr_disabled", s.gdr_disabled},
                            {"network", s.network},
                            {"network_family", s.network_family},
                            {"ofi_provider", s.ofi_provider},
                            {"nccl_version", s.nccl_version},
                            {"inter_node_transport", s.inter_node_transport},
                            {"gdr", s.gdr},
                            {"nodes", OrNull(s.nodes)},
                            {"ranks", OrNull(s.ranks)},
                            {"lines", s.lines},
                            {"nccl_lines", s.nccl_lines},
                            {"malformed_lines", s.malformed_lines},
                            {"warn_records", s.warn_records}};
  return {{"processes", processes}, {"findings", findings}, {"summary", summary}};
}

}  // namespace efawatch::nccl
