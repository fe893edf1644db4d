// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>

#include "efawatch/v1/agent.pb.h"
#include "lib/common/finding.h"
#include "lib/common/probe_end.h"
#include "lib/nccl/verdict.h"

// The translation of the agent's records to and from the API's messages, shared by the agent's
// gRPC edge and the CLI: one function each way per record, so a field added to a record has exactly
// one place to go here (tests/unit/records checks that every field crosses).
namespace efawatch::codec {

google::protobuf::Timestamp ToProto(std::chrono::system_clock::time_point t);
std::chrono::system_clock::time_point FromProto(const google::protobuf::Timestamp& t);

/// The verdict record and v1.NcclVerdict, field by field through the record's own field list
/// (nccl::ForEachField) and the message's descriptor: the names are the same, so a field added to
/// the record has only the proto to gain. Aborts on a record field the message lacks.
void ToProto(const nccl::Verdict& v, v1::NcclVerdict* out);
nccl::Verdict FromProto(const v1::NcclVerdict& in);

void ToProto(const common::Finding& f, v1::Finding* out);
common::Finding FromProto(const v1::Finding& in);

v1::ProbeEnd ToProto(common::ProbeEnd e);
/// PROBE_END_UNSPECIFIED (an older agent) reads as completed.
common::ProbeEnd FromProto(v1::ProbeEnd e);

/// v1::Severity and the agent's Severity share their numbers (proto/efawatch/v1/agent.proto);
/// anything the agent does not know reads as info.
common::Severity FromProto(v1::Severity s);

}  // namespace efawatch::codec
