// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "probes/collective/backend.h"

namespace efawatch::collective {

struct NcclBackendOptions {
  /// Where the probe's own NCCL_DEBUG=INFO log goes (NCCL_DEBUG_FILE, set once per process).
  std::filesystem::path log_dir = "/var/lib/efawatch";
};

/// True in builds with CUDA and NCCL (cmake/Cuda.cmake); the factory is empty otherwise, and
/// agents answer an NCCL join with FAILED_PRECONDITION saying so.
bool NcclBackendBuilt();

/// Opens the CUDA runtime and NCCL (once per process) and binds every function the backend
/// calls. The executable does not name them: they are loaded at the first NCCL join. OK where
/// both load, GPU or not; FailedPrecondition naming the library or symbol otherwise, and in
/// builds without CUDA.
absl::Status LoadNcclLibraries();

/// The NCCL backend: one rank per local GPU, communicators initialised non-blocking so a dead
/// peer ends in ncclCommAbort at the deadline, CUDA-event timing, a data check, and NCCL's own
/// log analyzed into the result.
BackendFactory NcclBackendFactory(const NcclBackendOptions& options);

/// Reads `path` from byte `offset` (what NCCL wrote during one probe) and says what NCCL picked:
/// network, transport, provider, version and findings, with the analyzer of lib/nccl.
NcclObservation ObserveNcclLog(const std::filesystem::path& path, uint64_t offset);

}  // namespace efawatch::collective
