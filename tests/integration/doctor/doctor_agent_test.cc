// SPDX-License-Identifier: Apache-2.0
// RunDoctor over gRPC against a real efawatchd whose host /proc is a fixture tree: one training
// process of a pod (libnccl mapped, NCCL_SOCKET_IFNAME=lo, a kubepods cgroup), one unrelated
// process. The report attributes the process to its pod, /metrics counts the pod's FAILs, and
// each FAIL is a finding.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "tests/support/agent_process.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr char kUid[] = "1f2e3d4c-0000-4000-8000-00000000abcd";

void Process(const fs::path& proc, int pid, const std::string& maps, const std::string& environ,
             const std::string& cgroup) {
  fs::create_directories(proc / std::to_string(pid) / "root");
  testing::WriteFile((proc / std::to_string(pid) / "maps").string(), maps);
  testing::WriteFile((proc / std::to_string(pid) / "environ").string(), environ);
  testing::WriteFile((proc / std::to_string(pid) / "cgroup").string(), cgroup);
  testing::WriteFile((proc / std::to_string(pid) / "limits").string(),
                     "Max locked memory         unlimited            unlimited            bytes\n");
}

TEST(DoctorAgentTest, RunDoctorReportsTheNcclProcessOfAPod) {
  testing::TempDir dir;
  const fs::path proc = fs::path(dir.path()) / "proc";
  const fs::path pods = fs::path(dir.path()) / "pods";
  fs::create_directories(pods / (std::string("ml_trainer-0_") + kUid) / "main");
  Process(proc, 4242,
          "7f00-7f01 r-xp 00000000 08:01 12 /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5\n",
          std::string("NCCL_SOCKET_IFNAME=lo") + '\0' + "NCCL_DEBUG=INFO" + '\0',
          std::string("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod") +
              "1f2e3d4c_0000_4000_8000_00000000abcd.slice/"
              "cri-containerd-0123456789abcdef0123456789abcdef.scope\n");
  Process(proc, 77, "7f00-7f01 r-xp 00000000 08:01 12 /usr/lib/libc.so.6\n", "", "0::/\n");

  testing::AgentProcess agent("tcp", "lo",
                              {"--procfs-root=" + proc.string(), "--pod-log-root=" + pods.string(),
                               "--doctor-interval-ms=0"});
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  auto stub = agent.Stub();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::DoctorReport report;
  const grpc::Status st = stub->RunDoctor(&ctx, v1::RunDoctorRequest(), &report);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(report.node_size(), 3);       // driver, peermem, EFA devices
  ASSERT_EQ(report.processes_size(), 1);  // pid 77 has no libnccl
  const v1::DoctorProcess& p = report.processes(0);
  EXPECT_EQ(p.pid(), 4242u);
  EXPECT_EQ(p.namespace_(), "ml");
  EXPECT_EQ(p.pod(), "trainer-0");
  EXPECT_EQ(p.container_id(), "0123456789abcdef0123456789abcdef");
  std::string ifname_status;
  for (const auto& c : p.checks()) {
    if (c.id() == "settings.nccl_socket_ifname") ifname_status = c.status();
  }
  EXPECT_EQ(ifname_status, "FAIL");

  // The report's FAILs on /metrics and as findings (the run above published them).
  const auto [code, body] = testing::HttpGet(agent.metrics_port(), "/metrics");
  ASSERT_EQ(code, 200);
  EXPECT_NE(body.find("efawatch_doctor_pod_failures{namespace=\"ml\",pod=\"trainer-0\"}"),
            std::string::npos);
  EXPECT_NE(body.find("efawatch_doctor_checks{check=\"efa.devices\""), std::string::npos);
  if (testing::OnPath("promtool")) {
    testing::WriteFile(dir.File("scrape.prom"), body);
    const auto [rc, out] = testing::RunCommand(
        {"/bin/sh", "-c", "promtool check metrics < " + dir.File("scrape.prom")}, 30s);
    EXPECT_EQ(rc, 0) << out;
  }
  grpc::ClientContext hctx;
  v1::NodeHealth health;
  ASSERT_TRUE(stub->GetNodeHealth(&hctx, v1::GetNodeHealthRequest(), &health).ok());
  bool found = false;
  for (const auto& f : health.findings()) {
    found = found || (f.kind() == "doctor_check_failed" && f.subject() == "ml/trainer-0" &&
                      f.message().starts_with("settings.nccl_socket_ifname"));
  }
  EXPECT_TRUE(found) << health.DebugString();
}

}  // namespace
}  // namespace efawatch
