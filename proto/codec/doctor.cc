// SPDX-License-Identifier: Apache-2.0
#include "proto/codec/doctor.h"

namespace efawatch::codec {

void ToProto(const doctor::Check& c, v1::DoctorCheck* out) {
  out->set_id(c.id);
  out->set_status(std::string(doctor::StatusName(c.status)));
  out->set_summary(c.summary);
  out->set_evidence(c.evidence);
  out->set_fix(c.fix);
}

doctor::Status DoctorStatusFromName(std::string_view name) {
  for (doctor::Status s : {doctor::Status::kPass, doctor::Status::kWarn, doctor::Status::kFail}) {
    if (doctor::StatusName(s) == name) return s;
  }
  return doctor::Status::kSkip;
}

doctor::Check FromProto(const v1::DoctorCheck& in) {
  return {.id = in.id(),
          .status = DoctorStatusFromName(in.status()),
          .summary = in.summary(),
          .evidence = in.evidence(),
          .fix = in.fix()};
}

}  // namespace efawatch::codec
