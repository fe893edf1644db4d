// SPDX-License-Identifier: Apache-2.0
#include "lib/doctor/known_bad.h"

#include <algorithm>
#include <functional>

namespace efawatch::doctor {
namespace {

bool Exports(const Versions& v, int lo, int hi) {
  return std::any_of(v.plugin.begin(), v.plugin.end(), [&](int p) { return p >= lo && p <= hi; });
}

struct Row {
  KnownBad what;
  std::function<bool(const Versions&)> matches;
};

// function-length: table
const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = {
      {{"nccl_2.19_plugin_v4",
        "NCCL 2.19.1 and later load only net plugin API v5 and newer; this plugin exports v4 or "
        "older only, so NCCL falls back to its own transports (Socket on EFA)",
        "install an aws-ofi-nccl release built for this NCCL",
        "NCCL src/net.cc: \"Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols "
        "v4 and lower are not supported.\" (2.19.1-2.25.1)"},
       [](const Versions& v) {
         return VersionCode(v.nccl) >= 21901 && !v.plugin.empty() && !Exports(v, 5, 1000);
       }},
      {{"nccl_2.13_plugin_v6",
        "NCCL 2.13.4 to 2.18.6 look for net plugin API v4 or v5 only; this plugin exports "
        "neither, so NCCL falls back to its own transports",
        "use an aws-ofi-nccl release that still exports v5, or a newer NCCL",
        "NCCL src/net.cc: \"Failed to find ncclNetPlugin symbol (v4 or v5).\" (2.13.4-2.18.6)"},
       [](const Versions& v) {
         const int c = VersionCode(v.nccl);
         return c >= 21304 && c <= 21806 && !v.plugin.empty() && !Exports(v, 4, 5);
       }},
      {{"g_series_device_rdma",
        "G-series instances have no GPUDirect RDMA over EFA; FI_EFA_USE_DEVICE_RDMA=1 asks for it",
        "unset FI_EFA_USE_DEVICE_RDMA on G-series instances",
        "aws-ofi-nccl#547: only P-series instance types from p4d on support GPUDirect RDMA"},
       [](const Versions& v) {
         return v.instance_type.starts_with("g") && v.efa_use_device_rdma == "1";
       }},
  };
  return rows;
}

}  // namespace

int VersionCode(const std::string& version) {
  int parts[3] = {0, 0, 0};
  size_t i = 0;
  for (int& p : parts) {
    if (i >= version.size() || version[i] < '0' || version[i] > '9') return 0;
    while (i < version.size() && version[i] >= '0' && version[i] <= '9' && p < 10000) {
      p = p * 10 + (version[i++] - '0');
    }
    if (i < version.size() && version[i] == '.') ++i;
  }
  return parts[0] * 10000 + parts[1] * 100 + parts[2];
}

std::vector<KnownBad> MatchKnownBad(const Versions& v) {
  std::vector<KnownBad> out;
  for (const Row& r : Rows()) {
    if (r.matches(v)) out.push_back(r.what);
  }
  return out;
}

}  // namespace efawatch::doctor
