// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "daemon/agent/node_health.h"
#include "daemon/doctor/doctor_runner.h"
#include "efawatch/v1/agent.pb.h"

// The agent's node snapshot across the API, one function each way; tests/unit/records round-trips
// it, so a field added to NodeHealth, CollectorState or PodVerdict fails there until mapped here.
namespace efawatch::rpc {

void ToProto(const common::NodeHealth& h, v1::NodeHealth* out);
common::NodeHealth FromProto(const v1::NodeHealth& in);

/// The agent's doctor report (the checks themselves cross through proto/codec/doctor).
void ToProto(const doctor::Report& r, v1::DoctorReport* out);
doctor::Report FromProto(const v1::DoctorReport& in);

}  // namespace efawatch::rpc
