// SPDX-License-Identifier: Apache-2.0
// Certificates and their CA rotated in place under three running agents that mesh over mutual
// TLS on loopback, the way kubelet updates a Secret volume: the files live behind a `current`
// link that is swapped at once. No agent restarts; the mesh goes on; a client of the new CA is
// accepted once the bundle holds it, and one of the old CA is refused once the old CA leaves.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "efawatch/v1/agent.grpc.pb.h"
#include "tests/support/agent_process.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

namespace fs = std::filesystem;
using testing::AgentProcess;
using testing::TempDir;
using namespace std::chrono_literals;

// A port free now on 127.0.0.1, for a mesh peer list written before the agents start.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    addr.sin_port = 0;
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The files the agents read, as a Secret volume holds them: root/current -> a version folder.
class SecretVolume {
 public:
  std::string File(const std::string& name) const { return dir_.File("current/" + name); }
  // Publishes a new version at once: the agent's files change together.
  void Publish(const std::string& agent_pem, const std::string& agent_key,
               const std::string& ca_bundle) {
    const std::string version = "v" + std::to_string(++versions_);
    fs::create_directories(dir_.File(version));
    testing::WriteFile(dir_.File(version + "/agent.pem"), agent_pem);
    testing::WriteFile(dir_.File(version + "/agent.key"), agent_key);
    testing::WriteFile(dir_.File(version + "/ca.pem"), ca_bundle);
    fs::create_symlink(version, dir_.File("current.new"));
    fs::rename(dir_.File("current.new"), dir_.File("current"));
  }

 private:
  TempDir dir_;
  int versions_ = 0;
};

std::string MakeCerts(const std::string& dir, bool new_ca) {
  std::vector<std::string> argv = {
      "/bin/bash", testing::SourceDir() + "/scripts/make-certs.sh", "--out", dir, "--days", "2"};
  if (new_ca) argv.push_back("--new-ca");
  auto [rc, out] = testing::RunCommand(argv, 60s);
  return rc == 0 ? "" : out;
}

// GetNodeHealth on `port` as the client `cert`/`key`, trusting `roots`: the status code.
grpc::StatusCode CallAs(int port, const std::string& roots, const std::string& cert,
                        const std::string& key) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = roots;
  ssl.pem_cert_chain = testing::ReadFileOrEmpty(cert);
  ssl.pem_private_key = testing::ReadFileOrEmpty(key);
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("efawatch-agent");
  // A fresh channel each time: a new handshake against the files in use now.
  auto stub = v1::Agent::NewStub(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                                           grpc::SslCredentials(ssl), args));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  v1::NodeHealth out;
  return stub->GetNodeHealth(&ctx, v1::GetNodeHealthRequest(), &out).error_code();
}

double Metric(int port, const std::string& series) {
  const auto [code, body] = testing::HttpGet(port, "/metrics");
  // At a line's start: the name alone also appears in its # HELP and # TYPE lines.
  const auto at = body.find("\n" + series + " ");
  if (code != 200 || at == std::string::npos) return -1;
  return std::atof(body.c_str() + at + series.size() + 2);
}

class CertRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(MakeCerts(gen1_.path(), false), "");
    // The second generation starts from a copy, so --new-ca replaces the CA there only.
    fs::copy(gen1_.path(), gen2_.path(), fs::copy_options::overwrite_existing);
    ASSERT_EQ(MakeCerts(gen2_.path(), true), "");
    ca1_ = testing::ReadFileOrEmpty(gen1_.File("ca.pem"));
    ca2_ = testing::ReadFileOrEmpty(gen2_.File("ca.pem"));
    ASSERT_NE(ca1_, ca2_);
    volume_.Publish(Gen1("agent.pem"), Gen1("agent.key"), ca1_);
    std::vector<int> ports = {FreePort(), FreePort(), FreePort()};
    for (size_t i = 0; i < 3; ++i) {
      std::string peers;
      for (size_t j = 0; j < 3; ++j) {
        if (j == i) continue;
        if (!peers.empty()) peers += ",";
        peers += "n" + std::to_string(j) + "=127.0.0.1:" + std::to_string(ports[j]);
      }
      std::vector<std::string> args = {"--grpc-listen=127.0.0.1:" + std::to_string(ports[i]),
                                       "--grpc-tls-cert=" + volume_.File("agent.pem"),
                                       "--grpc-tls-key=" + volume_.File("agent.key"),
                                       "--grpc-tls-client-ca=" + volume_.File("ca.pem"),
                                       "--grpc-peer-server-name=efawatch-agent",
                                       "--tls-reload-interval-ms=1000",
                                       "--node-name=n" + std::to_string(i),
                                       "--mesh-discovery=static",
                                       "--mesh-peers=" + peers,
                                       "--mesh-interval-ms=1000",
                                       "--mesh-count=3",
                                       "--mesh-message-timeout-ms=500"};
      if (i == 2) {
        // The third serves /metrics over HTTPS from the same files.
        args.push_back("--metrics-tls-cert=" + volume_.File("agent.pem"));
        args.push_back("--metrics-tls-key=" + volume_.File("agent.key"));
      }
      agents_.push_back(std::make_unique<AgentProcess>("tcp", "lo", args));
      ASSERT_TRUE(agents_.back()->ok()) << agents_.back()->proc().Stderr();
    }
  }

  std::string Gen1(const std::string& f) const { return testing::ReadFileOrEmpty(gen1_.File(f)); }
  std::string Gen2(const std::string& f) const { return testing::ReadFileOrEmpty(gen2_.File(f)); }

  // Both plain-metrics agents see both their peers answer, in rounds that keep coming.
  void ExpectMeshGoesOn(const std::string& phase) {
    for (size_t i = 0; i < 2; ++i) {
      const int port = agents_[i]->metrics_port();
      const double rounds = Metric(port, "efawatch_mesh_rounds_total");
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (std::chrono::steady_clock::now() < deadline &&
             !(Metric(port, "efawatch_mesh_rounds_total") >= rounds + 2 &&
               Metric(port, "efawatch_mesh_peers_reachable") == 2)) {
        std::this_thread::sleep_for(200ms);
      }
      EXPECT_GE(Metric(port, "efawatch_mesh_rounds_total"), rounds + 2) << phase << " agent " << i;
      EXPECT_EQ(Metric(port, "efawatch_mesh_peers_reachable"), 2) << phase << " agent " << i;
    }
  }

  // HTTPS /metrics of the third agent as a scraper trusting only `ca`: 200 or 0.
  int ScrapeTrusting(const std::string& ca) {
    testing::WriteFile(trust_.File("ca.pem"), ca);
    auto [rc, out] = testing::RunCommand(
        {"/usr/bin/env", "curl", "-sS", "--max-time", "5", "--cacert", trust_.File("ca.pem"), "-o",
         "/dev/null", "-w", "%{http_code}",
         "https://127.0.0.1:" + std::to_string(agents_[2]->metrics_port()) + "/metrics"},
        10s);
    return rc == 0 ? std::atoi(out.substr(out.size() - 3).c_str()) : 0;
  }

  // Long enough for every agent to read the files again (1 s) and act on them.
  static void AwaitReload() { std::this_thread::sleep_for(3s); }

  TempDir gen1_, gen2_, trust_;
  std::string ca1_, ca2_;
  SecretVolume volume_;
  std::vector<std::unique_ptr<AgentProcess>> agents_;
};

TEST_F(CertRotationTest, LeavesAndCaRotatedInPlaceWithoutARestart) {
  const int a0 = agents_[0]->grpc_port();
  const std::string both = ca1_ + ca2_;
  ExpectMeshGoesOn("before");
  EXPECT_EQ(CallAs(a0, both, gen1_.File("reader.pem"), gen1_.File("reader.key")),
            grpc::StatusCode::OK);
  EXPECT_NE(CallAs(a0, both, gen2_.File("reader.pem"), gen2_.File("reader.key")),
            grpc::StatusCode::OK)
      << "the new CA is not trusted yet";
  EXPECT_EQ(ScrapeTrusting(ca1_), 200);
  const double start_time = Metric(agents_[0]->metrics_port(), "efawatch_start_time_seconds");
  EXPECT_GT(Metric(agents_[0]->metrics_port(),
                   R"(efawatch_tls_certificate_expiry_timestamp_seconds{use="server"})"),
            0);

  // 1. The new CA joins the bundle: clients of either CA are accepted.
  volume_.Publish(Gen1("agent.pem"), Gen1("agent.key"), both);
  AwaitReload();
  EXPECT_EQ(CallAs(a0, both, gen2_.File("reader.pem"), gen2_.File("reader.key")),
            grpc::StatusCode::OK);
  EXPECT_EQ(CallAs(a0, both, gen1_.File("reader.pem"), gen1_.File("reader.key")),
            grpc::StatusCode::OK);
  ExpectMeshGoesOn("bundle of two CAs");

  // 2. The agents' own certificates come from the new CA.
  volume_.Publish(Gen2("agent.pem"), Gen2("agent.key"), both);
  AwaitReload();
  ExpectMeshGoesOn("leaves of the new CA");
  EXPECT_EQ(ScrapeTrusting(ca2_), 200) << "the metrics port serves the new certificate";

  // 3. The old CA leaves the bundle: its clients are refused, the new CA's accepted.
  volume_.Publish(Gen2("agent.pem"), Gen2("agent.key"), ca2_);
  AwaitReload();
  EXPECT_NE(CallAs(a0, ca2_, gen1_.File("reader.pem"), gen1_.File("reader.key")),
            grpc::StatusCode::OK);
  EXPECT_EQ(CallAs(a0, ca2_, gen2_.File("reader.pem"), gen2_.File("reader.key")),
            grpc::StatusCode::OK);
  ExpectMeshGoesOn("old CA gone");

  for (auto& a : agents_) EXPECT_FALSE(a->proc().Wait(0ms).has_value()) << "an agent exited";
  EXPECT_EQ(Metric(agents_[0]->metrics_port(), "efawatch_start_time_seconds"), start_time);
  EXPECT_EQ(Metric(agents_[0]->metrics_port(), R"(efawatch_tls_reload_failures_total{use="ca"})"),
            0);
}

}  // namespace
}  // namespace efawatch
