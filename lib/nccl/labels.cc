// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/labels.h"

#include <algorithm>
#include <initializer_list>

namespace efawatch::nccl {
namespace {

bool OneOf(std::string_view v, std::initializer_list<std::string_view> known) {
  return std::find(known.begin(), known.end(), v) != known.end();
}

bool AllOf(std::string_view v, std::string_view alphabet) {
  return v.find_first_not_of(alphabet) == std::string_view::npos;
}

}  // namespace

std::string NetworkLabel(std::string_view v) {
  if (OneOf(v, {"", "Socket", "IB", "IBext", "OFI", "AWS Libfabric", "Libfabric", "unknown"}) ||
      (v.starts_with("IBext_v") && v.size() <= 9 && AllOf(v.substr(7), "0123456789"))) {
    return std::string(v);
  }
  return "other";
}

std::string TransportLabel(std::string_view v) {
  return OneOf(v, {"", "NET/Socket", "NET/IB", "NET/OFI", "none(single node)", "unknown"})
             ? std::string(v)
             : "other";
}

std::string ProviderLabel(std::string_view v) {
  if (OneOf(v, {"", "none", "unknown"})) return std::string(v);
  const size_t semi = v.find(';');
  const std::string_view core = v.substr(0, semi);
  const std::string_view util = semi == std::string_view::npos ? "" : v.substr(semi + 1);
  const bool core_ok =
      OneOf(core, {"efa", "efa-direct", "tcp", "sockets", "udp", "shm", "verbs", "psm2", "psm3",
                   "opx", "cxi", "ucx", "usnic", "sm2", "lnx", "net"});
  const bool util_ok = OneOf(util, {"", "ofi_rxm", "ofi_rxd", "ofi_mrail"});
  return core_ok && util_ok ? std::string(v) : "other";
}

std::string VersionLabel(std::string_view v) {
  const std::string_view base = v.substr(0, v.find('+'));
  const std::string_view cuda = base.size() < v.size() ? v.substr(base.size()) : "";
  const bool ok =
      v.size() <= 24 && !base.empty() && AllOf(base, "0123456789.") &&
      (cuda.empty() || (cuda.starts_with("+cuda") && AllOf(cuda.substr(5), "0123456789.")));
  return ok || v.empty() ? std::string(v) : "other";
}

std::string PluginLabel(std::string_view v) {
  return OneOf(v, {"", "none", "aws-ofi-nccl", "IBext", "IBext_v7", "IBext_v8", "IBext_v9",
                   "IBext_v10", "Libfabric", "GPUDirectTCPX", "FasTrak"})
             ? std::string(v)
             : "other";
}

std::string PluginVersionLabel(std::string_view v) {
  const bool ok = v.size() <= 24 && !v.empty() && v[0] >= '0' && v[0] <= '9' &&
                  AllOf(v, "0123456789.-abcdefghijklmnopqrstuvwxyz");
  return ok || v.empty() ? std::string(v) : "other";
}

std::string SettingLabel(std::string_view v) {
  const bool ok = v.size() <= 32 && AllOf(v,
                                          "0123456789,^_:;.-abcdefghijklmnopqrstuvwxyz"
                                          "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
  return ok ? std::string(v) : "other";
}

bool CommIdLabelOk(std::string_view v) {
  return v.size() > 2 && v.size() <= 18 && v.starts_with("0x") &&
         AllOf(v.substr(2), "0123456789abcdefABCDEF");
}

}  // namespace efawatch::nccl
