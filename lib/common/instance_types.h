// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace efawatch::common {

/// EFA devices an instance type should have, or 0 when we do not know it. Sources: AWS's GPU
/// cluster health check instance profiles (p5 32, p5en 16, p6-b200 8, p4d 4) and the EC2
/// instance type data for g6.12xlarge (1); see efa-and-libfabric.md §2.
unsigned ExpectedEfaDevices(const std::string& instance_type);

/// The GPUs (nvidia.com/gpu) or Trainium devices (aws.amazon.com/neuron) an instance type has,
/// or 0 when we do not know it (EC2 User Guide, accelerated computing instance specifications).
/// A pod that requests them all takes the whole node, and so should take all its EFA devices.
unsigned AcceleratorsPerNode(const std::string& instance_type);

/// The network bandwidth the instance type's EFA devices give together, in bytes a second: the
/// EFA count above times each device's rate (EC2's network bandwidth for the type divided among
/// its EFA interfaces), or 0 when the type is not known. What a healthy cross-node collective
/// of large messages reaches as nccl-tests' bus bandwidth, give or take (docs/inspector.md).
double ExpectedNetworkBytesPerSecond(const std::string& instance_type);

/// The instance type EC2 puts in the DMI product name (`<sysfs>/devices/virtual/dmi/id/
/// product_name`, e.g. "p5.48xlarge"), "" when the file is absent or empty.
std::string InstanceTypeFromDmi(const std::filesystem::path& sysfs);

/// Whether the instance type has GPUDirect RDMA over EFA: the P-series from p4d on do, the
/// G-series do not (aws-ofi-nccl#547); nullopt for other or unknown types.
std::optional<bool> SupportsGpuDirectRdma(const std::string& instance_type);

}  // namespace efawatch::common
