// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "efawatch/v1/agent.pb.h"
#include "lib/doctor/doctor.h"

// lib/doctor's check record across the API, one function each way (tests/unit/records).
namespace efawatch::codec {

void ToProto(const doctor::Check& c, v1::DoctorCheck* out);
doctor::Check FromProto(const v1::DoctorCheck& in);

/// "PASS" ... "SKIP" back to the status; anything else reads as SKIP.
doctor::Status DoctorStatusFromName(std::string_view name);

}  // namespace efawatch::codec
