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
    if (p.stack.Known()) {
      v1::NcclStack* s = pv->mutable_stack();
      s->set_nccl_version(p.stack.nccl_version);
      s->set_net_plugin(p.stack.net_plugin);
      s->set_net_plugin_version(p.stack.net_plugin_version);
      s->set_ofi_provider(p.stack.ofi_provider);
      s->set_gdr(p.stack.gdr);
      for (const auto& [name, value] : p.stack.settings) {
        auto* kv = s->add_settings();
        kv->set_name(name);
        kv->set_value(value);
      }
      s->set_settings_fingerprint(nccl::SettingsFingerprint(p.stack));
    }
  }
  for (const auto& c : h.inspector) {
    auto* pc = out->add_inspector();
    pc->set_namespace_(c.namespace_name);
    pc->set_pod(c.pod);
    pc->set_comm_id(c.comm_id);
    pc->set_comm_name(c.comm_name);
    if (c.last_progress_unix_us > 0) {
      pc->mutable_last_progress()->set_seconds(c.last_progress_unix_us / 1'000'000);
      pc->mutable_last_progress()->set_nanos(
          static_cast<int32_t>(c.last_progress_unix_us % 1'000'000 * 1000));
    }
    pc->set_stale(c.stale);
    for (const auto& op : c.ops) {
      auto* po = pc->add_ops();
      po->set_collective(op.collective);
      po->set_size_bucket(op.size_bucket);
      po->set_count(op.count);
      po->set_exec_seconds(op.exec_seconds);
    }
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
                      .files = p.files(),
                      .stack = {}});
    if (p.has_stack()) {
      nccl::Stack& s = h.pods.back().stack;
      s.nccl_version = p.stack().nccl_version();
      s.net_plugin = p.stack().net_plugin();
      s.net_plugin_version = p.stack().net_plugin_version();
      s.ofi_provider = p.stack().ofi_provider();
      s.gdr = p.stack().gdr();
      for (const auto& kv : p.stack().settings()) s.settings.emplace_back(kv.name(), kv.value());
    }
  }
  for (const auto& c : in.inspector()) {
    inspector::CommSummary s{
        .namespace_name = c.namespace_(),
        .pod = c.pod(),
        .comm_id = c.comm_id(),
        .comm_name = c.comm_name(),
        .last_progress_unix_us = c.has_last_progress() ? c.last_progress().seconds() * 1'000'000 +
                                                             c.last_progress().nanos() / 1000
                                                       : 0,
        .stale = c.stale(),
        .ops = {}};
    for (const auto& op : c.ops()) {
      s.ops.push_back({.collective = op.collective(),
                       .size_bucket = op.size_bucket(),
                       .count = op.count(),
                       .exec_seconds = op.exec_seconds()});
    }
    h.inspector.push_back(std::move(s));
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
