// SPDX-License-Identifier: Apache-2.0
#include "lib/doctor/loaded.h"

#include <dlfcn.h>
#include <rdma/fabric.h>

#include <cstring>

namespace efawatch::doctor {
namespace {

using FiVersion = uint32_t (*)();
using FiGetinfo = int (*)(uint32_t, const char*, const char*, uint64_t, const struct fi_info*,
                          struct fi_info**);
using FiDupinfo = struct fi_info* (*)(const struct fi_info*);
using FiFreeinfo = void (*)(struct fi_info*);

// Whether `prov` offers an RDM endpoint through the library's own fi_getinfo.
bool HasProvider(void* lib, uint32_t api, const char* prov) {
  auto getinfo = reinterpret_cast<FiGetinfo>(dlsym(lib, "fi_getinfo"));
  auto dupinfo = reinterpret_cast<FiDupinfo>(dlsym(lib, "fi_dupinfo"));
  auto freeinfo = reinterpret_cast<FiFreeinfo>(dlsym(lib, "fi_freeinfo"));
  if (getinfo == nullptr || dupinfo == nullptr || freeinfo == nullptr) return false;
  struct fi_info* hints = dupinfo(nullptr);  // what fi_allocinfo() expands to
  if (hints == nullptr) return false;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  hints->fabric_attr->prov_name = strdup(prov);  // freed by fi_freeinfo
  struct fi_info* info = nullptr;
  const int rc = getinfo(api, nullptr, nullptr, 0, hints, &info);
  freeinfo(hints);
  if (info != nullptr) freeinfo(info);
  return rc == 0;
}

}  // namespace

LibfabricAnswer AskLibfabric(const std::string& path) {
  LibfabricAnswer a;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    a.error = e != nullptr ? e : "dlopen failed";
    return a;
  }
  auto version = reinterpret_cast<FiVersion>(dlsym(lib, "fi_version"));
  if (version == nullptr) {
    a.error = "no fi_version symbol";
  } else {
    const uint32_t v = version();
    a.version = std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
    // Ask with the library's own API version: it accepts its own, whatever our headers are.
    a.efa_rdm = HasProvider(lib, v, "efa");
    a.tcp = HasProvider(lib, v, "tcp");
  }
  // Kept loaded: providers register atexit handlers, and unloading them first crashes at exit.
  return a;
}

std::optional<std::string> AskNcclVersion(const std::string& path) {
  void* lib = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) return std::nullopt;
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(dlsym(lib, "ncclGetVersion"));
  int code = 0;
  if (get == nullptr || get(&code) != 0 || code <= 0) return std::nullopt;
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 before.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace efawatch::doctor
