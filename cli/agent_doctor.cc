// SPDX-License-Identifier: Apache-2.0
// `efawatch doctor --agent A`: the agent's doctor report over gRPC.

#include "cli/agent_doctor.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/doctor.h"
#include "proto/codec/doctor.h"

namespace efawatch::cli {
namespace {

std::vector<doctor::Check> Checks(const google::protobuf::RepeatedPtrField<v1::DoctorCheck>& in) {
  std::vector<doctor::Check> out;
  for (const auto& c : in) out.push_back(codec::FromProto(c));
  return out;
}

std::string ProcessTitle(const v1::DoctorProcess& p) {
  std::string t = "process " + std::to_string(p.pid());
  if (!p.pod().empty()) t += " of pod " + p.namespace_() + "/" + p.pod();
  return t;
}

}  // namespace

int RunAgentDoctor(const AgentConnection& conn, const std::string& format, std::ostream& out,
                   std::ostream& err) {
  auto channel = MakeChannel(conn);
  if (!channel.ok()) {
    err << "efawatch doctor: " << channel.status().message() << "\n";
    return 2;
  }
  auto stub = v1::Agent::NewStub(*channel);
  grpc::ClientContext ctx;
  // A run reads every NCCL process's libraries: allow it longer than a status call.
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::max(conn.timeout, std::chrono::milliseconds(60000)));
  v1::DoctorReport report;
  const grpc::Status st = stub->RunDoctor(&ctx, v1::RunDoctorRequest(), &report);
  if (!st.ok()) {
    err << "efawatch doctor: agent " << conn.address << " failed (" << st.error_message() << ")\n";
    return 2;
  }
  std::vector<std::pair<std::string, std::vector<doctor::Check>>> parts = {
      {"agent " + conn.address + ": node", Checks(report.node())}};
  for (const auto& p : report.processes()) parts.emplace_back(ProcessTitle(p), Checks(p.checks()));
  bool fail = false;
  if (format == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& [title, checks] : parts)
      j.push_back(nlohmann::json::parse(ChecksJson(title, checks)));
    out << j.dump(2) << "\n";
  } else {
    for (const auto& [title, checks] : parts) PrintChecks(title, checks, out);
    if (report.processes_skipped() > 0) {
      out << report.processes_skipped() << " NCCL processes not checked (cap per run)\n";
    }
  }
  for (const auto& [title, checks] : parts)
    fail = fail || doctor::Worst(checks) == doctor::Status::kFail;
  return fail ? 1 : 0;
}

}  // namespace efawatch::cli
