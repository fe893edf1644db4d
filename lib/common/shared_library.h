// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

/// A shared library the agent opens with dlopen where it is first used, instead of naming it in
/// the executable: a library named there is mapped, relocated and partly paged in at start even
/// where the feature is off (libcurl and its 17 dependencies for the Kubernetes API, libmicrohttpd
/// and GnuTLS for HTTPS /metrics, NCCL and the CUDA runtime for the NCCL probe: about 6 MiB of
/// an idle agent's RSS). The headers still come from the development packages, so every function
/// pointer keeps the library's declared type (`decltype(&fn)`).
namespace efawatch::common {

class SharedLibrary {
 public:
  /// dlopen(`soname`, RTLD_NOW | RTLD_LOCAL); the library stays loaded for the life of the
  /// process (no dlclose: its pointers live in function-local statics). FailedPrecondition naming
  /// the library and dlerror() when it cannot be opened.
  static absl::StatusOr<SharedLibrary> Open(const std::string& soname);

  /// Sets `*out` to the symbol `name` (a function, or for a variable its address).
  /// FailedPrecondition naming the library and the symbol when it is missing.
  template <typename T>
  absl::Status Bind(const char* name, T** out) const {
    auto sym = Symbol(name);
    if (!sym.ok()) return sym.status();
    *out = reinterpret_cast<T*>(*sym);
    return absl::OkStatus();
  }

  const std::string& soname() const { return soname_; }

 private:
  SharedLibrary(std::string soname, void* handle) : soname_(std::move(soname)), handle_(handle) {}
  absl::StatusOr<void*> Symbol(const char* name) const;

  std::string soname_;
  void* handle_ = nullptr;
};

/// The table of functions `Load` binds (a function returning absl::StatusOr<T>), loaded on the
/// first call in the process (thread-safe, once: a failure is kept too) and kept for its life,
/// as the pointers in it need the library to stay open.
template <auto Load>
auto LoadOnce() -> absl::StatusOr<const typename decltype(Load())::value_type*> {
  static const auto table = Load();
  if (!table.ok()) return table.status();
  return &*table;
}

}  // namespace efawatch::common
