// SPDX-License-Identifier: Apache-2.0
#include "proto/codec/records.h"

#include <cstdio>
#include <cstdlib>
#include <type_traits>

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

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Reflection;

// The field of v1::NcclVerdict named like the record's; a record field without one is a
// programming error that tests/unit/records catches first.
const FieldDescriptor* VerdictField(const char* name) {
  const FieldDescriptor* d = v1::NcclVerdict::descriptor()->FindFieldByName(name);
  if (d == nullptr) {
    std::fprintf(stderr, "v1.NcclVerdict has no field %s (lib/nccl/verdict.h)\n", name);
    std::abort();
  }
  return d;
}

}  // namespace

// One walk over the record's field list: each C++ type has one proto type (enums by name).
void ToProto(const nccl::Verdict& v, v1::NcclVerdict* out) {
  const Reflection* r = out->GetReflection();
  nccl::ForEachField(v, [&](const char* name, const auto& field) {
    using T = std::decay_t<decltype(field)>;
    const FieldDescriptor* d = VerdictField(name);
    if constexpr (std::is_same_v<T, bool>) {
      r->SetBool(out, d, field);
    } else if constexpr (std::is_same_v<T, std::string>) {
      r->SetString(out, d, field);
    } else if constexpr (std::is_same_v<T, int>) {
      r->SetInt32(out, d, field);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      r->SetUInt64(out, d, field);
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      for (const std::string& s : field) r->AddString(out, d, s);
    } else {
      static_assert(nccl::NamedEnum<T>, "a verdict field of a type the proto codec lacks");
      r->SetString(out, d, std::string(nccl::NameOf(field)));
    }
  });
}

nccl::Verdict FromProto(const v1::NcclVerdict& in) {
  nccl::Verdict v;
  const Reflection* r = in.GetReflection();
  nccl::ForEachField(v, [&](const char* name, auto& field) {
    using T = std::decay_t<decltype(field)>;
    const FieldDescriptor* d = VerdictField(name);
    if constexpr (std::is_same_v<T, bool>) {
      field = r->GetBool(in, d);
    } else if constexpr (std::is_same_v<T, std::string>) {
      field = r->GetString(in, d);
    } else if constexpr (std::is_same_v<T, int>) {
      field = r->GetInt32(in, d);
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      field = r->GetUInt64(in, d);
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      const int n = r->FieldSize(in, d);
      for (int i = 0; i < n; ++i) field.push_back(r->GetRepeatedString(in, d, i));
    } else {
      field = nccl::FromName<T>(r->GetString(in, d));
    }
  });
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
