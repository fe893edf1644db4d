// SPDX-License-Identifier: Apache-2.0
// The agent's listeners against clients that hold connections without finishing a request: real
// agents on 127.0.0.1, the hostile clients and the scraper on the same address (the harder case:
// a per-address bound alone would lock the scraper out too).
#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/support/agent_process.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

using testing::AgentProcess;
using testing::TempDir;
using namespace std::chrono_literals;

// The agent's default --memory-budget (daemon/config.h).
constexpr long kMemoryBudgetKiB = 96 << 10;

// Connections the test holds; closed when it goes.
class Sockets {
 public:
  ~Sockets() {
    for (int fd : fds_) ::close(fd);
  }
  // Opens n connections to 127.0.0.1:port, each sending `first` (possibly empty) and then
  // nothing. Connections are non-blocking, so thousands open quickly; returns how many did.
  size_t Open(int port, size_t n, const std::string& first) {
    size_t opened = 0;
    for (size_t i = 0; i < n; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) break;
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<uint16_t>(port));
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        continue;
      }
      if (!first.empty()) (void)::send(fd, first.data(), first.size(), MSG_NOSIGNAL);
      fds_.push_back(fd);
      ++opened;
    }
    return opened;
  }
  // Sends `bytes` on every held connection.
  void Send(const std::string& bytes) {
    for (int fd : fds_) (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }
  // How many of the held connections the server has closed (end of stream or reset).
  size_t ClosedByServer() const {
    size_t closed = 0;
    for (int fd : fds_) {
      char c;
      const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
    }
    return closed;
  }

 private:
  std::vector<int> fds_;
};

// GET with curl and a 1 s limit on the whole exchange; returns the HTTP status (0: none in time).
int GetWithinOneSecond(const std::string& url, const std::vector<std::string>& tls = {}) {
  std::vector<std::string> argv = {"/usr/bin/env", "curl",      "-sS", "--max-time",  "1",
                                   "-o",           "/dev/null", "-w",  "%{http_code}"};
  argv.insert(argv.end(), tls.begin(), tls.end());
  argv.push_back(url);
  auto [rc, out] = testing::RunCommand(argv, 10s);
  if (rc != 0 || out.size() < 3) return 0;
  return std::atoi(out.substr(out.size() - 3).c_str());
}

// The value of one series in the agent's /metrics over plain HTTP; -1 when absent.
double Metric(int port, const std::string& series) {
  const auto [code, body] = testing::HttpGet(port, "/metrics");
  // At a line's start: the name alone also appears in its # HELP and # TYPE lines.
  const auto at = body.find("\n" + series + " ");
  if (code != 200 || at == std::string::npos) return -1;
  return std::atof(body.c_str() + at + series.size() + 2);
}

long RssKiB(pid_t pid) {
  const std::string status = testing::ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/status");
  std::smatch m;
  if (!std::regex_search(status, m, std::regex(R"(VmRSS:\s+(\d+) kB)"))) return -1;
  return std::atol(m[1].str().c_str());
}

// Certificates from the shipped script: agent.pem/key for the server, reader.pem/key a client.
class Certificates {
 public:
  Certificates() {
    auto [rc, out] =
        testing::RunCommand({"/bin/bash", testing::SourceDir() + "/scripts/make-certs.sh", "--out",
                             dir_.path(), "--days", "2"},
                            60s);
    ok_ = rc == 0;
    log_ = out;
  }
  bool ok() const { return ok_; }
  const std::string& log() const { return log_; }
  std::string File(const std::string& name) const { return dir_.File(name); }

 private:
  TempDir dir_;
  bool ok_ = false;
  std::string log_;
};

// Prometheus's and the kubelet's requests, five rounds: each answered 200 within 1 s.
void ExpectScrapesAndProbesAnswer(const std::string& base, const std::vector<std::string>& tls) {
  for (int round = 0; round < 5; ++round) {
    for (const char* path : {"/metrics", "/healthz", "/readyz"}) {
      EXPECT_EQ(GetWithinOneSecond(base + path, tls), 200) << path << " in round " << round;
    }
  }
}

class HalfOpenTest : public ::testing::TestWithParam<size_t> {};

TEST_P(HalfOpenTest, MetricsAndHealthAnswerWithinOneSecondWhileHalfOpenRequestsAreHeld) {
  const size_t n = GetParam();
  AgentProcess agent;
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  Sockets held;
  ASSERT_EQ(held.Open(agent.metrics_port(), n, "GET /metrics HTTP/1.1\r\nHost: x\r\n"), n);
  ExpectScrapesAndProbesAnswer("http://127.0.0.1:" + std::to_string(agent.metrics_port()), {});
  // Beyond the per-address bound (64), the connections that waited longest made room.
  const double evicted =
      Metric(agent.metrics_port(), R"(efawatch_metrics_connections_total{outcome="evicted"})");
  if (n > 64) {
    EXPECT_GE(evicted, static_cast<double>(n - 64));
    EXPECT_GE(held.ClosedByServer(), n - 64);
  } else {
    EXPECT_EQ(evicted, 0);
    EXPECT_EQ(held.ClosedByServer(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Connections, HalfOpenTest, ::testing::Values(2, 50, 500));

TEST(ListenersTest, HttpsMetricsAndHealthAnswerWithFiveHundredHalfOpenHandshakes) {
  Certificates certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  AgentProcess agent("tcp", "lo",
                     {"--metrics-tls-cert=" + certs.File("agent.pem"),
                      "--metrics-tls-key=" + certs.File("agent.key")});
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  Sockets held;
  // Half a TLS record header: the handshake never completes.
  ASSERT_EQ(held.Open(agent.metrics_port(), 500, std::string("\x16\x03\x01", 3)), 500u);
  ExpectScrapesAndProbesAnswer("https://127.0.0.1:" + std::to_string(agent.metrics_port()),
                               {"--cacert", certs.File("ca.pem")});
  EXPECT_GE(held.ClosedByServer(), 500u - 64);
}

TEST(ListenersTest, ClientSendingOneByteASecondIsCutAtTheRequestDeadline) {
  AgentProcess agent("tcp", "lo", {"--metrics-request-deadline-ms=2000"});
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  Sockets slow;
  ASSERT_EQ(slow.Open(agent.metrics_port(), 1, "G"), 1u);
  // Each byte is newer than any inactivity timeout; only a deadline on the whole request cuts
  // it. The request would need 40 s at this pace.
  const std::string rest = "ET /metrics HTTP/1.1\r\nHost: slow.example\r\n\r\n";
  const auto start = std::chrono::steady_clock::now();
  for (size_t sent = 0;
       slow.ClosedByServer() == 0 && std::chrono::steady_clock::now() - start < 10s; ++sent) {
    std::this_thread::sleep_for(1s);
    if (slow.ClosedByServer() == 0) slow.Send(rest.substr(sent % rest.size(), 1));
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(slow.ClosedByServer(), 1u) << "a one-byte-a-second client was never cut";
  EXPECT_LT(took, 4s);
  EXPECT_GE(
      Metric(agent.metrics_port(), R"(efawatch_metrics_connections_total{outcome="timed_out"})"),
      1);
  // The port serves on.
  EXPECT_EQ(
      GetWithinOneSecond("http://127.0.0.1:" + std::to_string(agent.metrics_port()) + "/healthz"),
      200);
}

// Health/Check with a 1 s deadline; true when SERVING in time.
bool HealthWithinOneSecond(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 1s);
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status st = stub->Check(&ctx, req, &resp);
  return st.ok() && resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

// 10,000 connections need descriptors beyond the usual soft limit of 1,024, in this process.
bool RaiseDescriptorLimit(rlim_t want) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return false;
  if (r.rlim_cur >= want) return true;
  r.rlim_cur = want;
  if (r.rlim_max < want) r.rlim_max = want;  // root may raise the hard limit
  return ::setrlimit(RLIMIT_NOFILE, &r) == 0;
}

void ExpectGrpcHoldsTenThousandIdle(AgentProcess& agent, const std::string& first,
                                    const std::shared_ptr<grpc::Channel>& channel) {
  ASSERT_TRUE(RaiseDescriptorLimit(12000)) << "cannot raise RLIMIT_NOFILE to 12000";
  Sockets held;
  const size_t opened = held.Open(agent.grpc_port(), 10000, first);
  ASSERT_EQ(opened, 10000u);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(HealthWithinOneSecond(channel));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  const long rss = RssKiB(agent.proc().pid());
  std::cout << "10,000 idle gRPC connections: agent RSS " << rss << " KiB, Health/Check in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - start)
                   .count()
            << " ms\n";
  EXPECT_GT(rss, 0);
  EXPECT_LT(rss, kMemoryBudgetKiB) << "RSS " << rss << " KiB with 10,000 idle gRPC connections";
  EXPECT_GE(Metric(agent.metrics_port(), R"(efawatch_rpc_connections_total{outcome="evicted"})"),
            10000 - 256);
  EXPECT_GE(held.ClosedByServer(), 10000u - 256);
}

TEST(ListenersTest, GrpcHoldsTenThousandIdleConnectionsInsideTheBudgetAndHealthAnswers) {
  AgentProcess agent;
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  // The HTTP/2 preface and nothing more, as in the report that measured 19 KiB each.
  ExpectGrpcHoldsTenThousandIdle(
      agent, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      grpc::CreateChannel(agent.grpc_address(), grpc::InsecureChannelCredentials()));
}

TEST(ListenersTest, GrpcOverMutualTlsHoldsTenThousandIdleConnectionsAndHealthAnswers) {
  Certificates certs;
  ASSERT_TRUE(certs.ok()) << certs.log();
  AgentProcess agent(
      "tcp", "lo",
      {"--grpc-tls-cert=" + certs.File("agent.pem"), "--grpc-tls-key=" + certs.File("agent.key"),
       "--grpc-tls-client-ca=" + certs.File("ca.pem"), "--grpc-peer-server-name=efawatch-agent"});
  ASSERT_TRUE(agent.ok()) << agent.proc().Stderr();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = testing::ReadFileOrEmpty(certs.File("ca.pem"));
  ssl.pem_cert_chain = testing::ReadFileOrEmpty(certs.File("reader.pem"));
  ssl.pem_private_key = testing::ReadFileOrEmpty(certs.File("reader.key"));
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("efawatch-agent");
  ExpectGrpcHoldsTenThousandIdle(
      agent, std::string("\x16\x03\x01", 3),
      grpc::CreateCustomChannel(agent.grpc_address(), grpc::SslCredentials(ssl), args));
}

}  // namespace
}  // namespace efawatch
