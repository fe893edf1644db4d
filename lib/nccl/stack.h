// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/nccl/types.h"

namespace efawatch::nccl {

/// The software stack a container's NCCL log shows: what must be the same on every pod of one
/// job (a pod with another NCCL, aws-ofi-nccl, provider, GPUDirect RDMA or NCCL_* setting is a
/// classic cause of hangs and slow rings). Kept beside the Verdict, not in it: it judges nothing
/// by itself; the fleet's rules compare it across a job's pods (EfawatchNcclJobInconsistent).
/// Plain data.
struct Stack {
  std::string nccl_version;        // "2.27.5"; "" unknown
  std::string net_plugin;          // "aws-ofi-nccl", "IBext", "none" (NCCL's own nets); ""
  std::string net_plugin_version;  // aws-ofi-nccl's own "1.9.1-aws"; "" unknown or another
  std::string ofi_provider;        // "efa", "tcp;ofi_rxm"; "" when none was selected
  std::string gdr;                 // NameOf(Gdr): "on", "off", "partial", "unknown"
  /// The NCCL_* and FI_* settings the log echoes ("... set by environment to ..."), by name,
  /// each once (the first process that printed it wins), at most kMaxStackSettings.
  std::vector<std::pair<std::string, std::string>> settings;

  /// True when the log showed any of it (an agent that reads only a job's later lines, without
  /// a checkpoint of its start, sees none: no stack is better than one that differs from its
  /// job's for that reason).
  bool Known() const;
  bool operator==(const Stack&) const = default;
};

inline constexpr size_t kMaxStackSettings = 64;

/// The settings exported as labels of their own (lower-case names): those that change how a
/// job's collectives run on EFA and that users set per job. The rest go into the fingerprint.
inline constexpr std::array<std::string_view, 3> kLabelledSettings = {"NCCL_ALGO", "NCCL_PROTO",
                                                                      "FI_EFA_USE_DEVICE_RDMA"};

/// The stack of `report`'s processes: the verdict's NCCL version, provider and GDR; the first
/// process's net plugin that names one; the union of the settings.
Stack StackOf(const Report& report);

/// Fills what `s` does not know from `earlier` (the stack a checkpoint kept from before an agent
/// restart, whose start lines are not read again): empty names taken, settings joined (this
/// run's value wins), kept sorted and bounded.
void FillFromEarlier(Stack& s, const Stack& earlier);

/// A setting's value in `stack`, "" when not set.
std::string_view SettingValue(const Stack& stack, std::string_view name);

/// A short, stable hash (8 hex digits, FNV-1a over "NAME=value\n" in name order) of the settings
/// that are neither labels of their own (kLabelledSettings) nor different on each rank by nature
/// (NCCL_HOSTID, NCCL_DEBUG*, the debug file's name). "" when there are none. One value per
/// configuration: a bounded label, equal on every pod of a consistently configured job.
std::string SettingsFingerprint(const Stack& stack);

}  // namespace efawatch::nccl
