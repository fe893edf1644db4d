// SPDX-License-Identifier: Apache-2.0
// lib/doctor on fixture roots (an image or node filesystem laid out in a temporary directory), a
// fixture /proc tree, and this machine's real libfabric and NCCL.

#include "lib/doctor/doctor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "lib/common/instance_types.h"
#include "lib/doctor/known_bad.h"
#include "lib/doctor/libraries.h"
#include "lib/doctor/loaded.h"
#include "tests/support/subprocess.h"

namespace efawatch::doctor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

class DoctorTest : public ::testing::Test {
 protected:
  // A file below the fixture root, with its directories.
  void Put(const std::string& path, const std::string& content = "") {
    const fs::path p = fs::path(dir_.path()) / "root" / fs::path(path).relative_path();
    fs::create_directories(p.parent_path());
    WriteFile(p.string(), content);
  }
  void Link(const std::string& path, const std::string& to) {
    const fs::path p = fs::path(dir_.path()) / "root" / fs::path(path).relative_path();
    fs::create_directories(p.parent_path());
    fs::create_symlink(to, p);
  }
  // An EFA node of `type` with `devices` EFA devices.
  void EfaNode(const std::string& type, unsigned devices) {
    Put("/sys/devices/virtual/dmi/id/product_name", type + "\n");
    for (unsigned i = 0; i < devices; ++i) {
      Put("/sys/class/infiniband/rdmap" + std::to_string(i) + "s0/node_type", "1: CA\n");
    }
  }
  void FakeNccl(const std::string& dir, const std::string& version) {
    Put(dir + "/libnccl.so.2", std::string("\x7f"
                                           "ELF junk ") +
                                   version + "+cuda12.4" + '\0');
  }
  // The fake plugin and, unless `without` names one, every library it needs.
  void Plugin(const std::string& without = "") {
    const fs::path to = fs::path(dir_.path()) / "root/opt/amazon/ofi-nccl/lib/libnccl-net.so";
    fs::create_directories(to.parent_path());
    fs::copy_file(FAKE_NET_PLUGIN, to);
    const std::optional<std::vector<std::string>> needed = NeededLibraries(FAKE_NET_PLUGIN);
    ASSERT_TRUE(needed.has_value());
    for (const std::string& lib : *needed) {
      if (lib != without) Put("/opt/amazon/efa/lib/" + lib);
    }
  }
  Check Run(const std::string& id, const std::map<std::string, std::string>& env = {}) {
    for (const Check& c : RunChecks(RootTarget(dir_.File("root"), env))) {
      if (c.id == id) return c;
    }
    ADD_FAILURE() << "no check " << id;
    return {};
  }

  TempDir dir_;
};

// A Target on the fixture root with a host /proc of its own (the driver's version file).
Target WithHostProc(const TempDir& dir, const std::string& driver_line) {
  Target t = RootTarget(dir.File("root"), {});
  t.host_proc = dir.File("hostproc");
  if (!driver_line.empty()) {
    fs::create_directories(t.host_proc / "driver/nvidia");
    WriteFile((t.host_proc / "driver/nvidia/version").string(), driver_line + "\n");
  }
  return t;
}

Check Find(const std::vector<Check>& checks, const std::string& id) {
  for (const Check& c : checks) {
    if (c.id == id) return c;
  }
  return {};
}

TEST_F(DoctorTest, GpusWithoutADriverFail) {
  Put("/sys/bus/pci/devices/0000:00:1e.0/vendor", "0x10de\n");
  Put("/sys/bus/pci/devices/0000:00:1e.0/class", "0x030200\n");
  const Check none = Find(RunChecks(WithHostProc(dir_, "")), "gpu.driver");
  EXPECT_EQ(none.status, Status::kFail);
  EXPECT_NE(none.summary.find("1 NVIDIA GPU"), std::string::npos) << none.summary;
  const Check loaded =
      Find(RunChecks(WithHostProc(
               dir_, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 2024")),
           "gpu.driver");
  EXPECT_EQ(loaded.status, Status::kPass);
  EXPECT_EQ(loaded.summary, "NVIDIA driver 550.54.15");
}

TEST_F(DoctorTest, CudaRuntimeAgainstTheDriver) {
  Put("/usr/local/cuda/lib64/libcudart.so.12.4.127");
  Link("/usr/local/cuda/lib64/libcudart.so.12", "libcudart.so.12.4.127");
  const std::string newer = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue";
  const std::string older = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Tue";
  EXPECT_EQ(Find(RunChecks(WithHostProc(dir_, newer)), "cuda.runtime").status, Status::kPass);
  const Check old = Find(RunChecks(WithHostProc(dir_, older)), "cuda.runtime");
  EXPECT_EQ(old.status, Status::kFail) << old.evidence;
  EXPECT_NE(old.evidence.find("needs >= 525.60.13"), std::string::npos) << old.evidence;
  Put("/usr/local/cuda/compat/libcuda.so.1");
  Target t = WithHostProc(dir_, older);
  t.env["LD_LIBRARY_PATH"] = "/usr/local/cuda/compat";
  EXPECT_EQ(Find(RunChecks(t), "cuda.runtime").status, Status::kWarn);
}

// A live system whose libfabric has an efa provider (a stand-in: no machine here has EFA).
TEST_F(DoctorTest, EfaProviderPassesWhenLibfabricHasIt) {
  const fs::path lib = fs::path(dir_.path()) / "root/usr/lib/x86_64-linux-gnu/libfabric.so.1";
  fs::create_directories(lib.parent_path());
  fs::copy_file(FAKE_LIBFABRIC, lib);
  Target t = RootTarget(dir_.File("root"), {});
  t.live = true;
  const std::vector<Check> checks = RunChecks(t);
  EXPECT_EQ(Find(checks, "libfabric.library").summary, "libfabric 1.99");
  const Check efa = Find(checks, "libfabric.efa_provider");
  EXPECT_EQ(efa.status, Status::kPass) << efa.evidence;
  EXPECT_NE(efa.evidence.find("efa present, tcp absent"), std::string::npos) << efa.evidence;
}

// This machine's real libfabric, whose efa provider lists nothing without an EFA device: a node
// without one SKIPs the check (as efa.devices does), a node with EFA devices FAILs it.
TEST_F(DoctorTest, EfaProviderFailsOnlyOnANodeWithEfaDevices) {
  const fs::path lib = fs::path(dir_.path()) / "root/usr/lib/x86_64-linux-gnu/libfabric.so.1";
  fs::create_directories(lib.parent_path());
  // A link, not a copy: the loader then finds the instance this test already has, where a copy
  // would be a second libfabric whose parameter tables leak at exit (LeakSanitizer).
  fs::create_symlink(fs::canonical("/usr/lib/x86_64-linux-gnu/libfabric.so.1"), lib);
  Target t = RootTarget(dir_.File("root"), {});
  t.live = true;
  const Check none = Find(RunChecks(t), "libfabric.efa_provider");
  if (none.status == Status::kPass) GTEST_SKIP() << "this machine has an efa provider";
  EXPECT_EQ(none.status, Status::kSkip) << none.evidence;
  EXPECT_NE(none.evidence.find("efa absent"), std::string::npos) << none.evidence;
  EfaNode("p4d.24xlarge", 4);
  const Check efa = Find(RunChecks(t), "libfabric.efa_provider");
  EXPECT_EQ(efa.status, Status::kFail) << efa.evidence;
  EXPECT_FALSE(efa.fix.empty());
}

TEST_F(DoctorTest, NcclLibraryVersionAndTwoVersionsWarn) {
  FakeNccl("/usr/lib/x86_64-linux-gnu", "2.21.5");
  Check c = Run("nccl.library");
  EXPECT_EQ(c.status, Status::kPass);
  EXPECT_EQ(c.summary, "NCCL 2.21.5");
  FakeNccl("/usr/local/lib/python3.11/dist-packages/nvidia/nccl/lib", "2.26.2");
  c = Run("nccl.library");
  EXPECT_EQ(c.status, Status::kWarn) << c.evidence;
  EXPECT_NE(c.evidence.find("2.26.2"), std::string::npos);
  EXPECT_FALSE(c.fix.empty());
}

TEST_F(DoctorTest, LdLibraryPathDecidesWhichNcclLoads) {
  FakeNccl("/usr/lib/x86_64-linux-gnu", "2.21.5");
  FakeNccl("/opt/nccl/lib", "2.28.9");
  EXPECT_TRUE(
      Run("nccl.library")
          .evidence.starts_with("loader picks /usr/lib/x86_64-linux-gnu/libnccl.so.2 2.21.5;"));
  EXPECT_TRUE(Run("nccl.library", {{"LD_LIBRARY_PATH", "/opt/nccl/lib"}})
                  .evidence.starts_with("loader picks /opt/nccl/lib/libnccl.so.2 2.28.9;"));
}

TEST_F(DoctorTest, NetPluginMissingOnAnEfaNodeFails) {
  EfaNode("p5.48xlarge", 32);
  Check c = Run("nccl.net_plugin");
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_NE(c.fix.find("aws-ofi-nccl"), std::string::npos);
}

TEST_F(DoctorTest, NetPluginPassesWhenItsDependenciesResolve) {
  EfaNode("p5.48xlarge", 32);
  Plugin();
  const Check c = Run("nccl.net_plugin");
  EXPECT_EQ(c.status, Status::kPass) << c.summary << " " << c.evidence;
  EXPECT_NE(c.evidence.find("API v8"), std::string::npos) << c.evidence;
}

TEST_F(DoctorTest, NetPluginWithoutLibfabricFails) {
  EfaNode("p5.48xlarge", 32);
  Plugin("libfabric.so.1");
  const Check c = Run("nccl.net_plugin");
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_NE(c.evidence.find("libfabric.so.1"), std::string::npos) << c.evidence;
}

TEST_F(DoctorTest, LibfabricMissingOnAnEfaNodeFailsAndFoundPasses) {
  EfaNode("g6.12xlarge", 1);
  EXPECT_EQ(Run("libfabric.library").status, Status::kFail);
  Put("/opt/amazon/efa/lib/libfabric.so.1");
  const Check c = Run("libfabric.library");
  EXPECT_EQ(c.status, Status::kPass);
  EXPECT_EQ(c.evidence, "/opt/amazon/efa/lib/libfabric.so.1");
}

TEST_F(DoctorTest, EfaDevicesAgainstTheInstanceType) {
  EfaNode("p5.48xlarge", 2);
  Check c = Run("efa.devices");
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_NE(c.evidence.find("expects 32"), std::string::npos) << c.evidence;
  EfaNode("p5.48xlarge", 32);
  EXPECT_EQ(Run("efa.devices").status, Status::kPass);
}

TEST_F(DoctorTest, EfaDevicesSkipOnANodeLaunchedWithoutEfa) {
  EfaNode("g6.12xlarge", 0);
  const Check c = Run("efa.devices");
  EXPECT_EQ(c.status, Status::kSkip) << "EFA is optional on g6: no fault, no doctor alert";
  EXPECT_EQ(c.summary, "no EFA device: the node was launched without EFA");
}

TEST_F(DoctorTest, VerbsDevicesNeededOnAnEfaNode) {
  EfaNode("g6.12xlarge", 1);
  EXPECT_EQ(Run("efa.uverbs").status, Status::kFail);
  Put("/dev/infiniband/uverbs0");
  EXPECT_EQ(Run("efa.uverbs").status, Status::kPass);
}

TEST_F(DoctorTest, PeermemExpectedWhereGpuDirectRdmaIs) {
  EfaNode("p5.48xlarge", 32);
  EXPECT_EQ(Run("gpu.peermem").status, Status::kWarn);
  Put("/sys/module/nvidia_peermem/refcnt", "0\n");
  EXPECT_EQ(Run("gpu.peermem").status, Status::kPass);
  EXPECT_EQ(common::SupportsGpuDirectRdma("g6.12xlarge"), false);
}

TEST_F(DoctorTest, SettingsEachWay) {
  EfaNode("p5.48xlarge", 32);
  EXPECT_EQ(Run("settings.nccl_socket_ifname", {{"NCCL_SOCKET_IFNAME", "lo"}}).status,
            Status::kFail);
  EXPECT_EQ(Run("settings.nccl_socket_ifname", {{"NCCL_SOCKET_IFNAME", "=docker0"}}).status,
            Status::kFail);
  EXPECT_EQ(Run("settings.nccl_socket_ifname", {{"NCCL_SOCKET_IFNAME", "^lo,docker"}}).status,
            Status::kPass);
  EXPECT_EQ(Run("settings.nccl_net", {{"NCCL_IB_DISABLE", "1"}}).status, Status::kFail);
  EXPECT_EQ(Run("settings.nccl_net", {{"NCCL_NET", "Socket"}}).status, Status::kFail);
  EXPECT_EQ(Run("settings.nccl_net").status, Status::kPass);
  EXPECT_EQ(Run("settings.fi_provider", {{"FI_PROVIDER", "tcp"}}).status, Status::kFail);
  EXPECT_EQ(Run("settings.fi_provider", {{"FI_PROVIDER", "efa"}}).status, Status::kPass);
  EXPECT_EQ(Run("settings.fi_efa_use_device_rdma", {{"FI_EFA_USE_DEVICE_RDMA", "0"}}).status,
            Status::kWarn);
  EXPECT_EQ(Run("settings.fi_efa_use_device_rdma", {{"FI_EFA_USE_DEVICE_RDMA", "1"}}).status,
            Status::kPass);
  EXPECT_EQ(Run("settings.nccl_debug").status, Status::kWarn);
  EXPECT_EQ(Run("settings.nccl_debug", {{"NCCL_DEBUG", "INFO"}}).status, Status::kPass);
  EXPECT_EQ(Run("settings.nccl_overrides", {{"NCCL_PROTO", "Simple"}}).status, Status::kWarn);
  EXPECT_EQ(Run("settings.nccl_overrides").status, Status::kPass);
}

TEST_F(DoctorTest, InspectorSaysWhetherItIsLoadedAndWhereItWrites) {
  EXPECT_EQ(Run("nccl.inspector").status, Status::kSkip);
  const std::map<std::string, std::string> loaded = {
      {"NCCL_PROFILER_PLUGIN", "/opt/nccl-inspector/libnccl-profiler-inspector.so"},
      {"NCCL_INSPECTOR_ENABLE", "1"},
      {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "1000000"},
      {"NCCL_INSPECTOR_DUMP_DIR", "/tmp/ray/nccl-inspector"}};
  const Check ok = Run("nccl.inspector", loaded);
  EXPECT_EQ(ok.status, Status::kPass) << ok.summary;
  EXPECT_NE(ok.summary.find("JSON Lines to /tmp/ray/nccl-inspector every 1000 ms"),
            std::string::npos)
      << ok.summary;
  auto with = [&](const std::string& k, const std::string& v) {
    auto env = loaded;
    env[k] = v;
    return Run("nccl.inspector", env);
  };
  EXPECT_EQ(with("NCCL_INSPECTOR_ENABLE", "0").status, Status::kWarn);
  EXPECT_EQ(with("NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS", "-1").status, Status::kWarn)
      << "the default writes nothing while the job runs";
  const Check relative = with("NCCL_INSPECTOR_DUMP_DIR", "inspector");
  EXPECT_EQ(relative.status, Status::kWarn);
  EXPECT_NE(relative.summary.find("relative"), std::string::npos) << relative.summary;
  EXPECT_NE(with("NCCL_INSPECTOR_PROM_DUMP", "1").summary.find("Prometheus textfiles"),
            std::string::npos);
}

TEST_F(DoctorTest, SettingsThatForceTcpOnlyWarnWithoutEfa) {
  EXPECT_EQ(Run("settings.fi_provider", {{"FI_PROVIDER", "tcp"}}).status, Status::kWarn);
  EXPECT_EQ(Run("settings.nccl_net", {{"NCCL_IB_DISABLE", "1"}}).status, Status::kWarn);
}

Versions Np(const std::string& nccl, std::vector<int> plugin) {
  Versions v;
  v.nccl = nccl;
  v.plugin = std::move(plugin);
  return v;
}

Versions Gr(const std::string& type, const std::string& rdma) {
  Versions v;
  v.instance_type = type;
  v.efa_use_device_rdma = rdma;
  return v;
}

TEST(KnownBadTest, EveryRowMatchesItsCaseAndNotItsNeighbours) {
  auto ids = [](const Versions& v) {
    std::vector<std::string> out;
    for (const KnownBad& b : MatchKnownBad(v)) out.push_back(b.id);
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(ids(Np("2.21.5", {4})), V{"nccl_2.19_plugin_v4"});
  EXPECT_EQ(ids(Np("2.21.5", {4, 5, 8})), V{});
  EXPECT_EQ(ids(Np("2.18.6", {4})), V{});
  EXPECT_EQ(ids(Np("2.18.3", {6, 7, 8})), V{"nccl_2.13_plugin_v6"});
  EXPECT_EQ(ids(Np("2.18.3", {5, 6})), V{});
  EXPECT_EQ(ids(Np("2.19.1", {})), V{});
  EXPECT_EQ(ids(Gr("g6.12xlarge", "1")), V{"g_series_device_rdma"});
  EXPECT_EQ(ids(Gr("p5.48xlarge", "1")), V{});
  for (const auto& v : {Np("2.21.5", {4}), Np("2.18.3", {8}), Gr("g5.48xlarge", "1")}) {
    for (const KnownBad& b : MatchKnownBad(v)) {
      EXPECT_FALSE(b.source.empty()) << b.id;
      EXPECT_FALSE(b.fix.empty()) << b.id;
    }
  }
  EXPECT_EQ(VersionCode("2.19.1"), 21901);
  EXPECT_EQ(VersionCode("x"), 0);
}

TEST_F(DoctorTest, KnownBadRowFromTheFilesFound) {
  FakeNccl("/usr/lib/x86_64-linux-gnu", "2.21.5");
  Put("/opt/amazon/ofi-nccl/lib/libnccl-net.so", std::string("ncclNetPlugin_v4") + '\0');
  const Check c = Run("known_bad.nccl_2.19_plugin_v4");
  EXPECT_EQ(c.status, Status::kFail);
  EXPECT_NE(c.evidence.find("src/net.cc"), std::string::npos);
}

// A fixture /proc: one process with its environment, maps, limits and root.
TEST_F(DoctorTest, ProcessTargetReadsEnvironmentMapsAndLimits) {
  const fs::path proc = fs::path(dir_.path()) / "proc";
  const fs::path p = proc / "4242";
  fs::create_directories(p / "root/usr/lib");
  WriteFile((p / "root/usr/lib/libfabric.so.1").string(), "");
  WriteFile((p / "environ").string(),
            std::string("NCCL_SOCKET_IFNAME=lo") + '\0' + "FI_PROVIDER=tcp" + '\0');
  WriteFile((p / "maps").string(),
            "7f00-7f01 r-xp 00000000 08:01 12 /usr/lib/libfabric.so.1\n7f02-7f03 rw-p 0 0:0 0\n");
  WriteFile((p / "limits").string(),
            "Limit                     Soft Limit           Hard Limit           Units\n"
            "Max locked memory         65536                65536                bytes\n");
  auto t = ProcessTarget(proc, 4242);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->env.at("FI_PROVIDER"), "tcp");
  ASSERT_EQ(t->mapped.size(), 1u);
  EXPECT_EQ(t->mapped[0], "/usr/lib/libfabric.so.1");
  t->live = false;  // the fixture library is not a real one: do not load it
  std::map<std::string, Check> by_id;
  for (const Check& c : RunChecks(*t)) by_id[c.id] = c;
  EXPECT_EQ(by_id["limits.memlock"].status, Status::kWarn);  // no EFA device in the fixture
  EXPECT_EQ(by_id["limits.memlock"].evidence, "65536 bytes");
  EXPECT_EQ(by_id["settings.nccl_socket_ifname"].status, Status::kFail);
  EXPECT_EQ(by_id["libfabric.library"].evidence, "/usr/lib/libfabric.so.1");
  WriteFile((p / "limits").string(),
            "Max locked memory         unlimited            unlimited            bytes\n");
  for (const Check& c : RunChecks(*t)) by_id[c.id] = c;
  EXPECT_EQ(by_id["limits.memlock"].status, Status::kPass);
  EXPECT_FALSE(ProcessTarget(proc, 1).ok());
}

constexpr char kInspectorStart[] =
    "NCCL Inspector Plugin - Version: v2.30.3-1\n"
    "NCCL Inspector Environment Variables:\n"
    "  NCCL_INSPECTOR_ENABLE = 1\n"
    "  NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS = 1000000\n"
    "  NCCL_INSPECTOR_DUMP_DIR = /tmp/ray/inspector\n"
    "  NCCL_INSPECTOR_PROM_DUMP = 1\n"
    "w-0:7:7 [0] NCCL INFO NCCL version 2.30.3+cuda13.0\n";

// --pid: the process's own NCCL log (NCCL_DEBUG_FILE, %h and %p as the process sees them) holds
// the Inspector's start lines; the check names what the plugin really does, whatever the
// environment says, and whether its directory is in a volume.
TEST_F(DoctorTest, InspectorStartLinesInTheProcessLogNameModeDirectoryAndInterval) {
  const fs::path proc = fs::path(dir_.path()) / "proc";
  const fs::path p = proc / "4242";
  fs::create_directories(p / "root/etc");
  fs::create_directories(p / "root/logs");
  WriteFile((p / "root/etc/hostname").string(), "w-0\n");
  WriteFile((p / "status").string(), "Name:\tpython\nNSpid:\t4242\t7\n");
  WriteFile((p / "environ").string(), std::string("NCCL_DEBUG_FILE=/logs/nccl.%h.%p.log") + '\0');
  WriteFile((p / "root/logs/nccl.w-0.7.log").string(), kInspectorStart);
  const std::string overlay_root =
      "1 0 0:31 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n";
  WriteFile((p / "mountinfo").string(),
            overlay_root + "2 1 259:1 /pods/x/volumes/ray /tmp/ray rw - ext4 /dev/nvme0n1p1 rw\n");
  auto t = ProcessTarget(proc, 4242);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->log_path, "/logs/nccl.w-0.7.log");
  t->live = false;
  Check c = Find(RunChecks(*t), "nccl.inspector");
  EXPECT_EQ(c.status, Status::kWarn) << "Prometheus mode raised the 1 s interval to 30 s";
  EXPECT_NE(c.summary.find("Prometheus textfiles to /tmp/ray/inspector, every 30000 ms (raised "
                           "from 1000 ms"),
            std::string::npos)
      << c.summary;
  EXPECT_NE(c.summary.find("v2.30.3-1"), std::string::npos) << c.summary;
  // The same in JSON mode: all is well.
  std::string json = kInspectorStart;
  json.replace(json.find("PROM_DUMP = 1"), 13, "PROM_DUMP = 0");
  WriteFile((p / "root/logs/nccl.w-0.7.log").string(), json);
  t = ProcessTarget(proc, 4242);
  c = Find(RunChecks(*t), "nccl.inspector");
  EXPECT_EQ(c.status, Status::kPass) << c.summary;
  EXPECT_NE(c.summary.find("JSON Lines to /tmp/ray/inspector, every 1000 ms"), std::string::npos)
      << c.summary;
  // The directory on the container's own root: no volume the agent reads.
  WriteFile((p / "mountinfo").string(), overlay_root);
  c = Find(RunChecks(*t), "nccl.inspector");
  EXPECT_EQ(c.status, Status::kWarn);
  EXPECT_NE(c.summary.find("in no volume the agent reads"), std::string::npos) << c.summary;
  // Written only at teardown (the default from 2.30).
  json.replace(json.find("= 1000000"), 9, "= (not set), default=-1");
  WriteFile((p / "root/logs/nccl.w-0.7.log").string(), json);
  t = ProcessTarget(proc, 4242);
  c = Find(RunChecks(*t), "nccl.inspector");
  EXPECT_EQ(c.status, Status::kWarn);
  EXPECT_NE(c.summary.find("only at teardown"), std::string::npos) << c.summary;
}

// A real process whose stderr is a file holding the start lines, read through the real /proc.
TEST_F(DoctorTest, InspectorStartLinesOfARealProcessThroughProc) {
  const std::string log = dir_.File("stderr.log");
  WriteFile(log, kInspectorStart);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND);
    ::dup2(fd, 2);
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Check c;
  for (int i = 0; i < 100 && c.summary.find("Prometheus") == std::string::npos; ++i) {
    auto t = ProcessTarget("/proc", child);
    if (t.ok()) {
      t->live = false;
      c = Find(RunChecks(*t), "nccl.inspector");
    }
    ::usleep(20000);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_NE(c.summary.find("Prometheus textfiles to /tmp/ray/inspector"), std::string::npos)
      << c.summary;
}

// /dev/shm through the process's root: a 64 MiB tmpfs (Kubernetes' default) fails, 1 GiB passes.
TEST_F(DoctorTest, ShmSizeOfTheProcess) {
  const fs::path proc = fs::path(dir_.path()) / "proc";
  const fs::path shm = proc / "7/root/dev/shm";
  fs::create_directories(shm);
  WriteFile((proc / "7/environ").string(), "");
  for (auto [size, want] : {std::pair{"64m", Status::kFail}, std::pair{"1g", Status::kPass}}) {
    if (mount("tmpfs", shm.c_str(), "tmpfs", 0, (std::string("size=") + size).c_str()) != 0) {
      GTEST_SKIP() << "mounting a tmpfs needs root: " << std::strerror(errno);
    }
    auto t = ProcessTarget(proc, 7);
    ASSERT_TRUE(t.ok());
    Check got;
    for (const Check& c : RunChecks(*t)) {
      if (c.id == "shm.size") got = c;
    }
    umount(shm.c_str());
    EXPECT_EQ(got.status, want) << got.evidence;
  }
}

// This machine's real libfabric: its version through fi_version, the efa provider absent (no
// EFA here) with a fix, tcp present.
TEST(DoctorRealLibrariesTest, Libfabric) {
  std::map<std::string, Check> by_id;
  for (const Check& c : RunChecks(SelfTarget({}))) by_id[c.id] = c;
  const uint32_t v = fi_version();
  const std::string version = std::to_string(FI_MAJOR(v)) + "." + std::to_string(FI_MINOR(v));
  EXPECT_EQ(by_id["libfabric.library"].status, Status::kPass);
  EXPECT_EQ(by_id["libfabric.library"].summary, "libfabric " + version);
  const Check& efa = by_id["libfabric.efa_provider"];
  if (efa.status == Status::kPass) GTEST_SKIP() << "this machine has an efa provider";
  // No EFA device on this machine: nothing to fail (EfaProviderFailsOnlyOnANodeWithEfaDevices).
  const bool no_device = by_id["efa.devices"].evidence.starts_with("0 found");
  EXPECT_EQ(efa.status, no_device ? Status::kSkip : Status::kFail) << efa.evidence;
  EXPECT_NE(efa.evidence.find("tcp present"), std::string::npos) << efa.evidence;
}

// The NCCL CUDA installs: the version the check reports is the one the library itself returns
// from ncclGetVersion.
TEST(DoctorRealLibrariesTest, NcclUnderCuda) {
  const std::string lib = "/usr/local/cuda/lib64/libnccl.so.2";
  if (!fs::exists(lib)) GTEST_SKIP() << "no NCCL at " << lib;
  const std::optional<std::string> asked = AskNcclVersion(lib);
  ASSERT_TRUE(asked.has_value());
  EXPECT_EQ(NcclVersionInFile(lib), *asked);
  Check got;
  for (const Check& c : RunChecks(SelfTarget({{"LD_LIBRARY_PATH", "/usr/local/cuda/lib64"}}))) {
    if (c.id == "nccl.library") got = c;
  }
  EXPECT_EQ(got.summary, "NCCL " + *asked) << got.evidence;
}

}  // namespace
}  // namespace efawatch::doctor
