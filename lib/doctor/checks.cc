// SPDX-License-Identifier: Apache-2.0
// The checks of `efawatch doctor`, one function each, in docs/doctor.md's order.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "lib/common/instance_types.h"
#include "lib/doctor/doctor.h"
#include "lib/doctor/known_bad.h"
#include "lib/doctor/libraries.h"
#include "lib/doctor/loaded.h"
#include "lib/doctor/settings_rules.h"
#include "lib/inspector/start_lines.h"

namespace efawatch::doctor {
namespace {

namespace fs = std::filesystem;

std::string FirstLine(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

std::string Env(const Target& t, const std::string& name) {
  auto it = t.env.find(name);
  return it == t.env.end() ? "" : it->second;
}

Check Make(std::string id, Status s, std::string summary, std::string evidence,
           std::string fix = "") {
  return {.id = std::move(id),
          .status = s,
          .summary = std::move(summary),
          .evidence = std::move(evidence),
          .fix = s == Status::kPass || s == Status::kSkip ? "" : std::move(fix)};
}

// What several checks share, read once.
struct Facts {
  std::string instance_type;  // from DMI; "" when unknown
  unsigned efa_devices = 0;
  std::vector<std::string> nccl;     // libnccl.so* paths, the loader's pick first
  std::vector<std::string> plugins;  // libnccl-net*.so paths
  std::string libfabric;             // the libfabric.so.1 the loader picks (or the mapped one)
  LibfabricAnswer fabric;            // what that library says, asked once (live systems only)
  std::string nccl_version;          // of nccl[0] (or the mapped one)
  std::vector<int> plugin_versions;  // of plugins[0] (or the mapped one)
};

// The mapped file whose name starts with `prefix`, for a process (--pid): ground truth.
std::string Mapped(const Target& t, const std::string& prefix) {
  for (const std::string& m : t.mapped) {
    if (fs::path(m).filename().string().starts_with(prefix)) return m;
  }
  return "";
}

unsigned CountEfaDevices(const Target& t) {
  unsigned n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(InRoot(t, "/sys/class/infiniband"), ec)) {
    const std::string driver = fs::read_symlink(e.path() / "device/driver", ec).filename().string();
    const std::string name = e.path().filename().string();
    if (driver == "efa" || name.starts_with("rdmap") || name.starts_with("efa")) ++n;
  }
  return n;
}

std::string NcclVersion(const Target& t, const std::string& path) {
  std::string v = NcclVersionInFile(InRoot(t, path));
  if (v.empty() && t.live) v = AskNcclVersion(path).value_or("");
  return v;
}

Facts Gather(const Target& t) {
  Facts f;
  f.instance_type = FirstLine(InRoot(t, "/sys/devices/virtual/dmi/id/product_name"));
  f.efa_devices = CountEfaDevices(t);
  f.nccl = FindLibraries(t, "libnccl.so");
  f.plugins = FindLibraries(t, "libnccl-net");
  if (const std::string net = Env(t, "NCCL_NET_PLUGIN"); !net.empty()) {
    // NCCL_NET_PLUGIN=aws-ofi names libnccl-net-aws-ofi.so; a path is used as it is.
    auto named = net.find('/') != std::string::npos ? std::vector<std::string>{net}
                                                    : FindLibraries(t, "libnccl-net-" + net);
    f.plugins.insert(f.plugins.begin(), named.begin(), named.end());
  }
  const std::vector<std::string> fabric = FindLibraries(t, "libfabric.so.1");
  f.libfabric = fabric.empty() ? "" : fabric.front();
  if (const std::string m = Mapped(t, "libfabric.so"); !m.empty()) f.libfabric = m;
  if (t.live && !f.libfabric.empty()) f.fabric = AskLibfabric(InRoot(t, f.libfabric).string());
  const std::string nccl =
      Mapped(t, "libnccl.so").empty() ? (f.nccl.empty() ? "" : f.nccl[0]) : Mapped(t, "libnccl.so");
  if (!nccl.empty()) f.nccl_version = NcclVersion(t, nccl);
  const std::string plugin = Mapped(t, "libnccl-net").empty()
                                 ? (f.plugins.empty() ? "" : f.plugins[0])
                                 : Mapped(t, "libnccl-net");
  if (!plugin.empty()) f.plugin_versions = NetPluginVersions(InRoot(t, plugin));
  return f;
}

// --- GPU and CUDA ---------------------------------------------------------------------------

// NVIDIA display and 3D controllers on the PCI bus (vendor 0x10de, class 0x03xxxx).
unsigned CountNvidiaGpus(const Target& t) {
  unsigned n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(InRoot(t, "/sys/bus/pci/devices"), ec)) {
    if (FirstLine(e.path() / "vendor") == "0x10de" &&
        FirstLine(e.path() / "class").starts_with("0x03")) {
      ++n;
    }
  }
  return n;
}

// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 ..." -> "550.54.15".
std::string DriverVersion(const std::string& line) {
  const size_t at = line.find("Kernel Module");
  if (at == std::string::npos) return "";
  std::istringstream ss(line.substr(at + 13));
  std::string v;
  ss >> v;
  return v;
}

Check GpuDriver(const Target& t) {
  if (t.host_proc.empty()) {
    return Make("gpu.driver", Status::kSkip, "an image has no driver: check the node", "");
  }
  const fs::path file = t.host_proc / "driver/nvidia/version";
  const std::string line = FirstLine(file);
  const unsigned gpus = CountNvidiaGpus(t);
  if (line.empty() && gpus > 0) {
    return Make("gpu.driver", Status::kFail,
                std::to_string(gpus) + " NVIDIA GPU(s) on the PCI bus but no driver loaded",
                file.string() + " absent", "install and load the NVIDIA driver (nvidia.ko)");
  }
  if (line.empty()) {
    return Make("gpu.driver", Status::kSkip, "no NVIDIA GPU or driver here", file.string());
  }
  return Make("gpu.driver", Status::kPass, "NVIDIA driver " + DriverVersion(line), line);
}

// The oldest driver each CUDA major version runs on without forward compatibility (NVIDIA's
// CUDA toolkit release notes, "CUDA Toolkit and Minimum Required Driver Version" table).
std::string MinimumDriverFor(int cuda_major) {
  switch (cuda_major) {
    case 11:
      return "450.80.02";
    case 12:
      return "525.60.13";
    case 13:
      return "580.65.06";
    default:
      return "";
  }
}

Check CudaRuntime(const Target& t) {
  const std::vector<std::string> cudart = FindLibraries(t, "libcudart.so");
  const std::string driver =
      t.host_proc.empty() ? "" : DriverVersion(FirstLine(t.host_proc / "driver/nvidia/version"));
  if (cudart.empty()) return Make("cuda.runtime", Status::kSkip, "no CUDA runtime found", "");
  // The real file's name carries the version: libcudart.so.12.4.127.
  std::error_code ec;
  const std::string real = fs::weakly_canonical(InRoot(t, cudart.front()), ec).filename().string();
  const size_t so = real.find(".so.");
  const int major = so == std::string::npos ? 0 : std::atoi(real.c_str() + so + 4);
  const std::string minimum = MinimumDriverFor(major);
  const std::string evidence =
      cudart.front() + " (" + real + "), driver " + (driver.empty() ? "unknown" : driver) +
      (minimum.empty() ? "" : ", CUDA " + std::to_string(major) + " needs >= " + minimum);
  if (driver.empty() || minimum.empty()) {
    return Make("cuda.runtime", Status::kSkip, "CUDA runtime found; driver or needs unknown",
                evidence);
  }
  if (VersionCode(driver) >= VersionCode(minimum)) {
    return Make("cuda.runtime", Status::kPass, "the driver runs this CUDA runtime", evidence);
  }
  std::vector<std::string> compat = FindLibraries(t, "libcuda.so");
  const bool forward = std::any_of(compat.begin(), compat.end(), [](const std::string& p) {
    return p.find("/compat") != std::string::npos;
  });
  return Make("cuda.runtime", forward ? Status::kWarn : Status::kFail,
              forward ? "the driver is older than the CUDA runtime; forward-compat libraries "
                        "present (datacenter GPUs only)"
                      : "the driver is older than the CUDA runtime needs",
              evidence,
              "upgrade the driver, or add the cuda-compat package's libraries to "
              "LD_LIBRARY_PATH (datacenter GPUs)");
}

Check GpuPeermem(const Target& t, const Facts& f) {
  const bool peermem = fs::exists(InRoot(t, "/sys/module/nvidia_peermem"));
  const std::optional<bool> gdr = common::SupportsGpuDirectRdma(f.instance_type);
  if (peermem) return Make("gpu.peermem", Status::kPass, "nvidia_peermem is loaded", "");
  if (gdr.value_or(false) && f.efa_devices > 0) {
    return Make("gpu.peermem", Status::kWarn,
                "no nvidia_peermem module on an instance type with GPUDirect RDMA", f.instance_type,
                "load nvidia_peermem (modprobe nvidia_peermem), or use a driver with dma-buf "
                "support and a libfabric that uses it");
  }
  return Make("gpu.peermem", Status::kSkip, "GPUDirect RDMA not expected here",
              f.instance_type.empty() ? "instance type unknown" : f.instance_type);
}

// --- NCCL -----------------------------------------------------------------------------------

Check NcclLibraries(const Target& t, const Facts& f) {
  const std::string mapped = Mapped(t, "libnccl.so");
  if (f.nccl.empty() && mapped.empty()) {
    return Make("nccl.library", Status::kWarn, "no libnccl found in the library path", "",
                "install NCCL, or check LD_LIBRARY_PATH (PyTorch wheels bring their own)");
  }
  std::set<std::string> versions;
  std::string listed;
  for (const std::string& p : f.nccl) {
    const std::string v = NcclVersion(t, p);
    versions.insert(v);
    listed += (listed.empty() ? "" : ", ") + p + (v.empty() ? "" : " (" + v + ")");
  }
  const std::string used = mapped.empty() ? f.nccl.front() : mapped;
  const std::string evidence = (mapped.empty() ? "loader picks " : "loaded ") + used + " " +
                               f.nccl_version + "; found: " + listed;
  if (versions.size() > 1) {
    return Make("nccl.library", Status::kWarn, "more than one NCCL version is visible", evidence,
                "remove the copies that are not meant to load, or pin one with LD_LIBRARY_PATH");
  }
  return Make("nccl.library", Status::kPass, "NCCL " + f.nccl_version, evidence);
}

Check NetPlugin(const Target& t, const Facts& f) {
  const std::string mapped = Mapped(t, "libnccl-net");
  const std::string plugin = mapped.empty() ? (f.plugins.empty() ? "" : f.plugins[0]) : mapped;
  if (plugin.empty()) {
    if (f.efa_devices == 0) {
      return Make("nccl.net_plugin", Status::kSkip, "no net plugin, and no EFA device here", "");
    }
    return Make("nccl.net_plugin", Status::kFail,
                "no NCCL net plugin (libnccl-net*.so) on a node with EFA: NCCL will use TCP",
                Env(t, "NCCL_NET_PLUGIN"),
                "install aws-ofi-nccl (the EFA installer or the AWS DLC) and put its lib directory "
                "in LD_LIBRARY_PATH");
  }
  const auto needed = NeededLibraries(InRoot(t, plugin));
  if (!needed) {
    return Make("nccl.net_plugin", Status::kFail, "the net plugin is not an ELF64 library", plugin,
                "reinstall aws-ofi-nccl");
  }
  std::vector<fs::path> dirs = SearchDirs(t);
  dirs.push_back(fs::path(plugin).parent_path());
  std::string missing;
  for (const std::string& lib : *needed) {
    bool found = false;
    for (const fs::path& d : dirs) found = found || fs::exists(InRoot(t, (d / lib).string()));
    if (!found) missing += (missing.empty() ? "" : ", ") + lib;
  }
  std::string api;
  for (int v : f.plugin_versions) api += (api.empty() ? "v" : ", v") + std::to_string(v);
  if (!missing.empty()) {
    return Make("nccl.net_plugin", Status::kFail, "the net plugin's dependencies are missing",
                plugin + " needs " + missing,
                "add /opt/amazon/efa/lib (libfabric) to LD_LIBRARY_PATH, or install the EFA "
                "software");
  }
  return Make("nccl.net_plugin", Status::kPass, "net plugin found, its dependencies resolve",
              plugin + " (API " + (api.empty() ? "unknown" : api) + ")");
}

// --- libfabric and EFA ----------------------------------------------------------------------

Check Libfabric(const Target& t, const Facts& f) {
  if (f.libfabric.empty()) {
    return Make("libfabric.library", f.efa_devices > 0 ? Status::kFail : Status::kWarn,
                "no libfabric.so.1 in the library path", "",
                "install the EFA software (/opt/amazon/efa) or add its lib directory to "
                "LD_LIBRARY_PATH");
  }
  if (!t.live) {
    return Make("libfabric.library", Status::kPass, "libfabric found (not loaded: --root)",
                f.libfabric);
  }
  const LibfabricAnswer& a = f.fabric;
  if (!a.error.empty()) {
    return Make("libfabric.library", Status::kFail, "libfabric does not load", a.error,
                "check the library's dependencies (ldd)");
  }
  return Make("libfabric.library", Status::kPass, "libfabric " + a.version,
              f.libfabric + " (fi_version " + a.version + ")");
}

Check EfaProvider(const Target& t, const Facts& f) {
  if (!t.live || f.libfabric.empty()) {
    return Make("libfabric.efa_provider", Status::kSkip,
                t.live ? "no libfabric to ask" : "providers are only asked on a live system", "");
  }
  const LibfabricAnswer& a = f.fabric;
  const std::string evidence = f.libfabric + ": efa " + (a.efa_rdm ? "present" : "absent") +
                               ", tcp " + (a.tcp ? "present" : "absent");
  if (a.efa_rdm) {
    return Make("libfabric.efa_provider", Status::kPass, "efa provider with an RDM endpoint",
                evidence);
  }
  // libfabric's efa provider lists nothing without an EFA device, so on a node without one its
  // absence says nothing about the library: a FAIL here would be a FAIL on every non-EFA node
  // (and an alert on doctor FAILs would fire fleet-wide). efa.devices says whether one is due.
  if (f.efa_devices == 0) {
    return Make("libfabric.efa_provider", Status::kSkip,
                "no EFA device here, so no efa provider to find", evidence);
  }
  return Make("libfabric.efa_provider", Status::kFail,
              "libfabric has no usable efa provider: NCCL traffic cannot use EFA", evidence,
              "use the libfabric of the EFA installer (/opt/amazon/efa/lib), and give the pod "
              "EFA devices (resource vpc.amazonaws.com/efa)");
}

Check EfaDevices(const Target& t, const Facts& f) {
  const unsigned expected = common::ExpectedEfaDevices(f.instance_type);
  const std::string evidence = std::to_string(f.efa_devices) + " found under " +
                               InRoot(t, "/sys/class/infiniband").string() +
                               (f.instance_type.empty() ? "" : ", " + f.instance_type) +
                               (expected > 0 ? " expects " + std::to_string(expected) : "");
  // None at all is a node launched without EFA (optional on g5, g6, g6e, ...), not a fault: the
  // agent's efa_not_attached, an info finding. Some but fewer than the type has is one lost.
  if (f.efa_devices == 0) {
    return Make("efa.devices", Status::kSkip,
                expected > 0 ? "no EFA device: the node was launched without EFA" : "no EFA device",
                evidence);
  }
  if (expected > 0 && f.efa_devices < expected) {
    return Make("efa.devices", Status::kFail, "fewer EFA devices than the instance type has",
                evidence, "check the EFA driver (modprobe efa) and the instance's network cards");
  }
  return Make("efa.devices", Status::kPass, "EFA devices present", evidence);
}

Check Uverbs(const Target& t, const Facts& f) {
  std::vector<fs::path> nodes;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(InRoot(t, "/dev/infiniband"), ec)) {
    if (e.path().filename().string().starts_with("uverbs")) nodes.push_back(e.path());
  }
  if (nodes.empty()) {
    if (f.efa_devices == 0) return Make("efa.uverbs", Status::kSkip, "no EFA device", "");
    return Make("efa.uverbs", Status::kFail, "no /dev/infiniband/uverbs* here",
                InRoot(t, "/dev/infiniband").string(),
                "request vpc.amazonaws.com/efa in the pod (the EFA device plugin adds the "
                "devices)");
  }
  if (t.live) {
    const int fd = open(nodes.front().c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      return Make("efa.uverbs", Status::kFail, "the verbs device cannot be opened",
                  nodes.front().string() + ": " + std::strerror(errno),
                  "request vpc.amazonaws.com/efa in the pod");
    }
    close(fd);
  }
  return Make("efa.uverbs", Status::kPass, std::to_string(nodes.size()) + " verbs device(s)",
              nodes.front().string());
}

// --- limits and /dev/shm --------------------------------------------------------------------

// "Max locked memory  unlimited  unlimited  bytes" of /proc/PID/limits: the soft limit.
std::string MemlockFromLimits(const fs::path& limits) {
  std::ifstream in(limits);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("Max locked memory")) continue;
    std::istringstream ss(line.substr(17));
    std::string soft;
    ss >> soft;
    return soft;
  }
  return "";
}

Check Memlock(const Target& t, const Facts& f) {
  std::string soft;
  if (!t.proc_dir.empty()) {
    soft = MemlockFromLimits(t.proc_dir / "limits");
  } else if (t.live) {
    struct rlimit rl {};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
      soft = rl.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(rl.rlim_cur);
    }
  }
  if (soft.empty()) return Make("limits.memlock", Status::kSkip, "memlock limit unknown", "");
  if (soft == "unlimited") {
    return Make("limits.memlock", Status::kPass, "RLIMIT_MEMLOCK unlimited", soft);
  }
  return Make("limits.memlock", f.efa_devices > 0 ? Status::kFail : Status::kWarn,
              "RLIMIT_MEMLOCK is limited: EFA memory registration fails (reg_mr_err)",
              soft + " bytes",
              "run with ulimit -l unlimited (containerd: LimitMEMLOCK=infinity, or the pod's "
              "runtime default)");
}

Check ShmSize(const Target& t) {
  const fs::path shm = t.proc_dir.empty() ? InRoot(t, "/dev/shm") : t.proc_dir / "root/dev/shm";
  if (!t.live && t.proc_dir.empty()) {
    return Make("shm.size", Status::kSkip, "an image has no /dev/shm mount", "");
  }
  struct statvfs vfs {};
  if (statvfs(shm.c_str(), &vfs) != 0) {
    return Make("shm.size", Status::kSkip, "/dev/shm not readable", shm.string());
  }
  const uint64_t bytes = uint64_t{vfs.f_blocks} * vfs.f_frsize;
  const std::string evidence = shm.string() + ": " + std::to_string(bytes >> 20) + " MiB";
  if (bytes <= (64ull << 20)) {
    return Make("shm.size", Status::kFail,
                "/dev/shm is Kubernetes' 64 MiB default: NCCL's SHM transport runs out", evidence,
                "mount an emptyDir with medium: Memory at /dev/shm");
  }
  return Make("shm.size", Status::kPass, "/dev/shm is large enough", evidence);
}

// --- settings -------------------------------------------------------------------------------

// One row of the settings table (settings_rules.cc), shared with the admission webhook.
Check Setting(std::string_view id, const Target& t, const Facts& f) {
  return SettingsRuleById(id).judge(t.env, {.efa = f.efa_devices > 0});
}

Check DeviceRdma(const Target& t, const Facts& f) {
  const std::optional<bool> gdr = common::SupportsGpuDirectRdma(f.instance_type);
  const std::string v = Env(t, "FI_EFA_USE_DEVICE_RDMA");
  if (gdr.value_or(false) && v == "0") {
    return Make("settings.fi_efa_use_device_rdma", Status::kWarn,
                "FI_EFA_USE_DEVICE_RDMA=0 turns RDMA read off on an instance type that has it",
                f.instance_type, "unset FI_EFA_USE_DEVICE_RDMA or set it to 1");
  }
  return Make("settings.fi_efa_use_device_rdma", v.empty() ? Status::kSkip : Status::kPass,
              v.empty() ? "FI_EFA_USE_DEVICE_RDMA unset" : "FI_EFA_USE_DEVICE_RDMA=" + v, v);
}

// The NCCL Inspector (docs/inspector.md): loaded (mapped, or named by NCCL_PROFILER_PLUGIN),
// switched on, dumping live, and where: a relative NCCL_INSPECTOR_DUMP_DIR (or none: the
// plugin's nccl-inspector-<job id>) is below the process's working directory, inside the
// container's own filesystem, which the agent cannot see unless it is a volume.
// The mount point `dir` lies on, from the process's mountinfo, and its file system type: a
// directory on the container's root ("/", overlay) is in no volume the agent can read.
std::pair<std::string, std::string> MountOf(const fs::path& proc_dir, const std::string& dir) {
  std::ifstream in(proc_dir / "mountinfo");
  std::string best, type;
  for (std::string line; std::getline(in, line);) {
    // "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue"
    std::istringstream f(line);
    std::string id, parent, dev, source, point;
    f >> id >> parent >> dev >> source >> point;
    const size_t dash = line.find(" - ");
    if (point.empty() || dash == std::string::npos) continue;
    const bool under = point == "/" || dir == point || dir.starts_with(point + "/");
    if (under && point.size() >= best.size()) {
      best = point;
      std::istringstream rest(line.substr(dash + 3));
      rest >> type;
    }
  }
  return {best, type};
}

// The Inspector as it announced itself in the process's own NCCL log: what it really does,
// whatever the environment says.
Check InspectorFromLog(const Target& t, const inspector::InspectorStart& s) {
  std::string dir = s.DumpDir();
  if (dir.empty()) dir = "nccl-inspector-<job id> (default)";
  const int64_t us = s.EffectiveIntervalUs();
  const std::string interval =
      us < 0
          ? std::string("only at teardown (interval -1)")
          : "every " + std::to_string(us / 1000) + " ms" +
                (us != s.IntervalUs() ? " (raised from " + std::to_string(s.IntervalUs() / 1000) +
                                            " ms: Prometheus mode's minimum)"
                                      : "");
  const std::string what = "NCCL Inspector " +
                           (s.version.empty() ? std::string() : s.version + " ") +
                           "loaded: " + std::string(s.ModeName()) + " to " + dir + ", " + interval;
  const std::string evidence = t.log_path + ": the Inspector's start lines";
  if (!s.Enabled()) {
    return Make("nccl.inspector", Status::kWarn, what + ", but not enabled", evidence,
                "set NCCL_INSPECTOR_ENABLE=1");
  }
  if (us < 0) {
    return Make("nccl.inspector", Status::kWarn,
                what + ": nothing is written while the job runs, and a crash writes nothing",
                evidence,
                s.Prometheus() ? "set NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=30000000"
                               : "set NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000000");
  }
  if (s.DumpDir().empty() || !s.DumpDir().starts_with("/")) {
    return Make("nccl.inspector", Status::kWarn, what + ", relative to the working directory",
                evidence, "set NCCL_INSPECTOR_DUMP_DIR to a directory in a volume (/tmp/ray/...)");
  }
  if (!t.proc_dir.empty()) {
    const auto [point, type] = MountOf(t.proc_dir, s.DumpDir());
    if (point == "/" && type == "overlay") {
      return Make("nccl.inspector", Status::kWarn,
                  what + ", on the container's own file system: in no volume the agent reads",
                  evidence, "point NCCL_INSPECTOR_DUMP_DIR into an emptyDir (e.g. /tmp/ray)");
    }
  }
  if (us != s.IntervalUs()) {
    return Make("nccl.inspector", Status::kWarn, what, evidence,
                "set the interval to 30000000 or more: Prometheus mode raises it anyway");
  }
  return Make("nccl.inspector", Status::kPass, what, evidence);
}

Check Inspector(const Target& t) {
  inspector::InspectorStart start;
  for (size_t at = 0; at < t.log_head.size();) {
    size_t nl = t.log_head.find('\n', at);
    if (nl == std::string::npos) nl = t.log_head.size();
    inspector::FeedStartLine(std::string_view(t.log_head).substr(at, nl - at), &start);
    at = nl + 1;
  }
  if (start.Seen()) return InspectorFromLog(t, start);
  std::string mapped;
  for (const std::string& m : t.mapped) {
    if (m.find("libnccl-profiler-inspector") != std::string::npos) mapped = m;
  }
  const std::string plugin = Env(t, "NCCL_PROFILER_PLUGIN");
  const bool named = plugin.find("inspector") != std::string::npos;
  const bool enabled = Env(t, "NCCL_INSPECTOR_ENABLE") == "1";
  if (mapped.empty() && !named && !enabled) {
    return Make("nccl.inspector", Status::kSkip,
                "NCCL Inspector not loaded: the job's bus bandwidth is not measured", "",
                "load it to have the agent judge the job's busbw (docs/inspector.md)");
  }
  std::string dir = Env(t, "NCCL_INSPECTOR_DUMP_DIR");
  if (dir.empty()) dir = "nccl-inspector-unknown-jobid";
  if (!dir.starts_with("/") && !t.proc_dir.empty()) {
    std::error_code ec;
    const fs::path cwd = fs::read_symlink(t.proc_dir / "cwd", ec);
    if (!ec) dir = (cwd / dir).string();
  }
  const bool prom = Env(t, "NCCL_INSPECTOR_PROM_DUMP") == "1";
  const std::string interval = Env(t, "NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS");
  long long us = -1;
  if (!interval.empty()) {
    char* end = nullptr;
    us = std::strtoll(interval.c_str(), &end, 10);
    if (end == nullptr || *end != '\0') us = -1;
  }
  const std::string evidence =
      (mapped.empty() ? "NCCL_PROFILER_PLUGIN=" + plugin : mapped) +
      (enabled ? ", NCCL_INSPECTOR_ENABLE=1" : ", NCCL_INSPECTOR_ENABLE unset") +
      ", NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=" + (interval.empty() ? "-1" : interval);
  const std::string where =
      std::string(prom ? "Prometheus textfiles" : "JSON Lines") + " to " + dir;
  if (!enabled) {
    return Make("nccl.inspector", Status::kWarn, "NCCL Inspector loaded but not enabled", evidence,
                "set NCCL_INSPECTOR_ENABLE=1");
  }
  if (us <= 0) {
    return Make("nccl.inspector", Status::kWarn,
                "NCCL Inspector enabled without a dump interval: it writes nothing while the job "
                "runs (" +
                    where + ")",
                evidence, "set NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000000");
  }
  if (Env(t, "NCCL_INSPECTOR_DUMP_DIR").empty() ||
      !Env(t, "NCCL_INSPECTOR_DUMP_DIR").starts_with("/")) {
    return Make("nccl.inspector", Status::kWarn,
                "NCCL Inspector writes " + where + ", relative to the working directory", evidence,
                "set NCCL_INSPECTOR_DUMP_DIR to a directory in a volume (/tmp/ray/...)");
  }
  return Make("nccl.inspector",
              mapped.empty() && t.live && !t.proc_dir.empty() ? Status::kWarn : Status::kPass,
              (mapped.empty() && !t.proc_dir.empty() ? "NCCL Inspector set but not mapped yet, "
                                                     : "NCCL Inspector loaded, ") +
                  std::string("writes ") + where + " every " + std::to_string(us / 1000) + " ms",
              evidence, "check NCCL_PROFILER_PLUGIN's path (NCCL_DEBUG_SUBSYS=INIT,PROFILE)");
}

void KnownBadChecks(const Target& t, const Facts& f, std::vector<Check>* out) {
  const Versions v{.nccl = f.nccl_version,
                   .plugin = f.plugin_versions,
                   .instance_type = f.instance_type,
                   .efa_use_device_rdma = Env(t, "FI_EFA_USE_DEVICE_RDMA")};
  const std::vector<KnownBad> bad = MatchKnownBad(v);
  if (bad.empty()) {
    out->push_back(Make("known_bad", Status::kPass, "no known-bad combination", ""));
  }
  for (const KnownBad& b : bad) {
    out->push_back(Make("known_bad." + b.id, Status::kFail, b.problem, b.source, b.fix));
  }
}

}  // namespace

std::vector<Check> RunNodeChecks(const Target& t) {
  Facts f;
  f.instance_type = FirstLine(InRoot(t, "/sys/devices/virtual/dmi/id/product_name"));
  f.efa_devices = CountEfaDevices(t);
  return {GpuDriver(t), GpuPeermem(t, f), EfaDevices(t, f)};
}

std::vector<Check> RunChecks(const Target& t) {
  const Facts f = Gather(t);
  std::vector<Check> out = {GpuDriver(t),
                            CudaRuntime(t),
                            GpuPeermem(t, f),
                            NcclLibraries(t, f),
                            NetPlugin(t, f),
                            Libfabric(t, f),
                            EfaProvider(t, f),
                            EfaDevices(t, f),
                            Uverbs(t, f),
                            Memlock(t, f),
                            ShmSize(t),
                            Setting("settings.nccl_socket_ifname", t, f),
                            Setting("settings.nccl_net", t, f),
                            Setting("settings.fi_provider", t, f),
                            DeviceRdma(t, f),
                            Setting("settings.nccl_debug", t, f),
                            Setting("settings.nccl_overrides", t, f),
                            Inspector(t)};
  KnownBadChecks(t, f, &out);
  return out;
}

}  // namespace efawatch::doctor
