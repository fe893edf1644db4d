// SPDX-License-Identifier: Apache-2.0
// A stand-in libfabric for the doctor's efa-provider check: the four calls the check makes, with
// an efa provider that answers (no machine here has one). Loaded by path with dlopen only.
#include <rdma/fabric.h>

#include <cstdlib>
#include <cstring>

namespace {

// Called directly, not through fi_dupinfo: a call to an exported name inside this library would
// bind to the real libfabric the test program is linked with.
fi_info* NewInfo() {
  auto* i = static_cast<fi_info*>(calloc(1, sizeof(fi_info)));
  i->ep_attr = static_cast<fi_ep_attr*>(calloc(1, sizeof(fi_ep_attr)));
  i->fabric_attr = static_cast<fi_fabric_attr*>(calloc(1, sizeof(fi_fabric_attr)));
  return i;
}

}  // namespace

extern "C" {

uint32_t fi_version() { return FI_VERSION(1, 99); }

struct fi_info* fi_dupinfo(const struct fi_info* /*info*/) {
  return NewInfo();
}

void fi_freeinfo(struct fi_info* info) {
  if (info == nullptr) return;
  if (info->fabric_attr != nullptr) free(info->fabric_attr->prov_name);
  free(info->fabric_attr);
  free(info->ep_attr);
  free(info);
}

int fi_getinfo(uint32_t /*version*/, const char* /*node*/, const char* /*service*/,
               uint64_t /*flags*/, const struct fi_info* hints, struct fi_info** info) {
  *info = nullptr;
  const char* prov =
      hints != nullptr && hints->fabric_attr != nullptr ? hints->fabric_attr->prov_name : nullptr;
  if (prov == nullptr || strcmp(prov, "efa") != 0) return -FI_ENODATA;
  *info = NewInfo();
  return 0;
}
}
