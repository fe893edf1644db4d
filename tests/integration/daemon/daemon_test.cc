// SPDX-License-Identifier: Apache-2.0
// The real efawatchd, started as a process on port 0, reached over real HTTP and real gRPC.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "efawatch/v1/agent.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Subprocess;
using testing::TempDir;
using namespace std::chrono_literals;

struct Ports {
  int metrics = 0;
  int grpc = 0;
};

// Polls the port file the agent writes once both edges are bound.
std::optional<Ports> WaitForPorts(const std::string& path, Subprocess& proc) {
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  const std::regex re(R"re("metrics": (\d+), "grpc": (\d+))re");
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch m;
    const std::string text = testing::ReadFileOrEmpty(path);
    if (std::regex_search(text, m, re)) return Ports{std::stoi(m[1]), std::stoi(m[2])};
    if (proc.Wait(0ms)) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

class Agent {
 public:
  Agent(const TempDir& dir, std::vector<std::string> extra) {
    std::vector<std::string> argv = {
        testing::BinaryPath("bin/efawatchd"), "--metrics-listen=127.0.0.1:0",
        "--grpc-listen=127.0.0.1:0",          "--port-file=" + dir.File("ports.json"),
        "--sysfs-root=" + dir.path(),         "--pod-log-root=" + dir.path(),
        "--state-dir=" + dir.path()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<Subprocess>(argv);
    ports_ = WaitForPorts(dir.File("ports.json"), *proc_);
  }
  Subprocess& proc() { return *proc_; }
  const std::optional<Ports>& ports() const { return ports_; }

 private:
  std::unique_ptr<Subprocess> proc_;
  std::optional<Ports> ports_;
};

std::shared_ptr<grpc::Channel> Plain(int port) {
  return grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                             grpc::InsecureChannelCredentials());
}

grpc::Status HealthCheck(const std::shared_ptr<grpc::Channel>& ch, const std::string& service,
                         grpc::health::v1::HealthCheckResponse* resp) {
  auto stub = grpc::health::v1::Health::NewStub(ch);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  return stub->Check(&ctx, req, resp);
}

grpc::Status NodeHealth(const std::shared_ptr<grpc::Channel>& ch, v1::NodeHealth* out) {
  auto stub = v1::Agent::NewStub(ch);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  return stub->GetNodeHealth(&ctx, v1::GetNodeHealthRequest(), out);
}

// SIGTERM must end the agent with exit code 0 within 2 s.
void ExpectCleanStop(Subprocess& proc) {
  const auto start = std::chrono::steady_clock::now();
  proc.Signal(SIGTERM);
  auto code = proc.Wait(2s);
  ASSERT_TRUE(code.has_value()) << "agent still running 2 s after SIGTERM";
  EXPECT_EQ(*code, 0) << proc.Stderr();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(DaemonTest, ServesMetricsThatPromtoolAcceptsAndGrpcHealthThenStopsOnSigterm) {
  TempDir dir;
  Agent agent(dir, {});
  ASSERT_TRUE(agent.ports()) << agent.proc().Stderr();

  auto [status, body] = testing::HttpGet(agent.ports()->metrics, "/metrics");
  ASSERT_EQ(status, 200);
  EXPECT_THAT(body, HasSubstr("efawatch_build_info{"));
  EXPECT_THAT(body, HasSubstr("efawatch_start_time_seconds "));
  EXPECT_THAT(body, HasSubstr("efawatch_collector_success{collector=\"efa\"} 1"));
  EXPECT_THAT(body, HasSubstr("efawatch_collector_duration_seconds{collector=\"process\"}"));
  EXPECT_THAT(body, HasSubstr("efawatch_efa_devices 0"));

  if (!testing::OnPath("promtool")) GTEST_SKIP() << "promtool not installed (apt: prometheus)";
  testing::WriteFile(dir.File("scrape.prom"), body);
  auto [rc, out] = testing::RunCommand(
      {"/bin/sh", "-c", "promtool check metrics < " + dir.File("scrape.prom") + " 2>&1"}, 30s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << "promtool complained";

  grpc::health::v1::HealthCheckResponse hc;
  auto ch = Plain(agent.ports()->grpc);
  ASSERT_TRUE(HealthCheck(ch, "", &hc).ok());
  EXPECT_EQ(hc.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  ASSERT_TRUE(HealthCheck(ch, "efawatch.v1.Agent", &hc).ok());
  EXPECT_EQ(hc.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  v1::NodeHealth h;
  ASSERT_TRUE(NodeHealth(ch, &h).ok());
  EXPECT_FALSE(h.node().empty());
  EXPECT_EQ(h.efa_devices(), 0u);
  std::set<std::string> names;
  for (const auto& c : h.collectors()) names.insert(c.name());
  EXPECT_TRUE(names.contains("efa"));
  EXPECT_TRUE(names.contains("process"));

  ExpectCleanStop(agent.proc());
}

TEST(DaemonTest, CliStatusReachesTheAgentAndFailsFastOnAnUnreachableOne) {
  TempDir dir;
  Agent agent(dir, {});
  ASSERT_TRUE(agent.ports()) << agent.proc().Stderr();
  const std::string cli = testing::BinaryPath("bin/efawatch");
  auto [rc, out] =
      testing::RunCommand({cli, "status", "--agent",
                           "127.0.0.1:" + std::to_string(agent.ports()->grpc), "--format", "json"},
                          10s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("\"efa_devices\":0"));
  ExpectCleanStop(agent.proc());

  // Nothing listens there any more: one line, non-zero, well within the timeout.
  const auto start = std::chrono::steady_clock::now();
  auto [rc2, out2] = testing::RunCommand(
      {cli, "status", "--agent", "127.0.0.1:" + std::to_string(agent.ports()->grpc), "--timeout-ms",
       "3000"},
      10s);
  EXPECT_NE(rc2, 0);
  EXPECT_THAT(out2, HasSubstr("unreachable"));
  EXPECT_EQ(std::count(out2.begin(), out2.end(), '\n'), 1) << out2;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// The default install's gRPC: a unix socket only the pod reaches, found by the CLI through
// EFAWATCH_AGENT (kubectl exec ... efawatch status, no flags).
TEST(DaemonTest, GrpcOnAUnixSocketServesTheCliNamedByEfawatchAgent) {
  TempDir dir;
  const std::string socket = dir.File("grpc.sock");
  testing::WriteFile(socket, "a file left by a killed agent");
  Agent agent(dir, {"--grpc-listen=unix:" + socket});
  ASSERT_TRUE(agent.ports()) << agent.proc().Stderr();
  struct stat st {};
  ASSERT_EQ(::stat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "only the agent's user may connect";
  auto [rc, out] =
      testing::RunCommand({"/usr/bin/env", "EFAWATCH_AGENT=unix:" + socket,
                           testing::BinaryPath("bin/efawatch"), "status", "--format", "json"},
                          10s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("\"efa_devices\":0"));
  ExpectCleanStop(agent.proc());
}

void MakeCertificates(const TempDir& dir) {
  auto made = testing::MakeTestCertificates(dir.path());
  ASSERT_TRUE(made.empty()) << made;
}

std::shared_ptr<grpc::Channel> Tls(const TempDir& dir, int port, bool with_client_cert) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = testing::ReadFileOrEmpty(dir.File("ca.pem"));
  if (with_client_cert) {
    ssl.pem_cert_chain = testing::ReadFileOrEmpty(dir.File("client.pem"));
    ssl.pem_private_key = testing::ReadFileOrEmpty(dir.File("client.key"));
  }
  return grpc::CreateChannel("localhost:" + std::to_string(port), grpc::SslCredentials(ssl));
}

TEST(DaemonTest, MutualTlsAcceptsAClientWithACertificateAndRefusesOneWithout) {
  if (!testing::OnPath("openssl")) GTEST_SKIP() << "openssl not installed";
  TempDir dir;
  MakeCertificates(dir);
  Agent agent(
      dir, {"--grpc-tls-cert=" + dir.File("server.pem"), "--grpc-tls-key=" + dir.File("server.key"),
            "--grpc-tls-client-ca=" + dir.File("ca.pem")});
  ASSERT_TRUE(agent.ports()) << agent.proc().Stderr();

  grpc::health::v1::HealthCheckResponse hc;
  auto good = Tls(dir, agent.ports()->grpc, true);
  ASSERT_TRUE(HealthCheck(good, "", &hc).ok());
  EXPECT_EQ(hc.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  v1::NodeHealth h;
  EXPECT_TRUE(NodeHealth(good, &h).ok());

  auto anonymous = Tls(dir, agent.ports()->grpc, false);
  auto st = NodeHealth(anonymous, &h);
  EXPECT_FALSE(st.ok()) << "a client without a certificate must be refused";
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);

  auto plaintext = Plain(agent.ports()->grpc);
  EXPECT_FALSE(NodeHealth(plaintext, &h).ok());

  // The CLI speaks mutual TLS too.
  auto [rc, out] = testing::RunCommand(
      {testing::BinaryPath("bin/efawatch"), "status", "--agent",
       "localhost:" + std::to_string(agent.ports()->grpc), "--tls-ca", dir.File("ca.pem"),
       "--tls-cert", dir.File("client.pem"), "--tls-key", dir.File("client.key")},
      10s);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_THAT(out, HasSubstr("efa:      absent"));

  ExpectCleanStop(agent.proc());
}

// Bad configurations end the agent at start with exit code 2 and one line naming the problem.
void ExpectBadConfig(const std::vector<std::string>& args, const std::string& expected) {
  std::vector<std::string> argv = {testing::BinaryPath("bin/efawatchd")};
  argv.insert(argv.end(), args.begin(), args.end());
  Subprocess p(argv);
  auto code = p.Wait(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  const std::string err = p.Stderr();
  EXPECT_THAT(err, HasSubstr(expected));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(DaemonTest, UnknownFlagExits2) {
  ExpectBadConfig({"--frobnicate"}, "unknown flag --frobnicate");
}

TEST(DaemonTest, BadAddressExits2) {
  ExpectBadConfig({"--metrics-listen=999.1.1.1:80"}, "--metrics-listen=999.1.1.1:80");
}

TEST(DaemonTest, UnreadableTlsFileExits2) {
  ExpectBadConfig({"--grpc-tls-cert=/nonexistent/cert.pem", "--grpc-tls-key=/nonexistent/key"},
                  "--grpc-tls-cert=/nonexistent/cert.pem: cannot read file");
}

TEST(DaemonTest, PortInUseExits2) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  TempDir dir;
  ExpectBadConfig({"--metrics-listen=127.0.0.1:" + port, "--grpc-listen=127.0.0.1:0",
                   "--pod-log-root=" + dir.path(), "--log-level=error"},
                  "metrics listen 127.0.0.1:" + port);
  ExpectBadConfig({"--metrics-listen=127.0.0.1:0", "--grpc-listen=127.0.0.1:" + port,
                   "--pod-log-root=" + dir.path(), "--log-level=error"},
                  "grpc listen 127.0.0.1:" + port);
  close(fd);
}

}  // namespace
}  // namespace efawatch

namespace efawatch {
namespace {

// Without --instance-type, the type comes from the DMI product name under the sysfs root. A type
// that supports EFA on a node launched without any is an info finding, never critical (the
// default, --efa-expected-devices=auto); =type holds the node to the type's count, as before.
TEST(DaemonTest, InstanceTypeFromTheDmiProductName) {
  TempDir dir;
  const std::string sys = dir.File("sys");
  std::filesystem::create_directories(sys + "/devices/virtual/dmi/id");
  testing::WriteFile(sys + "/devices/virtual/dmi/id/product_name", "p5.48xlarge\n");
  {
    Agent agent(dir, {"--sysfs-root=" + sys});
    ASSERT_TRUE(agent.ports()) << agent.proc().Stderr();
    auto [status, body] = testing::HttpGet(agent.ports()->metrics, "/metrics");
    ASSERT_EQ(status, 200);
    EXPECT_THAT(body, HasSubstr("efawatch_findings{kind=\"efa_not_attached\",severity=\"info\","
                                "namespace=\"\",pod=\"\"} 1\n"));
    EXPECT_THAT(body, Not(HasSubstr("efawatch_efa_devices_expected ")));
    EXPECT_THAT(body, Not(HasSubstr("severity=\"critical\"")));
    ExpectCleanStop(agent.proc());
  }
  TempDir dir2;
  Agent strict(dir2, {"--sysfs-root=" + sys, "--efa-expected-devices=type"});
  ASSERT_TRUE(strict.ports()) << strict.proc().Stderr();
  auto [status, body] = testing::HttpGet(strict.ports()->metrics, "/metrics");
  ASSERT_EQ(status, 200);
  EXPECT_THAT(body, HasSubstr("efawatch_efa_devices_expected 32\n"));
  EXPECT_THAT(body,
              HasSubstr("efawatch_findings{kind=\"efa_devices_missing\",severity=\"critical\""));
  ExpectCleanStop(strict.proc());
}

// `efawatchd --sysfs-root <p5 fixture>` serves every line of the component test's golden scrape.
TEST(DaemonTest, ServesEveryEfaCounterOfTheP5Fixture) {
  const std::string fixture = testing::SourceDir() + "/tests/fixtures/sysfs/p5.48xlarge";
  TempDir dir;
  Agent agent(dir, {"--sysfs-root=" + fixture + "/sys", "--procfs-root=" + fixture + "/proc",
                    "--instance-type=p5.48xlarge"});
  ASSERT_TRUE(agent.ports()) << agent.proc().Stderr();
  auto [status, body] = testing::HttpGet(agent.ports()->metrics, "/metrics");
  ASSERT_EQ(status, 200);
  std::istringstream golden(testing::ReadFileOrEmpty(fixture + ".prom"));
  int lines = 0;
  for (std::string line; std::getline(golden, line);) {
    // Read counts grow with every scrape; everything else is fixed by the fixture.
    if (line.starts_with("efawatch_rdma_device_reads_total")) continue;
    EXPECT_THAT(body, HasSubstr(line + "\n"));
    ++lines;
  }
  EXPECT_GT(lines, 32 * 34);
  EXPECT_THAT(body, HasSubstr("efawatch_efa_devices_expected 32\n"));
  ExpectCleanStop(agent.proc());
}

}  // namespace
}  // namespace efawatch

namespace efawatch {
namespace {

// EFA findings reach a WatchFindings stream when raised and again when they clear.
TEST(DaemonTest, WatchFindingsStreamsEfaFindingsRaisedAndCleared) {
  namespace fs = std::filesystem;
  TempDir dir;
  const std::string fixture = testing::SourceDir() + "/tests/fixtures/sysfs/g6.12xlarge";
  fs::copy(fixture, dir.File("tree"), fs::copy_options::recursive);
  const std::string counter =
      dir.File("tree/sys/class/infiniband/rdmap0s31/hw_counters/no_completion_cmds");
  Agent agent(dir, {"--sysfs-root=" + dir.File("tree/sys"),
                    "--procfs-root=" + dir.File("tree/proc"), "--efa-evaluate-interval-seconds=1"});
  ASSERT_TRUE(agent.ports()) << agent.proc().Stderr();

  auto stub = v1::Agent::NewStub(Plain(agent.ports()->grpc));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  auto reader = stub->WatchFindings(&ctx, v1::WatchFindingsRequest());
  testing::WriteFile(counter, "1\n");
  v1::FindingEvent e;
  ASSERT_TRUE(reader->Read(&e)) << "stream ended before the finding was raised";
  EXPECT_EQ(e.kind(), v1::FindingEvent::RAISED);
  EXPECT_EQ(e.finding().kind(), "efa_admin_queue_stuck");
  EXPECT_EQ(e.finding().severity(), v1::SEVERITY_CRITICAL);
  EXPECT_EQ(e.finding().subject(), "rdmap0s31");

  v1::NodeHealth h;
  ASSERT_TRUE(NodeHealth(Plain(agent.ports()->grpc), &h).ok());
  ASSERT_EQ(h.findings_size(), 1);
  EXPECT_EQ(h.findings(0).kind(), "efa_admin_queue_stuck");
  auto [status, body] = testing::HttpGet(agent.ports()->metrics, "/metrics");
  EXPECT_THAT(body, HasSubstr("efawatch_findings{kind=\"efa_admin_queue_stuck\",severity="
                              "\"critical\",namespace=\"\",pod=\"\"} 1"));

  testing::WriteFile(counter, "0\n");
  ASSERT_TRUE(reader->Read(&e));
  EXPECT_EQ(e.kind(), v1::FindingEvent::CLEARED);
  EXPECT_EQ(e.finding().kind(), "efa_admin_queue_stuck");
  ctx.TryCancel();
  ExpectCleanStop(agent.proc());
}

}  // namespace
}  // namespace efawatch
