// SPDX-License-Identifier: Apache-2.0
#include "daemon/rpc/node_health_codec.h"

#include "proto/codec/doctor.h"
#include "proto/codec/records.h"

namespace efawatch::rpc {

using codec::FromProto;
using codec::ToProto;

void ToProto(const common::NodeHealth& h, v1::NodeHealth* out) {
  out->set_node(h.node);
  out->set_agent_version(h.agent_version);
  out->set_agent_revision(h.agent_revision);
  *out->mutable_start_time() = ToProto(h.start_time);
  for (const auto& c : h.collectors) {
    auto* pc = out->add_collectors();
    pc->set_name(c.name);
    pc->set_ok(c.ok);
    pc->set_last_error(c.last_error);
    if (c.last_run.time_since_epoch().count() != 0) *pc->mutable_last_run() = ToProto(c.last_run);
    pc->set_last_duration_seconds(c.last_duration_seconds);
  }
  for (const auto& f : h.findings) ToProto(f, out->add_findings());
  out->set_fabric_provider(h.fabric_provider);
  out->set_efa_devices(h.efa_devices);
  for (const auto& p : h.pods) {
    auto* pv = out->add_pods();
    pv->set_namespace_(p.namespace_name);
    pv->set_pod(p.pod);
    pv->set_container(p.container);
    pv->set_workload_kind(p.workload_kind);
    pv->set_workload(p.workload);
    pv->set_source(p.source);
    pv->set_files(p.files);
    ToProto(p.nccl, pv->mutable_nccl());
  }
}

common::NodeHealth FromProto(const v1::NodeHealth& in) {
  common::NodeHealth h;
  h.node = in.node();
  h.agent_version = in.agent_version();
  h.agent_revision = in.agent_revision();
  h.start_time = FromProto(in.start_time());
  for (const auto& c : in.collectors()) {
    h.collectors.push_back({.name = c.name(),
                            .ok = c.ok(),
                            .last_error = c.last_error(),
                            .last_run = c.has_last_run() ? FromProto(c.last_run())
                                                         : std::chrono::system_clock::time_point{},
                            .last_duration_seconds = c.last_duration_seconds()});
  }
  for (const auto& f : in.findings()) h.findings.push_back(FromProto(f));
  h.fabric_provider = in.fabric_provider();
  h.efa_devices = in.efa_devices();
  for (const auto& p : in.pods()) {
    h.pods.push_back({.namespace_name = p.namespace_(),
                      .pod = p.pod(),
                      .container = p.container(),
                      .nccl = FromProto(p.nccl()),
                      .workload_kind = p.workload_kind(),
                      .workload = p.workload(),
                      .source = p.source(),
                      .files = p.files()});
  }
  return h;
}

void ToProto(const doctor::Report& r, v1::DoctorReport* out) {
  *out->mutable_ran_at() = ToProto(r.ran_at);
  for (const doctor::Check& c : r.node) ToProto(c, out->add_node());
  for (const doctor::ProcessReport& p : r.processes) {
    auto* pp = out->add_processes();
    pp->set_pid(static_cast<uint32_t>(p.pid));
    pp->set_namespace_(p.namespace_name);
    pp->set_pod(p.pod);
    pp->set_container_id(p.container_id);
    for (const doctor::Check& c : p.checks) ToProto(c, pp->add_checks());
  }
  out->set_processes_skipped(r.processes_skipped);
}

doctor::Report FromProto(const v1::DoctorReport& in) {
  doctor::Report r;
  r.ran_at = FromProto(in.ran_at());
  for (const auto& c : in.node()) r.node.push_back(FromProto(c));
  for (const auto& pp : in.processes()) {
    doctor::ProcessReport p{.pid = static_cast<pid_t>(pp.pid()),
                            .namespace_name = pp.namespace_(),
                            .pod = pp.pod(),
                            .container_id = pp.container_id(),
                            .checks = {}};
    for (const auto& c : pp.checks()) p.checks.push_back(FromProto(c));
    r.processes.push_back(std::move(p));
  }
  r.processes_skipped = in.processes_skipped();
  return r;
}

}  // namespace efawatch::rpc
