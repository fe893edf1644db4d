#include "proto/codec/records.h"

namespace efawatch::codec {

google::protobuf::Timestamp ToProto(std::chrono::system_clock::time_point t) {
  google::protobuf::Timestamp ts;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  ts.set_seconds(ns.count() / 1'000'000'000);
  ts.set_nanos(static_cast<int>(ns.count() % 1'000'000'000));
  return ts;
}

std::chrono::system_clock::time_point FromProto(const google::protobuf::Timestamp& t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(t.seconds()) + std::chrono::nanoseconds(t.nanos())));
}

void ToProto(const nccl::Verdict& v, v1::PodVerdict* out) {
  out->set_tcp_fallback(v.tcp_fallback);
  out->set_tcp_deliberate(v.tcp_deliberate);
  out->set_loopback_misuse(v.loopback_misuse);
  out->set_net_plugin_missing(v.net_plugin_missing);
  out->set_gdr_disabled(v.gdr_disabled);
  out->set_network(v.network);
  out->set_transport(v.transport);
  out->set_ofi_provider(v.ofi_provider);
  out->set_nccl_version(v.nccl_version);
  out->set_nodes_evidence(v.nodes_evidence);
  out->set_processes(v.processes);
  out->set_communicators(v.communicators);
}

nccl::Verdict FromProto(const v1::PodVerdict& in) {
  nccl::Verdict v;
  v.tcp_fallback = in.tcp_fallback();
  v.tcp_deliberate = in.tcp_deliberate();
  v.loopback_misuse = in.loopback_misuse();
  v.net_plugin_missing = in.net_plugin_missing();
  v.gdr_disabled = in.gdr_disabled();
  v.network = in.network();
  v.transport = in.transport();
  v.ofi_provider = in.ofi_provider();
  v.nccl_version = in.nccl_version();
  v.nodes_evidence = in.nodes_evidence();
  v.processes = in.processes();
  v.communicators = in.communicators();
  return v;
}

void ToProto(const common::Finding& f, v1::Finding* out) {
  out->set_kind(f.kind);
  out->set_severity(static_cast<v1::Severity>(static_cast<int>(f.severity)));
  out->set_subject(f.subject);
  out->set_message(f.message);
  out->mutable_evidence()->set_source(f.evidence.source);
  out->mutable_evidence()->set_line(f.evidence.line);
  out->mutable_evidence()->set_text(f.evidence.text);
  *out->mutable_first_seen() = ToProto(f.first_seen);
  *out->mutable_last_seen() = ToProto(f.last_seen);
}

common::ProbeEnd FromProto(v1::ProbeEnd e) {
  switch (e) {
    case v1::PROBE_END_DEADLINE_EXCEEDED:
      return common::ProbeEnd::kDeadlineExceeded;
    case v1::PROBE_END_PEER_TIMED_OUT:
      return common::ProbeEnd::kPeerTimedOut;
    case v1::PROBE_END_CANCELLED:
      return common::ProbeEnd::kCancelled;
    default:
      return common::ProbeEnd::kCompleted;
  }
}

common::Severity FromProto(v1::Severity s) {
  switch (s) {
    case v1::SEVERITY_WARNING:
      return common::Severity::kWarning;
    case v1::SEVERITY_CRITICAL:
      return common::Severity::kCritical;
    default:
      return common::Severity::kInfo;
  }
}

common::Finding FromProto(const v1::Finding& in) {
  common::Finding f;
  f.kind = in.kind();
  f.severity = FromProto(in.severity());
  f.subject = in.subject();
  f.message = in.message();
  f.evidence.source = in.evidence().source();
  f.evidence.line = in.evidence().line();
  f.evidence.text = in.evidence().text();
  f.first_seen = FromProto(in.first_seen());
  f.last_seen = FromProto(in.last_seen());
  return f;
}

v1::ProbeEnd ToProto(common::ProbeEnd e) {
  switch (e) {
    case common::ProbeEnd::kCompleted:
      return v1::PROBE_END_COMPLETED;
    case common::ProbeEnd::kDeadlineExceeded:
      return v1::PROBE_END_DEADLINE_EXCEEDED;
    case common::ProbeEnd::kPeerTimedOut:
      return v1::PROBE_END_PEER_TIMED_OUT;
    case common::ProbeEnd::kCancelled:
      return v1::PROBE_END_CANCELLED;
  }
  return v1::PROBE_END_UNSPECIFIED;
}

}  // namespace efawatch::codec
