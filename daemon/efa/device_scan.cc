#include "daemon/efa/device_scan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace efawatch::efa {

absl::StatusOr<std::vector<RdmaDevice>> ScanRdmaDevices(const std::filesystem::path& sysfs_root) {
  namespace fs = std::filesystem;
  std::vector<RdmaDevice> out;
  const fs::path dir = sysfs_root / "class" / "infiniband";
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    RdmaDevice d;
    d.name = it->path().filename().string();
    std::error_code link_ec;
    const fs::path driver = fs::read_symlink(it->path() / "device" / "driver", link_ec);
    if (!link_ec) d.driver = driver.filename().string();
    // Device names are rdmap<bus>s<slot> with predictable naming and efa_<n> without it; the
    // driver link is the reliable test where sysfs has it (reference: efa-and-libfabric.md §1.1).
    d.is_efa = d.driver == "efa" || (d.driver.empty() && d.name.starts_with("efa"));
    out.push_back(std::move(d));
  }
  if (ec) return absl::UnavailableError(absl::StrCat("reading ", dir.string(), ": ", ec.message()));
  std::sort(out.begin(), out.end(),
            [](const RdmaDevice& a, const RdmaDevice& b) { return a.name < b.name; });
  return out;
}

absl::Status DevicePresenceCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                              common::MetricSink& sink) {
  auto devices = ScanRdmaDevices(sysfs_root_);
  if (!devices.ok()) return devices.status();
  const auto efa = static_cast<unsigned>(std::count_if(
      devices->begin(), devices->end(), [](const RdmaDevice& d) { return d.is_efa; }));
  efa_devices_ = efa;
  sink.Add("efawatch_rdma_devices", {}, static_cast<double>(devices->size()));
  sink.Add("efawatch_efa_devices", {}, efa);
  return absl::OkStatus();
}

}  // namespace efawatch::efa
