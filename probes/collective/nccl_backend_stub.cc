// SPDX-License-Identifier: Apache-2.0
// Built when CUDA or NCCL is missing: the NCCL backend is visibly absent.

#include "probes/collective/nccl_backend.h"

namespace efawatch::collective {

bool NcclBackendBuilt() { return false; }

absl::Status LoadNcclLibraries() {
  return absl::FailedPreconditionError("built without CUDA and NCCL");
}

BackendFactory NcclBackendFactory(const NcclBackendOptions& /*options*/) { return {}; }

}  // namespace efawatch::collective
