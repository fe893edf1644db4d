// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lib/doctor/doctor.h"

// Finding shared libraries as the dynamic loader would, below a root, and reading what a library
// file says about itself without loading it.
namespace efawatch::doctor {

/// Directories searched for `name`, in the loader's order: LD_LIBRARY_PATH, the directories
/// of the root's /etc/ld.so.conf(.d), the EFA installer's, CUDA's, then the default ones.
std::vector<std::filesystem::path> SearchDirs(const Target& t);

/// Every file below the root matching `prefix` (e.g. "libnccl.so", "libnccl-net") in the search
/// directories and, for NCCL, the copy pip installs next to PyTorch (nvidia/nccl/lib); paths as
/// seen inside the root ("/usr/lib/..."), first the one the loader picks.
std::vector<std::string> FindLibraries(const Target& t, const std::string& prefix);

/// The file below the root for a path inside it.
std::filesystem::path InRoot(const Target& t, const std::string& path);

/// The DT_NEEDED entries of an ELF64 shared object; nullopt when the file is not one.
std::optional<std::vector<std::string>> NeededLibraries(const std::filesystem::path& file);

/// "2.28.9" from the "<version>+cuda<x.y>" string NCCL builds carry; "" when none is found.
std::string NcclVersionInFile(const std::filesystem::path& file);

/// Plugin API versions a net plugin exports (the N of each "ncclNetPlugin_vN" symbol name).
std::vector<int> NetPluginVersions(const std::filesystem::path& file);

}  // namespace efawatch::doctor
