// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "lib/common/collector.h"
#include "probes/mesh/mesh.h"

namespace efawatch::mesh {

/// Renders the mesh's latest state (efawatch_mesh_*). Reads a snapshot; never blocks on probes.
class MeshCollector final : public common::Collector {
 public:
  explicit MeshCollector(const Mesh& mesh) : mesh_(mesh) {}
  std::string_view Name() const override { return "mesh"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  const Mesh& mesh_;
};

}  // namespace efawatch::mesh
