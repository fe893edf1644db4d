// SPDX-License-Identifier: Apache-2.0
// Pod volume discovery over a fixture kubelet tree (pods/<uid>/volumes/...) and the tailer
// following what it finds: Ray's session_latest, worker files and their rotation, NCCL_DEBUG_FILE
// outputs, symlinks that leave a pod's volume, the per-pod cap, a deleted pod.
#include "daemon/logs/pod_volumes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "daemon/logs/tailer.h"
#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::logs {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kWorker[] =
    "worker-7f3a9c2e1b0d4f6a8e5c3b1a9d7f2e4c6b8a0d1e3f5a7c9b2d4e6f80-02000000-3105";

class PodVolumesTest : public ::testing::Test {
 protected:
  fs::path Root() const { return fs::path(dir_.path()); }
  // A pod with a log directory and an emptyDir volume "ray-logs"; returns the volume.
  fs::path Pod(const std::string& name, const std::string& uid) {
    fs::create_directories(Root() / "logs" / ("ray_" + name + "_" + uid) / "ray-worker");
    fs::path vol = Root() / "kubelet" / uid / "volumes/kubernetes.io~empty-dir/ray-logs";
    fs::create_directories(vol);
    return vol;
  }
  // A Ray session with its logs directory; session_latest points to it as Ray writes it.
  static fs::path Session(const fs::path& vol, const std::string& ts) {
    const fs::path s = vol / ("session_" + ts);
    fs::create_directories(s / "logs");
    std::error_code ec;
    fs::remove(vol / "session_latest", ec);
    fs::create_symlink("/tmp/ray/session_" + ts, vol / "session_latest");
    return s / "logs";
  }
  static void Append(const fs::path& f, const std::string& text) {
    std::ofstream out(f, std::ios::app);
    out << text;
  }
  PodVolumeOptions Options() const {
    PodVolumeOptions o;
    o.volume_root = Root() / "kubelet";
    o.pod_log_root = Root() / "logs";
    return o;
  }
  static std::vector<std::string> Names(const VolumeScan& s) {
    std::vector<std::string> out;
    for (const auto& f : s.files) out.push_back(f.path.filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  testing::TempDir dir_;
};

TEST_F(PodVolumesTest, RayLogNamesAreLiveWorkerAndDriverFilesOnly) {
  EXPECT_TRUE(IsRayLogName(std::string(kWorker) + ".out"));
  EXPECT_TRUE(IsRayLogName(std::string(kWorker) + ".err"));
  EXPECT_TRUE(IsRayLogName("job-driver-raysubmit_XYZ123.log"));
  EXPECT_FALSE(IsRayLogName(std::string(kWorker) + ".out.1")) << "Ray's rotated copy";
  EXPECT_FALSE(IsRayLogName(std::string(kWorker) + ".1.out")) << "rotated, spdlog's naming";
  EXPECT_FALSE(IsRayLogName("python-core-worker-7f3a_3105.log"));
  EXPECT_FALSE(IsRayLogName("raylet.out"));
}

TEST_F(PodVolumesTest, FindsTheLatestSessionsFilesAndDebugFilesAttributedToThePod) {
  const fs::path vol = Pod("rc-gpu-worker-a", "uid-a");
  const fs::path old_logs = Session(vol, "2026-03-01_08-00-00_000001_1");
  Append(old_logs / (std::string(kWorker) + ".out"), "old\n");
  const fs::path logs = Session(vol, "2026-03-02_09-00-00_000002_1");
  Append(logs / (std::string(kWorker) + ".out"), "x\n");
  Append(logs / (std::string(kWorker) + ".err"), "x\n");
  Append(logs / (std::string(kWorker) + ".out.1"), "rotated\n");
  Append(logs / "raylet.out", "raylet\n");
  Append(logs / "job-driver-raysubmit_1.log", "driver\n");
  fs::create_directories(vol / "nccl");
  Append(vol / "nccl" / "nccl.rc-gpu-worker-a.3105.log", "debug file\n");
  // Secrets are never read; a pod whose log directory is not there yet is skipped.
  fs::create_directories(Root() / "kubelet/uid-a/volumes/kubernetes.io~secret/token");
  Append(Root() / "kubelet/uid-a/volumes/kubernetes.io~secret/token/nccl.x.log", "no\n");
  fs::create_directories(Root() / "kubelet/uid-unnamed/volumes/kubernetes.io~empty-dir/v");
  Append(Root() / "kubelet/uid-unnamed/volumes/kubernetes.io~empty-dir/v/nccl.x.log", "no\n");

  const VolumeScan s = ScanPodVolumes(Options());
  EXPECT_THAT(Names(s), ElementsAre("job-driver-raysubmit_1.log", "nccl.rc-gpu-worker-a.3105.log",
                                    std::string(kWorker) + ".err", std::string(kWorker) + ".out"));
  for (const LogSource& f : s.files) {
    EXPECT_EQ(f.Key(), "ray/rc-gpu-worker-a/(volume:ray-logs)");
    EXPECT_EQ(f.origin, Origin::kPodVolume);
    EXPECT_EQ(f.uid, "uid-a");
    EXPECT_THAT(f.path.string(), Not(::testing::HasSubstr("2026-03-01")));
  }
  EXPECT_THAT(s.refused, IsEmpty());
  EXPECT_THAT(s.live_dirs, ElementsAre(logs));
}

TEST_F(PodVolumesTest, RefusesSymlinksLeavingThePodsVolume) {
  const fs::path vol_a = Pod("rc-gpu-worker-a", "uid-a");
  const fs::path vol_b = Pod("rc-gpu-worker-b", "uid-b");
  const fs::path logs_b = Session(vol_b, "2026-03-02_09-00-00_000002_1");
  Append(logs_b / (std::string(kWorker) + ".out"), "b's line\n");
  const fs::path logs_a = Session(vol_a, "2026-03-02_09-00-00_000003_1");
  fs::create_symlink("/etc/hostname", logs_a / (std::string(kWorker) + ".out"));
  fs::create_symlink(logs_b / (std::string(kWorker) + ".out"), logs_a / "worker-00-02000000-1.out");
  Append(vol_b / "nccl.b.log", "b's debug file\n");
  fs::create_symlink("../../../../uid-b/volumes/kubernetes.io~empty-dir/ray-logs/nccl.b.log",
                     vol_a / "nccl.a.log");
  Append(vol_a / "nccl.inside.log", "ok\n");
  // Stays inside: followed, as the file it names (read once, not once per name).
  fs::create_symlink("nccl.inside.log", vol_a / "nccl.link.log");

  const VolumeScan s = ScanPodVolumes(Options());
  std::vector<std::string> refused;
  for (const auto& p : s.refused) refused.push_back(p.lexically_relative(Root()).string());
  std::sort(refused.begin(), refused.end());
  const std::string a = "kubelet/uid-a/volumes/kubernetes.io~empty-dir/ray-logs/";
  const std::string logs = a + "session_2026-03-02_09-00-00_000003_1/logs/";
  EXPECT_THAT(refused, ElementsAre(a + "nccl.a.log", logs + "worker-00-02000000-1.out",
                                   logs + kWorker + ".out"));
  std::vector<std::string> pod_a;
  for (const auto& f : s.files) {
    if (f.uid == "uid-a") pod_a.push_back(f.path.filename().string());
  }
  std::sort(pod_a.begin(), pod_a.end());
  EXPECT_THAT(pod_a, ElementsAre("nccl.inside.log"));
}

TEST_F(PodVolumesTest, SessionLatestPointingOutsideTheVolumeIsRefused) {
  const fs::path vol = Pod("rc-gpu-worker-a", "uid-a");
  fs::create_directories(Root() / "elsewhere/logs");
  Append(Root() / "elsewhere/logs" / (std::string(kWorker) + ".out"), "x\n");
  fs::create_symlink(Root() / "elsewhere", vol / "session_latest");
  const VolumeScan s = ScanPodVolumes(Options());
  EXPECT_THAT(s.files, IsEmpty());
  EXPECT_THAT(s.refused, ElementsAre(vol / "session_latest"));
}

TEST_F(PodVolumesTest, CapsFilesPerPodKeepingTheMostRecentlyWritten) {
  const fs::path logs = Session(Pod("rc-gpu-worker-a", "uid-a"), "2026-03-02_09-00-00_1_1");
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 5; ++i) {
    const fs::path f = logs / ("worker-aa-02000000-" + std::to_string(100 + i) + ".out");
    Append(f, "x\n");
    fs::last_write_time(f, now - std::chrono::hours(10 - i));
  }
  PodVolumeOptions o = Options();
  o.max_files_per_pod = 2;
  const VolumeScan s = ScanPodVolumes(o);
  EXPECT_THAT(Names(s), ElementsAre("worker-aa-02000000-103.out", "worker-aa-02000000-104.out"));
  EXPECT_EQ(s.over_cap.size(), 3u);
}

// A tenant can fill its emptyDir with files named like Ray's: the walk reads a directory only
// up to max_dir_entries, reports it, and the per-pod cap then applies to what it read.
TEST_F(PodVolumesTest, ReadsAHugeDirectoryOnlyUpToItsEntryCap) {
  const fs::path logs = Session(Pod("rc-gpu-worker-a", "uid-a"), "2026-03-02_09-00-00_1_1");
  for (int i = 0; i < 40; ++i) {
    Append(logs / ("worker-aa-02000000-" + std::to_string(100 + i) + ".out"), "x\n");
  }
  PodVolumeOptions o = Options();
  o.max_dir_entries = 10;
  o.max_files_per_pod = 4;
  const VolumeScan s = ScanPodVolumes(o);
  EXPECT_THAT(s.truncated, ElementsAre(logs));
  EXPECT_EQ(s.files.size(), 4u);
  EXPECT_EQ(s.over_cap.size(), 6u) << "the 10 entries read, less the 4 followed";
  o.max_dir_entries = 100;
  EXPECT_THAT(ScanPodVolumes(o).truncated, IsEmpty());
}

class LineRecorder final : public LineSink {
 public:
  void OnLine(const LogSource& s, uint64_t, std::string_view line) override {
    lines.push_back(s.Key() + "|" + s.run + "|" + std::string(line));
  }
  void OnSourceGone(const LogSource& s) override { gone.push_back(s.Key()); }
  std::vector<std::string> lines;
  std::vector<std::string> gone;
};

TEST_F(PodVolumesTest, TailerFollowsSessionsRotationAndPodDeletion) {
  const fs::path vol = Pod("rc-gpu-worker-a", "uid-a");
  const fs::path logs1 = Session(vol, "1");
  const fs::path out1 = logs1 / (std::string(kWorker) + ".out");
  Append(out1, "a1\n");
  TailerOptions o;
  o.pod_log_root = Root() / "logs";
  o.volumes = Options();
  LineRecorder sink;
  common::FakeClock clock;
  Tailer t(o, &sink, clock);
  t.PollOnce();
  const std::string key = "ray/rc-gpu-worker-a/(volume:ray-logs)";
  EXPECT_THAT(sink.lines, ElementsAre(key + "|session_1|a1"));

  // Ray's rotation: worker.out -> worker.out.1, a new worker.out; nothing lost or doubled.
  Append(out1, "a2\n");
  fs::rename(out1, logs1 / (std::string(kWorker) + ".out.1"));
  t.PollOnce();
  Append(out1, "a3\n");
  t.PollOnce();
  EXPECT_THAT(sink.lines,
              ElementsAre(key + "|session_1|a1", key + "|session_1|a2", key + "|session_1|a3"));
  EXPECT_GE(t.counters().rotations, 1u);

  // A new session: the old one's files are drained and closed, the new one's followed.
  Append(out1, "a4\n");
  const fs::path logs2 = Session(vol, "2");
  Append(logs2 / (std::string(kWorker) + ".out"), "b1\n");
  t.PollOnce();
  EXPECT_THAT(sink.lines, Contains(key + "|session_1|a4"));
  EXPECT_EQ(sink.lines.back(), key + "|session_2|b1");
  EXPECT_EQ(t.counters().files_watched, 1u) << "the old session's file is closed";
  EXPECT_THAT(sink.gone, IsEmpty());

  // The pod is deleted: kubelet removes its volumes and its log directory.
  fs::remove_all(Root() / "kubelet/uid-a");
  fs::remove_all(Root() / "logs/ray_rc-gpu-worker-a_uid-a");
  t.PollOnce();
  EXPECT_THAT(sink.gone, Contains(key));
  EXPECT_EQ(t.counters().files_watched, 0u);
}

TEST_F(PodVolumesTest, TailerCountsRefusedSymlinksOnce) {
  const fs::path logs = Session(Pod("rc-gpu-worker-a", "uid-a"), "1");
  fs::create_symlink("/etc/hostname", logs / (std::string(kWorker) + ".out"));
  TailerOptions o;
  o.pod_log_root = Root() / "logs";
  o.volumes = Options();
  LineRecorder sink;
  common::FakeClock clock;
  Tailer t(o, &sink, clock);
  t.PollOnce();
  t.PollOnce();
  EXPECT_EQ(t.counters().files_refused, 1u);
  EXPECT_THAT(sink.lines, IsEmpty());
}

TEST_F(PodVolumesTest, TailerCountsATruncatedDirectoryOnce) {
  const fs::path logs = Session(Pod("rc-gpu-worker-a", "uid-a"), "1");
  for (int i = 0; i < 30; ++i) {
    Append(logs / ("worker-aa-02000000-" + std::to_string(100 + i) + ".out"), "x\n");
  }
  TailerOptions o;
  o.pod_log_root = Root() / "logs";
  o.volumes = Options();
  o.volumes.max_dir_entries = 10;
  o.volumes.max_files_per_pod = 100;
  LineRecorder sink;
  common::FakeClock clock;
  Tailer t(o, &sink, clock);
  t.PollOnce();
  t.PollOnce();
  EXPECT_EQ(t.counters().files_over_cap, 1u) << "the directory, once";
  EXPECT_EQ(t.counters().files_watched, 10u);
  EXPECT_EQ(t.counters().scans, 2u);
}

TEST(ContainerRootfsTest, ReadsThePodFromTheCgroupOfEitherDriver) {
  const CgroupPod systemd = PodOfCgroup(
      "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_0000_1111_2222_"
      "333344445555.slice/cri-containerd-"
      "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope\n");
  EXPECT_EQ(systemd.uid, "1a2b3c4d-0000-1111-2222-333344445555");
  EXPECT_EQ(systemd.container_id,
            "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
  const CgroupPod cgroupfs = PodOfCgroup(
      "12:memory:/kubepods/besteffort/pod9f8e7d6c-0000-1111-2222-333344445555/"
      "0123456789ab0123456789ab0123456789ab0123456789ab0123456789abcdef\n");
  EXPECT_EQ(cgroupfs.uid, "9f8e7d6c-0000-1111-2222-333344445555");
  EXPECT_EQ(PodOfCgroup("0::/user.slice/user-1000.slice/session-3.scope\n").uid, "");
}

TEST_F(PodVolumesTest, ContainerRootfsFindsRaySessionsThroughAFixtureProcTree) {
  const std::string uid = "1a2b3c4d-0000-1111-2222-333344445555";
  fs::create_directories(Root() / "logs" / ("ray_rc-head_" + uid) / "ray-head");
  const std::string cgroup =
      "0::/kubepods.slice/kubepods-pod1a2b3c4d_0000_1111_2222_333344445555.slice/"
      "cri-containerd-abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789.scope\n";
  // Two processes of the container (the first one's root is read) and one outside Kubernetes.
  for (const char* pid : {"4711", "4800"}) {
    fs::create_directories(Root() / "proc" / pid);
    Append(Root() / "proc" / pid / "cgroup", cgroup);
  }
  fs::create_directories(Root() / "proc/1");
  Append(Root() / "proc/1/cgroup", "0::/init.scope\n");
  fs::create_directories(Root() / "proc/self");
  const fs::path ray = Root() / "proc/4711/root/tmp/ray";
  fs::create_directories(ray / "session_2026-03-02_09-00-00_1_1/logs");
  fs::create_directories(ray / "session_2026-03-01_09-00-00_1_1/logs");
  fs::create_symlink("/tmp/ray/session_2026-03-02_09-00-00_1_1", ray / "session_latest");
  Append(ray / "session_2026-03-02_09-00-00_1_1/logs/job-driver-raysubmit_1.log", "d\n");
  Append(ray / "session_2026-03-01_09-00-00_1_1/logs/job-driver-raysubmit_0.log", "old\n");
  fs::create_symlink("/etc/hostname",
                     ray / "session_2026-03-02_09-00-00_1_1/logs/worker-a-b-1.out");

  PodVolumeOptions o = Options();
  o.volume_root.clear();
  o.container_rootfs_procfs = Root() / "proc";
  VolumeScan s;
  ScanContainerRootfs(o, s);
  ASSERT_EQ(s.files.size(), 1u);
  EXPECT_EQ(s.files[0].Key(), "ray/rc-head/(rootfs:abcdef012345)");
  EXPECT_EQ(s.files[0].origin, Origin::kContainerRootfs);
  EXPECT_EQ(s.files[0].run, "session_2026-03-02_09-00-00_1_1");
  EXPECT_EQ(s.files[0].path,
            ray / "session_2026-03-02_09-00-00_1_1/logs/job-driver-raysubmit_1.log");
  EXPECT_EQ(s.refused.size(), 1u) << "symlinks in a container's filesystem are never followed";

  // Off unless asked for.
  VolumeScan off;
  ScanContainerRootfs(Options(), off);
  EXPECT_THAT(off.files, IsEmpty());
}

}  // namespace
}  // namespace efawatch::logs
