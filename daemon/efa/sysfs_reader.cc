// SPDX-License-Identifier: Apache-2.0
#include "daemon/efa/sysfs_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <optional>
#include <system_error>

#include "lib/common/efa_counters.h"

namespace efawatch::efa {
namespace fs = std::filesystem;
namespace {

// First line of a small file relative to an open directory (AT_FDCWD: a path), without the
// newline; nullopt when it cannot be read (a port counter read returns an error such as ETIME
// when the device query fails). One open and one read: a scrape of a p5 reads about 1,200 of
// these, so iostreams' overhead shows, and relative opens spare the path walk from the root.
std::optional<std::string> ReadLineAt(int dir_fd, const char* name) {
  const int fd = ::openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  if (n < 0) return std::nullopt;
  std::string_view v(buf, static_cast<size_t>(n));
  return std::string(v.substr(0, v.find('\n')));
}

std::optional<std::string> ReadLine(const fs::path& p) { return ReadLineAt(AT_FDCWD, p.c_str()); }

std::string ReadOr(const fs::path& p, const std::string& fallback = "") {
  auto v = ReadLine(p);
  return v ? *v : fallback;
}

std::optional<uint64_t> ParseU64(const std::string& s) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr == s.data()) return std::nullopt;
  return v;
}

// Reads every counter file of `dir` whose scope is `scope` (or unknown), skipping `lifespan`,
// which is the driver's cache window, not a counter. The directory is opened once and its files
// read relative to it: a p5 scrape reads about 1,200 files and path walks dominated its cost.
void ReadCounters(const fs::path& dir, Scope scope, std::map<std::string, uint64_t>& out,
                  std::vector<std::string>& unreadable, bool* saw_other_scope) {
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return;
  DIR* d = ::fdopendir(dir_fd);
  if (d == nullptr) {
    ::close(dir_fd);
    return;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    if (name == "lifespan") continue;
    const KnownCounter* known = FindKnownCounter(name);
    if (known != nullptr && known->scope != scope) {
      if (saw_other_scope != nullptr) *saw_other_scope = true;
      continue;
    }
    auto line = ReadLineAt(dir_fd, name.c_str());
    auto value = line ? ParseU64(*line) : std::nullopt;
    if (value) {
      out[name] = *value;
    } else {
      unreadable.push_back(name);
    }
  }
  ::closedir(d);  // also closes dir_fd
}

std::string PciFromUevent(const fs::path& device_dir) {
  std::ifstream in(device_dir / "uevent");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("PCI_SLOT_NAME=")) return line.substr(14);
  }
  std::error_code ec;
  // Real sysfs: device is a link to .../0000:4f:00.0; its canonical name is the address.
  const fs::path real = fs::canonical(device_dir, ec);
  const std::string base = ec ? "" : real.filename().string();
  return base.size() == 12 && base[4] == ':' && base[7] == ':' && base[10] == '.' ? base : "";
}

}  // namespace

std::pair<int, std::string> ParseIdState(const std::string& text) {
  auto colon = text.find(':');
  int id = -1;
  if (colon != std::string::npos) {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + colon, id);
    if (ec != std::errc() || ptr != text.data() + colon) id = -1;
  }
  std::string name = colon == std::string::npos ? text : text.substr(colon + 1);
  name.erase(0, name.find_first_not_of(' '));
  return {id, name};
}

double ParseRateBytesPerSecond(const std::string& text) {
  double gbps = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), gbps);
  if (ec != std::errc() || ptr == text.data()) return -1;
  return gbps * 1e9 / 8;
}

absl::StatusOr<std::vector<std::string>> ListRdmaDevices(const fs::path& sysfs_root) {
  std::vector<std::string> out;
  const fs::path dir = sysfs_root / "class" / "infiniband";
  std::error_code ec;
  if (!fs::exists(dir, ec)) return out;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  if (ec) return absl::UnavailableError("reading " + dir.string() + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

DeviceSnapshot ReadDevice(const fs::path& sysfs_root, const std::string& name) {
  const fs::path dir = sysfs_root / "class" / "infiniband" / name;
  const fs::path device_dir = dir / "device";
  DeviceSnapshot d;
  d.name = name;
  std::error_code ec;
  const fs::path driver = fs::read_symlink(device_dir / "driver", ec);
  if (!ec) d.driver = driver.filename().string();
  d.vendor = ReadOr(device_dir / "vendor");
  // Classify by vendor (Amazon) or driver, never by name: names depend on udev renaming
  // (efa-and-libfabric.md §1.1). An old unrenamed device without a device dir is efa_N.
  d.is_efa = d.vendor == "0x1d0f" || d.driver == "efa" ||
             (d.vendor.empty() && d.driver.empty() && name.starts_with("efa"));
  d.pci_address = PciFromUevent(device_dir);
  d.numa_node = ReadOr(device_dir / "numa_node");
  d.local_cpus = ReadOr(device_dir / "local_cpulist");
  d.p2p = ReadOr(device_dir / "p2p");
  for (auto it = fs::directory_iterator(device_dir / "infiniband_verbs", ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    d.uverbs = it->path().filename().string();
  }

  ReadCounters(dir / "hw_counters", Scope::kDevice, d.counters, d.unreadable, nullptr);
  std::vector<fs::path> ports;
  for (auto it = fs::directory_iterator(dir / "ports", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    ports.push_back(it->path());
  }
  std::sort(ports.begin(), ports.end());
  for (const auto& p : ports) {
    PortSnapshot ps;
    auto num = p.filename().string();
    std::from_chars(num.data(), num.data() + num.size(), ps.port);
    auto [sid, sname] = ParseIdState(ReadOr(p / "state"));
    ps.state_id = sid;
    ps.state = sname;
    auto [pid, pname] = ParseIdState(ReadOr(p / "phys_state"));
    ps.phys_state_id = pid;
    ps.phys_state = pname;
    ps.rate_bytes_per_second = ParseRateBytesPerSecond(ReadOr(p / "rate"));
    ps.link_layer = ReadOr(p / "link_layer");
    bool saw_device_scope = false;
    ReadCounters(p / "hw_counters", Scope::kPort, ps.counters, ps.unreadable, &saw_device_scope);
    d.legacy_flat_layout = d.legacy_flat_layout || saw_device_scope;
    d.ports.push_back(std::move(ps));
  }
  return d;
}

}  // namespace efawatch::efa
