// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <rdma/fabric.h>

#include <memory>

namespace efawatch::fabric {

/// Closes any libfabric object through its embedded `struct fid`. A failing fi_close cannot be
/// handled during destruction, and the object is unusable afterwards either way, so the result is
/// dropped.
struct FidCloser {
  template <typename T>
  void operator()(T* obj) const {
    if (obj != nullptr) fi_close(&obj->fid);
  }
};

/// Owns one libfabric object (fid_fabric, fid_domain, fid_cq, fid_av, fid_ep, fid_mr).
/// Members holding these must be declared in opening order so that they close in reverse.
template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser>;

struct InfoDeleter {
  void operator()(fi_info* info) const { fi_freeinfo(info); }
};

/// Owns an fi_info list (from fi_allocinfo, fi_getinfo or fi_dupinfo).
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

}  // namespace efawatch::fabric
