// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>

// What a library says when loaded and asked (dlopen, RTLD_LOCAL): only on the machine's own
// filesystem (Target::live), never for an image under --root.
namespace efawatch::doctor {

struct LibfabricAnswer {
  std::string version;   ///< fi_version(): "1.17"
  bool efa_rdm = false;  ///< fi_getinfo found the efa provider with an RDM endpoint
  bool tcp = false;      ///< ... and the tcp provider
  std::string error;     ///< why the library could not be asked, else ""
};

LibfabricAnswer AskLibfabric(const std::string& path);

/// ncclGetVersion() of the library at `path` ("2.28.9"), nullopt when it cannot be asked.
std::optional<std::string> AskNcclVersion(const std::string& path);

}  // namespace efawatch::doctor
