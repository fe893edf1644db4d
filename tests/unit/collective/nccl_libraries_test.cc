// SPDX-License-Identifier: Apache-2.0
// The NCCL backend's libraries are opened at run time (dlopen), not named in the executable: a
// build with NCCL must still find and bind every function it calls, GPU or not. On a machine
// without a GPU the GPU test skips, so this is where a missing symbol or a wrong library name
// shows.
#include <gtest/gtest.h>

#include "probes/collective/nccl_backend.h"

namespace efawatch::collective {
namespace {

TEST(NcclLibrariesTest, OpenAndBindWhereBuiltWithNccl) {
  const absl::Status st = LoadNcclLibraries();
  if (NcclBackendBuilt()) {
    EXPECT_TRUE(st.ok()) << st;
  } else {
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  }
  // Loaded once: a second call answers the same.
  EXPECT_EQ(LoadNcclLibraries().code(), st.code());
}

}  // namespace
}  // namespace efawatch::collective
