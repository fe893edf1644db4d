// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>

// Label values that a pod's log decides, drawn from bounded vocabularies: a pod could print a
// new net name, provider or version on every line, and each would be a new series in every
// Prometheus that scrapes the node. Anything outside becomes "other"; the raw value stays in the
// gRPC record and the checkpoint. The names are those docs/nccl-findings.md lists. Pure
// functions, any thread.
namespace efawatch::nccl {

std::string NetworkLabel(std::string_view v);
std::string TransportLabel(std::string_view v);
/// libfabric providers (fi_provider(7)), alone or under a utility provider ("tcp;ofi_rxm").
std::string ProviderLabel(std::string_view v);
/// "2.21.5", "2.18.3+cuda12.2": digits and dots, an optional +cudaX.Y.
std::string VersionLabel(std::string_view v);
/// A net plugin as stack.h names it: "aws-ofi-nccl", NCCL's IB plugins ("IBext", "IBext_v8"),
/// "none", "Libfabric", "GPUDirectTCPX", "" ; else "other".
std::string PluginLabel(std::string_view v);
/// A plugin's own version ("1.14.0", "1.9.1-aws", "1.4.0aws"): up to 24 digits, lower-case
/// letters, dots and dashes, starting with a digit.
std::string PluginVersionLabel(std::string_view v);
/// A setting's value as a label (NCCL_ALGO "Ring,Tree", NCCL_PROTO "^LL128",
/// FI_EFA_USE_DEVICE_RDMA "1"): up to 32 letters, digits and ",^_:;.-".
std::string SettingLabel(std::string_view v);
/// NCCL's commId: a 64-bit hash printed as 0x<hex>; anything else is no id to join on.
bool CommIdLabelOk(std::string_view v);

}  // namespace efawatch::nccl
