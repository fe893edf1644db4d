// SPDX-License-Identifier: Apache-2.0
// /metrics over HTTPS, end to end: real agents with the --metrics-tls-* flags and certificates
// from scripts/make-certs.sh, scraped by curl on 127.0.0.1 as Prometheus would scrape them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

using testing::AgentProcess;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;
using namespace std::chrono_literals;

// A metric every agent serves at every scrape.
constexpr char kKnownMetric[] = "efawatch_build_info{";

struct Reply {
  int status = 0;  // 0: no HTTP answer at all (connection or TLS failure)
  std::string body;
  std::string curl;  // curl's own output, for failure messages
};

// GET https://127.0.0.1:<port><path> with curl, trusting `ca` and adding `args` (client
// certificate, headers).
Reply Get(const TempDir& dir, int port, const std::string& path, const std::string& ca,
          std::vector<std::string> args = {}, const std::string& scheme = "https") {
  // env: RunCommand does not search PATH.
  std::vector<std::string> argv = {"/usr/bin/env", "curl", "-sS", "--max-time", "10"};
  argv.insert(argv.end(), {"--cacert", ca, "-o", dir.File("body"), "-w", "%{http_code}"});
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(scheme + "://127.0.0.1:" + std::to_string(port) + path);
  testing::WriteFile(dir.File("body"), "");
  auto [rc, out] = testing::RunCommand(argv, 20s);
  Reply r;
  r.curl = out;
  r.body = testing::ReadFileOrEmpty(dir.File("body"));
  // -w prints the status last; 000 when no response came.
  if (out.size() >= 3) r.status = std::atoi(out.substr(out.size() - 3).c_str());
  return r;
}

class MetricsTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fleet_ = new TempDir();
    other_ = new TempDir();
    for (const TempDir* dir : {fleet_, other_}) {
      auto [rc, out] =
          testing::RunCommand({"/bin/bash", testing::SourceDir() + "/scripts/make-certs.sh",
                               "--out", dir->path(), "--days", "2"},
                              60s);
      certs_ok_ = certs_ok_ && rc == 0;
      certs_log_ += out;
    }
    if (!certs_ok_) return;
    testing::WriteFile(fleet_->File("token"), "first-token\n");
    const std::vector<std::string> tls = {"--metrics-tls-cert=" + Fleet("agent.pem"),
                                          "--metrics-tls-key=" + Fleet("agent.key")};
    std::vector<std::string> mtls = tls;
    mtls.push_back("--metrics-tls-client-ca=" + Fleet("ca.pem"));
    std::vector<std::string> token = tls;
    token.push_back("--metrics-bearer-token-file=" + Fleet("token"));
    mtls_ = new AgentProcess("tcp", "lo", mtls);
    token_ = new AgentProcess("tcp", "lo", token);
  }
  static void TearDownTestSuite() {
    delete mtls_;
    delete token_;
    delete fleet_;
    delete other_;
  }
  void SetUp() override {
    if (!testing::OnPath("openssl") || !testing::OnPath("curl")) {
      GTEST_SKIP() << "openssl or curl not installed (scripts/setup.sh)";
    }
    ASSERT_TRUE(certs_ok_) << certs_log_;
    ASSERT_TRUE(mtls_->ok()) << mtls_->proc().Stderr();
    ASSERT_TRUE(token_->ok()) << token_->proc().Stderr();
  }
  static std::string Fleet(const std::string& name) { return fleet_->File(name); }
  static std::string Other(const std::string& name) { return other_->File(name); }
  // A client certificate and key from `dir`'s CA, as curl arguments.
  static std::vector<std::string> ClientCert(const TempDir& dir, const std::string& who) {
    return {"--cert", dir.File(who + ".pem"), "--key", dir.File(who + ".key")};
  }
  static std::vector<std::string> Bearer(const std::string& token) {
    return {"-H", "Authorization: Bearer " + token};
  }

  TempDir scratch_;
  static TempDir* fleet_;
  static TempDir* other_;
  static bool certs_ok_;
  static std::string certs_log_;
  static AgentProcess* mtls_;
  static AgentProcess* token_;
};
TempDir* MetricsTlsTest::fleet_ = nullptr;
TempDir* MetricsTlsTest::other_ = nullptr;
bool MetricsTlsTest::certs_ok_ = true;
std::string MetricsTlsTest::certs_log_;
AgentProcess* MetricsTlsTest::mtls_ = nullptr;
AgentProcess* MetricsTlsTest::token_ = nullptr;

TEST_F(MetricsTlsTest, AClientCertificateOfTheCaGetsTheMetrics) {
  const Reply r = Get(scratch_, mtls_->metrics_port(), "/metrics", Fleet("ca.pem"),
                      ClientCert(*fleet_, "reader"));
  ASSERT_EQ(r.status, 200) << r.curl << r.body;
  EXPECT_THAT(r.body, HasSubstr(kKnownMetric));
  EXPECT_THAT(r.body, HasSubstr("# TYPE efawatch_collector_success gauge"));
  // The same exposition format as over HTTP: what Prometheus parses, promtool accepts.
  if (testing::OnPath("promtool")) {
    testing::WriteFile(scratch_.File("scrape.prom"), r.body);
    auto [rc, out] = testing::RunCommand(
        {"/bin/sh", "-c", "promtool check metrics < " + scratch_.File("scrape.prom") + " 2>&1"},
        30s);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "") << "promtool complained";
  }
}

TEST_F(MetricsTlsTest, AScrapeWithoutAClientCertificateIsRefused) {
  const Reply r = Get(scratch_, mtls_->metrics_port(), "/metrics", Fleet("ca.pem"));
  EXPECT_EQ(r.status, 403) << r.curl << r.body;
  EXPECT_THAT(r.body, Not(HasSubstr("efawatch_")));
  EXPECT_THAT(mtls_->proc().Stderr(), HasSubstr("scrape refused"));
}

TEST_F(MetricsTlsTest, AClientCertificateOfAnotherCaIsRefused) {
  for (const std::string who : {"reader", "agent"}) {
    const Reply r =
        Get(scratch_, mtls_->metrics_port(), "/metrics", Fleet("ca.pem"), ClientCert(*other_, who));
    EXPECT_EQ(r.status, 403) << who << ": " << r.curl << r.body;
    EXPECT_THAT(r.body, Not(HasSubstr("efawatch_"))) << who;
  }
}

TEST_F(MetricsTlsTest, PlainHttpToTheTlsPortGetsNoAnswer) {
  for (const AgentProcess* agent : {mtls_, token_}) {
    const auto [status, body] = testing::HttpGet(agent->metrics_port(), "/metrics");
    EXPECT_EQ(status, 0) << body;
    EXPECT_THAT(body, Not(HasSubstr("efawatch_")));
    const Reply r = Get(scratch_, agent->metrics_port(), "/healthz", Fleet("ca.pem"), {}, "http");
    EXPECT_EQ(r.status, 0) << r.curl << r.body;
  }
}

TEST_F(MetricsTlsTest, ProbesAnswerWithoutCertificateOrToken) {
  // The kubelet's HTTPS probes present neither, and check no server certificate either.
  for (const AgentProcess* agent : {mtls_, token_}) {
    for (const std::string path : {"/healthz", "/readyz"}) {
      const Reply r = Get(scratch_, agent->metrics_port(), path, Fleet("ca.pem"));
      EXPECT_EQ(r.status, 200) << path << ": " << r.curl << r.body;
      EXPECT_EQ(r.body, "") << path;
    }
    EXPECT_EQ(Get(scratch_, agent->metrics_port(), "/nope", Fleet("ca.pem")).status, 404);
  }
}

TEST_F(MetricsTlsTest, TheBearerTokenIsCheckedAndARotatedOneWorks) {
  const int port = token_->metrics_port();
  Reply r = Get(scratch_, port, "/metrics", Fleet("ca.pem"));
  EXPECT_EQ(r.status, 401) << r.curl << r.body;
  EXPECT_THAT(r.body, Not(HasSubstr("efawatch_")));
  r = Get(scratch_, port, "/metrics", Fleet("ca.pem"), Bearer("wrong-token"));
  EXPECT_EQ(r.status, 401) << r.curl << r.body;
  r = Get(scratch_, port, "/metrics", Fleet("ca.pem"), Bearer("first-token"));
  ASSERT_EQ(r.status, 200) << r.curl << r.body;
  EXPECT_THAT(r.body, HasSubstr(kKnownMetric));

  testing::WriteFile(Fleet("token"), "second-token\n");
  r = Get(scratch_, port, "/metrics", Fleet("ca.pem"), Bearer("second-token"));
  EXPECT_EQ(r.status, 200) << r.curl << r.body;
  EXPECT_THAT(r.body, HasSubstr(kKnownMetric));
  EXPECT_EQ(Get(scratch_, port, "/metrics", Fleet("ca.pem"), Bearer("first-token")).status, 401)
      << "the rotated-out token still works";
}

// The value of efawatch_metrics_scrapes_refused_total{reason=...} in a scrape, -1 when absent.
double Refused(const std::string& body, const std::string& reason) {
  const std::string series = "efawatch_metrics_scrapes_refused_total{reason=\"" + reason + "\"} ";
  const size_t at = body.find(series);
  return at == std::string::npos ? -1 : std::stod(body.substr(at + series.size()));
}

TEST_F(MetricsTlsTest, RefusedScrapesAreCountedByReason) {
  auto scrape = [&](const AgentProcess& agent, const std::vector<std::string>& auth) {
    const Reply r = Get(scratch_, agent.metrics_port(), "/metrics", Fleet("ca.pem"), auth);
    EXPECT_EQ(r.status, 200) << r.curl << r.body;
    return r.body;
  };
  const std::vector<std::string> reader = ClientCert(*fleet_, "reader");
  std::string before = scrape(*mtls_, reader);
  ASSERT_GE(Refused(before, "client_certificate"), 0) << before;
  EXPECT_EQ(Get(scratch_, mtls_->metrics_port(), "/metrics", Fleet("ca.pem")).status, 403);
  EXPECT_EQ(Get(scratch_, mtls_->metrics_port(), "/metrics", Fleet("ca.pem"),
                ClientCert(*other_, "reader"))
                .status,
            403);
  std::string after = scrape(*mtls_, reader);
  EXPECT_EQ(Refused(after, "client_certificate"), Refused(before, "client_certificate") + 2);
  EXPECT_EQ(Refused(after, "bearer_token"), 0);

  // The current token (the rotation test may have replaced the first one).
  std::string token = testing::ReadFileOrEmpty(Fleet("token"));
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  before = scrape(*token_, Bearer(token));
  ASSERT_GE(Refused(before, "bearer_token"), 0) << before;
  EXPECT_EQ(
      Get(scratch_, token_->metrics_port(), "/metrics", Fleet("ca.pem"), Bearer("nope")).status,
      401);
  after = scrape(*token_, Bearer(token));
  EXPECT_EQ(Refused(after, "bearer_token"), Refused(before, "bearer_token") + 1);
}

}  // namespace
}  // namespace efawatch
