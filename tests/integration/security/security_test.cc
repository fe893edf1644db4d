// SPDX-License-Identifier: Apache-2.0
// Secure by default, end to end: two real agents serve gRPC with mutual TLS and the role table
// (docs/security.md); callers hold certificates from scripts/make-certs.sh.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <regex>

#include "efawatch/v1/agent.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/support/agent_process.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

using testing::AgentProcess;
using ::testing::HasSubstr;
using testing::TempDir;
using namespace std::chrono_literals;

// Certificates of two unrelated CAs, made by the shipped script.
class Certificates {
 public:
  Certificates() {
    for (const TempDir* dir : {&fleet_, &other_}) {
      auto [rc, out] =
          testing::RunCommand({"/bin/bash", testing::SourceDir() + "/scripts/make-certs.sh",
                               "--out", dir->path(), "--days", "2"},
                              60s);
      ok_ = ok_ && rc == 0;
      log_ += out;
    }
  }
  bool ok() const { return ok_; }
  const std::string& log() const { return log_; }
  std::string Fleet(const std::string& name) const { return fleet_.File(name); }
  std::string Other(const std::string& name) const { return other_.File(name); }

 private:
  TempDir fleet_, other_;
  bool ok_ = true;
  std::string log_;
};

std::vector<std::string> AgentTls(const Certificates& c) {
  return {"--grpc-tls-cert=" + c.Fleet("agent.pem"),   "--grpc-tls-key=" + c.Fleet("agent.key"),
          "--grpc-tls-client-ca=" + c.Fleet("ca.pem"), "--grpc-peer-server-name=efawatch-agent",
          "--grpc-authz-readers=efawatch-reader",      "--grpc-authz-operators=efawatch-operator",
          "--grpc-authz-agents=efawatch-agent"};
}

// A channel to `port` presenting `cert`/`key` (none when empty) and trusting `ca`.
std::unique_ptr<v1::Agent::Stub> Stub(int port, const std::string& ca, const std::string& cert,
                                      const std::string& key) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = testing::ReadFileOrEmpty(ca);
  if (!cert.empty()) {
    ssl.pem_cert_chain = testing::ReadFileOrEmpty(cert);
    ssl.pem_private_key = testing::ReadFileOrEmpty(key);
  }
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride("efawatch-agent");
  return v1::Agent::NewStub(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                                      grpc::SslCredentials(ssl), args));
}

std::unique_ptr<grpc::ClientContext> Context(std::chrono::milliseconds timeout = 10s) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

// One call of `method` with a request that does nothing harmful when allowed (an empty target, an
// unknown session); returns its status code.
grpc::StatusCode Call(v1::Agent::Stub& stub, const std::string& method) {
  auto ctx = Context();
  if (method == "GetNodeHealth") {
    v1::NodeHealth r;
    return stub.GetNodeHealth(ctx.get(), {}, &r).error_code();
  }
  if (method == "GetFabricAddress") {
    v1::FabricAddress r;
    return stub.GetFabricAddress(ctx.get(), {}, &r).error_code();
  }
  if (method == "WatchFindings") {
    // An allowed stream never ends by itself (and an agent without findings writes nothing):
    // it runs into a short deadline, while a refused one ends at once with its status.
    auto short_ctx = Context(2s);
    auto reader = stub.WatchFindings(short_ctx.get(), {});
    v1::FindingEvent e;
    while (reader->Read(&e)) {
    }
    const grpc::StatusCode code = reader->Finish().error_code();
    return code == grpc::StatusCode::DEADLINE_EXCEEDED ? grpc::StatusCode::OK : code;
  }
  if (method == "Ping") {
    v1::PingResponse r;
    return stub.Ping(ctx.get(), {}, &r).error_code();
  }
  if (method == "Bandwidth") {
    v1::BandwidthResponse r;
    return stub.Bandwidth(ctx.get(), {}, &r).error_code();
  }
  if (method == "RunCollective") {
    v1::CollectiveResult r;
    return stub.RunCollective(ctx.get(), {}, &r).error_code();
  }
  if (method == "JoinCollective") {
    v1::JoinCollectiveResponse r;
    return stub.JoinCollective(ctx.get(), {}, &r).error_code();
  }
  if (method == "StartCollective") {
    v1::StartCollectiveRequest req;
    req.set_session("no-such-session");
    v1::RankResult r;
    return stub.StartCollective(ctx.get(), req, &r).error_code();
  }
  if (method == "RunDoctor") {
    v1::DoctorReport r;
    return stub.RunDoctor(ctx.get(), {}, &r).error_code();
  }
  v1::AbortCollectiveRequest req;
  req.set_session("no-such-session");
  v1::AbortCollectiveResponse r;
  return stub.AbortCollective(ctx.get(), req, &r).error_code();
}

// efawatch_grpc_denied_total{method=...} from the agent's /metrics, -1 when absent.
double Denied(const AgentProcess& agent, const std::string& method) {
  auto [status, body] = testing::HttpGet(agent.metrics_port(), "/metrics");
  std::smatch m;
  const std::regex re("efawatch_grpc_denied_total\\{method=\"" + method + "\"\\} ([0-9.e+]+)");
  if (status != 200 || !std::regex_search(body, m, re)) return -1;
  return std::stod(m[1]);
}

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new Certificates();
    if (!certs_->ok()) return;
    a_ = new AgentProcess("tcp", "lo", AgentTls(*certs_));
    b_ = new AgentProcess("tcp", "lo", AgentTls(*certs_));
  }
  static void TearDownTestSuite() {
    delete a_;
    delete b_;
    delete certs_;
  }
  void SetUp() override {
    if (!testing::OnPath("openssl")) GTEST_SKIP() << "openssl not installed";
    ASSERT_TRUE(certs_->ok()) << certs_->log();
    ASSERT_TRUE(a_->ok()) << a_->proc().Stderr();
    ASSERT_TRUE(b_->ok()) << b_->proc().Stderr();
  }
  std::unique_ptr<v1::Agent::Stub> As(const std::string& who, const AgentProcess& agent) const {
    return Stub(agent.grpc_port(), certs_->Fleet("ca.pem"), certs_->Fleet(who + ".pem"),
                certs_->Fleet(who + ".key"));
  }

  static Certificates* certs_;
  static AgentProcess* a_;
  static AgentProcess* b_;
};
Certificates* SecurityTest::certs_ = nullptr;
AgentProcess* SecurityTest::a_ = nullptr;
AgentProcess* SecurityTest::b_ = nullptr;

TEST_F(SecurityTest, EachIdentityIsAllowedAndDeniedExactlyPerTheRoleTable) {
  const std::vector<std::string> methods = {"GetNodeHealth",  "WatchFindings",   "GetFabricAddress",
                                            "Ping",           "Bandwidth",       "RunCollective",
                                            "JoinCollective", "StartCollective", "AbortCollective",
                                            "RunDoctor"};
  // docs/security.md, "Roles": the table this test holds the agent to.
  const std::map<std::string, std::set<std::string>> allowed = {
      {"reader", {"GetNodeHealth", "WatchFindings", "GetFabricAddress"}},
      {"operator",
       {"GetNodeHealth", "WatchFindings", "GetFabricAddress", "Ping", "Bandwidth", "RunCollective",
        "RunDoctor"}},
      {"agent", {"GetFabricAddress", "JoinCollective", "StartCollective", "AbortCollective"}},
  };
  for (const auto& [who, methods_allowed] : allowed) {
    auto stub = As(who, *a_);
    for (const auto& m : methods) {
      const grpc::StatusCode code = Call(*stub, m);
      if (methods_allowed.contains(m)) {
        EXPECT_NE(code, grpc::StatusCode::PERMISSION_DENIED) << who << " must be allowed " << m;
        EXPECT_NE(code, grpc::StatusCode::UNAVAILABLE) << who << " " << m;
      } else {
        EXPECT_EQ(code, grpc::StatusCode::PERMISSION_DENIED) << who << " must be denied " << m;
      }
    }
  }
}

TEST_F(SecurityTest, OperatorProbesThroughAgentsThatAuthenticateEachOther) {
  // A asks B for its fabric address with the agent certificate, then pings it.
  v1::PingRequest req;
  req.set_peer_agent(b_->grpc_address());
  req.set_count(5);
  v1::PingResponse resp;
  auto ctx = Context(30s);
  const grpc::Status st = As("operator", *a_)->Ping(ctx.get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.received(), 5u);
}

TEST_F(SecurityTest, DenialsAreCountedPerMethod) {
  const double before = Denied(*a_, "Ping");
  ASSERT_GE(before, 0) << "efawatch_grpc_denied_total{method=\"Ping\"} missing";
  auto reader = As("reader", *a_);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Call(*reader, "Ping"), grpc::StatusCode::PERMISSION_DENIED);
  }
  EXPECT_EQ(Denied(*a_, "Ping"), before + 3);
  EXPECT_THAT(a_->proc().Stderr(), HasSubstr("Ping needs the operator role"));
}

TEST_F(SecurityTest, CertificateFromAnotherCaAndNoCertificateAreRefused) {
  auto other = Stub(a_->grpc_port(), certs_->Fleet("ca.pem"), certs_->Other("operator.pem"),
                    certs_->Other("operator.key"));
  EXPECT_EQ(Call(*other, "GetNodeHealth"), grpc::StatusCode::UNAVAILABLE);
  auto anonymous = Stub(a_->grpc_port(), certs_->Fleet("ca.pem"), "", "");
  EXPECT_EQ(Call(*anonymous, "GetNodeHealth"), grpc::StatusCode::UNAVAILABLE);
  auto plaintext = v1::Agent::NewStub(
      grpc::CreateChannel(a_->grpc_address(), grpc::InsecureChannelCredentials()));
  EXPECT_EQ(Call(*plaintext, "GetNodeHealth"), grpc::StatusCode::UNAVAILABLE);
  // The agent does not trust a server of the other CA either: the CLI with the fleet's
  // operator certificate but the other CA refuses the agent.
  auto distrust = Stub(a_->grpc_port(), certs_->Other("ca.pem"), certs_->Fleet("operator.pem"),
                       certs_->Fleet("operator.key"));
  EXPECT_EQ(Call(*distrust, "GetNodeHealth"), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(SecurityTest, PlaintextOffLoopbackIsRefusedAtStart) {
  testing::Subprocess p({testing::BinaryPath("bin/efawatchd"), "--grpc-listen=0.0.0.0:0",
                         "--metrics-listen=127.0.0.1:0"});
  auto code = p.Wait(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_THAT(p.Stderr(), HasSubstr("not a loopback address"));
}

TEST_F(SecurityTest, CliSaysWhichRoleIsMissing) {
  auto [rc, out] = testing::RunCommand(
      {testing::BinaryPath("bin/efawatch"), "ping", "--agent", a_->grpc_address(), "--peer",
       b_->grpc_address(), "--tls-ca", certs_->Fleet("ca.pem"), "--tls-cert",
       certs_->Fleet("reader.pem"), "--tls-key", certs_->Fleet("reader.key"), "--tls-server-name",
       "efawatch-agent"},
      30s);
  EXPECT_NE(rc, 0);
  EXPECT_THAT(out, HasSubstr("operator role"));
  EXPECT_THAT(out, HasSubstr("docs/security.md"));

  // Without a certificate the handshake fails; the CLI says what to give.
  auto [rc2, out2] = testing::RunCommand({testing::BinaryPath("bin/efawatch"), "status", "--agent",
                                          a_->grpc_address(), "--timeout-ms", "3000"},
                                         30s);
  EXPECT_NE(rc2, 0);
  EXPECT_THAT(out2, HasSubstr("EFAWATCH_TLS_CA"));
}

TEST_F(SecurityTest, KubeletHttpProbesAnswerWithoutACertificate) {
  EXPECT_EQ(testing::HttpGet(a_->metrics_port(), "/healthz").first, 200);
  EXPECT_EQ(testing::HttpGet(a_->metrics_port(), "/readyz").first, 200);
}

// A TCP listener on 127.0.0.1 and a Unix socket listener that count what reaches them, without
// accepting in a thread: connections wait in the backlog and a non-blocking accept finds them.
class Listeners {
 public:
  explicit Listeners(const TempDir& dir) : unix_path_(dir.File("agent.sock")) {
    tcp_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(in);
    if (bind(tcp_, reinterpret_cast<sockaddr*>(&in), len) == 0 && listen(tcp_, 16) == 0 &&
        getsockname(tcp_, reinterpret_cast<sockaddr*>(&in), &len) == 0) {
      tcp_port_ = ntohs(in.sin_port);
    }
    unix_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::strncpy(un.sun_path, unix_path_.c_str(), sizeof(un.sun_path) - 1);
    unix_ok_ =
        bind(unix_, reinterpret_cast<sockaddr*>(&un), sizeof(un)) == 0 && listen(unix_, 16) == 0;
  }
  ~Listeners() {
    close(tcp_);
    close(unix_);
  }
  bool ok() const { return tcp_port_ != 0 && unix_ok_; }
  int tcp_port() const { return tcp_port_; }
  const std::string& unix_path() const { return unix_path_; }
  int Accepted() {
    int n = 0;
    for (int fd : {tcp_, unix_}) {
      for (int c; (c = accept(fd, nullptr, nullptr)) >= 0; ++n) close(c);
    }
    return n;
  }

 private:
  std::string unix_path_;
  int tcp_ = -1, unix_ = -1, tcp_port_ = 0;
  bool unix_ok_ = false;
};

TEST_F(SecurityTest, ProbeTargetsOtherThanAgentsAreRefusedBeforeAnyConnection) {
  TempDir dir;
  Listeners listeners(dir);
  ASSERT_TRUE(listeners.ok());
  std::vector<std::string> args = AgentTls(*certs_);
  // Only a block no test address is in, and no loopback: the listeners are not agents.
  args.insert(args.end(), {"--probe-allow-loopback=false", "--probe-allowed-cidrs=192.0.2.0/24"});
  AgentProcess c("tcp", "lo", args);
  ASSERT_TRUE(c.ok()) << c.proc().Stderr();
  auto op = As("operator", c);
  const std::string port = std::to_string(listeners.tcp_port());
  for (const std::string& target :
       {"unix:" + listeners.unix_path(), "unix://" + listeners.unix_path(), "127.0.0.1:" + port,
        "localhost:" + port, "[::ffff:127.0.0.1]:" + port, "dns:///127.0.0.1:" + port}) {
    v1::PingRequest req;
    req.set_peer_agent(target);
    v1::PingResponse resp;
    auto ctx = Context();
    const grpc::Status st = op->Ping(ctx.get(), req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << target;
    EXPECT_THAT(st.error_message(), HasSubstr("refused")) << target;

    v1::RunCollectiveRequest run;
    run.add_participants(target);
    run.set_op(v1::ALL_REDUCE);
    v1::CollectiveResult result;
    auto ctx2 = Context();
    EXPECT_EQ(op->RunCollective(ctx2.get(), run, &result).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << target;
  }
  // A raw tcp-provider address (a sockaddr_in) toward the listener is held to the same rules.
  sockaddr_in raw{};
  raw.sin_family = AF_INET;
  raw.sin_port = htons(static_cast<uint16_t>(listeners.tcp_port()));
  raw.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  v1::BandwidthRequest bw;
  bw.set_peer_address(std::string(reinterpret_cast<const char*>(&raw), sizeof(raw)));
  v1::BandwidthResponse bw_resp;
  auto ctx = Context();
  EXPECT_EQ(op->Bandwidth(ctx.get(), bw, &bw_resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  EXPECT_EQ(listeners.Accepted(), 0) << "the agent connected to a refused target";
}

}  // namespace
}  // namespace efawatch
