// SPDX-License-Identifier: Apache-2.0
#include "lib/common/shared_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace efawatch::common {

absl::StatusOr<SharedLibrary> SharedLibrary::Open(const std::string& soname) {
  dlerror();  // clear a stale message
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load ", soname, ": ", why != nullptr ? why : "unknown error"));
  }
  return SharedLibrary(soname, handle);
}

absl::StatusOr<void*> SharedLibrary::Symbol(const char* name) const {
  dlerror();
  void* sym = dlsym(handle_, name);
  if (sym == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat(soname_, " has no ", name, ": ", why != nullptr ? why : "null symbol"));
  }
  return sym;
}

}  // namespace efawatch::common
