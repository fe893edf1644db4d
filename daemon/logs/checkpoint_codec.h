// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/logs/container_verdict.h"
#include "lib/common/finding.h"
#include "lib/nccl/verdict.h"

// The checkpoint's JSON edge: one function each way per record. Loading never throws: a field
// that is missing or of the wrong type reads as its default. Whole files of the wrong shape are
// refused before this (json_shape.h, Tailer::LoadCheckpoint).
namespace efawatch::logs {

/// Writes every field of `v` into `out` (an object), under the names ForEachField gives.
void VerdictToJson(const nccl::Verdict& v, nlohmann::json& out);
nccl::Verdict VerdictFromJson(const nlohmann::json& in);

/// A container's communicator series: an array of objects, one per communicator.
nlohmann::json CommunicatorsToJson(const std::vector<CommunicatorSeries>& comms);
std::vector<CommunicatorSeries> CommunicatorsFromJson(const nlohmann::json& in);

/// A container as the checkpoint keeps it: its source, counts, verdict, communicator series
/// (all in `verdict`; `gone` is not kept) and its findings.
struct SavedContainer {
  std::string key;
  ContainerVerdict verdict;
  std::vector<common::Finding> findings;
};
nlohmann::json ContainerToJson(const SavedContainer& c);
SavedContainer ContainerFromJson(const nlohmann::json& in);
/// True when `j` is an array of containers of the shape ContainerToJson writes.
bool ContainersHaveShape(const nlohmann::json& j);

/// A finding as the checkpoint keeps it. first_seen/last_seen are not kept: the findings board
/// sets them when the restored finding is published again.
nlohmann::json FindingToJson(const common::Finding& f);
common::Finding FindingFromJson(const nlohmann::json& in);

}  // namespace efawatch::logs
