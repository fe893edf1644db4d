// SPDX-License-Identifier: Apache-2.0
// The admission webhook end to end: the real efawatch-admission binary serving HTTPS on
// 127.0.0.1 with a test CA's certificate, sent AdmissionReview v1 objects by curl as the API
// server sends them (POST, application/json). One review per rule, the well-set pod, pods as
// KubeRay and the Training Operator create them, enforce mode, garbage and oversized bodies,
// 1,000 reviews at once, and the counts on /metrics afterwards.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;
using namespace std::chrono_literals;
using testing::Subprocess;
using testing::TempDir;

json Fixture(const std::string& name) {
  std::ifstream in(testing::SourceDir() + "/tests/fixtures/admission/" + name);
  return json::parse(in);
}

std::string ReviewOf(const json& pod, const std::string& ns = "ml") {
  return json({{"apiVersion", "admission.k8s.io/v1"},
               {"kind", "AdmissionReview"},
               {"request",
                {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
                 {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                 {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                 {"namespace", ns},
                 {"operation", "CREATE"},
                 {"userInfo", {{"username", "system:serviceaccount:kuberay:kuberay-operator"}}},
                 {"object", pod},
                 {"dryRun", false}}}})
      .dump();
}

struct Reply {
  int status = 0;
  std::string body;
  std::string curl;
};

// A webhook process on 127.0.0.1:0; the port from its start line.
class Webhook {
 public:
  Webhook(const TempDir& certs, std::vector<std::string> extra) {
    std::vector<std::string> argv = {testing::BinaryPath("bin/efawatch-admission"),
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--tls-cert",
                                     certs.File("server.pem"),
                                     "--tls-key",
                                     certs.File("server.key")};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<Subprocess>(argv);
    const std::regex started(R"(\(port (\d+)\))");
    for (int i = 0; i < 200 && port_ == 0; ++i) {
      std::smatch m;
      const std::string out = proc_->Stdout() + proc_->Stderr();
      if (std::regex_search(out, m, started)) port_ = std::stoi(m[1]);
      if (port_ == 0) std::this_thread::sleep_for(50ms);
    }
  }
  int port() const { return port_; }
  Subprocess& proc() { return *proc_; }

 private:
  std::unique_ptr<Subprocess> proc_;
  int port_ = 0;
};

class AdmissionWebhookTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new TempDir();
    certs_log_ = testing::MakeTestCertificates(certs_->path());
    if (!certs_log_.empty()) return;
    warn_ = new Webhook(*certs_, {"--max-body-bytes", "65536"});
    enforce_ = new Webhook(*certs_, {"--enforce"});
  }
  static void TearDownTestSuite() {
    delete warn_;
    delete enforce_;
    delete certs_;
  }
  void SetUp() override {
    if (!testing::OnPath("openssl") || !testing::OnPath("curl")) {
      GTEST_SKIP() << "openssl or curl not installed (scripts/setup.sh)";
    }
    ASSERT_EQ(certs_log_, "");
    ASSERT_NE(warn_->port(), 0) << warn_->proc().Stdout() << warn_->proc().Stderr();
    ASSERT_NE(enforce_->port(), 0) << enforce_->proc().Stdout() << enforce_->proc().Stderr();
  }

  // curl against https://127.0.0.1:<port><path>, trusting the test CA; POSTs `body` when given.
  Reply Curl(int port, const std::string& path, const std::string* body = nullptr,
             std::vector<std::string> args = {}) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "curl",
                                     "-sS",
                                     "--max-time",
                                     "10",
                                     "--cacert",
                                     certs_->File("ca.pem"),
                                     "-o",
                                     scratch_.File("out"),
                                     "-w",
                                     "%{http_code}"};
    if (body != nullptr) {
      testing::WriteFile(scratch_.File("in"), *body);
      argv.insert(argv.end(), {"-H", "Content-Type: application/json", "--data-binary",
                               "@" + scratch_.File("in")});
    }
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("https://127.0.0.1:" + std::to_string(port) + path);
    testing::WriteFile(scratch_.File("out"), "");
    auto [rc, out] = testing::RunCommand(argv, 30s);
    Reply r;
    r.curl = out;
    r.body = testing::ReadFileOrEmpty(scratch_.File("out"));
    if (out.size() >= 3) r.status = std::atoi(out.substr(out.size() - 3).c_str());
    return r;
  }

  json Review(int port, const json& pod, const std::string& path = "/validate-pods") {
    const std::string body = ReviewOf(pod);
    const Reply r = Curl(port, path, &body);
    EXPECT_EQ(r.status, 200) << r.curl << r.body;
    const json answer = json::parse(r.body, nullptr, false);
    EXPECT_FALSE(answer.is_discarded()) << r.body;
    return answer.is_discarded() ? json::object() : answer["response"];
  }

  TempDir scratch_;
  static TempDir* certs_;
  static std::string certs_log_;
  static Webhook* warn_;
  static Webhook* enforce_;
};
TempDir* AdmissionWebhookTest::certs_ = nullptr;
std::string AdmissionWebhookTest::certs_log_;
Webhook* AdmissionWebhookTest::warn_ = nullptr;
Webhook* AdmissionWebhookTest::enforce_ = nullptr;

std::string Warnings(const json& response) {
  return response.contains("warnings") ? response["warnings"].dump() : "";
}

// One pod per rule, each a one-line change from the well-set pod.
std::vector<std::pair<std::string, json>> PodPerRule() {
  std::vector<std::pair<std::string, json>> out;
  auto with_env = [](const char* name, const char* value) {
    json pod = Fixture("well_set_p5.json");
    pod["spec"]["containers"][0]["env"].push_back({{"name", name}, {"value", value}});
    return pod;
  };
  out.emplace_back("settings.nccl_socket_ifname", with_env("NCCL_SOCKET_IFNAME", "lo"));
  out.emplace_back("settings.nccl_net", with_env("NCCL_NET", "Socket"));
  out.emplace_back("settings.nccl_net", with_env("NCCL_IB_DISABLE", "1"));
  out.emplace_back("settings.fi_provider", with_env("FI_PROVIDER", "tcp"));
  out.emplace_back("settings.nccl_debug", with_env("NCCL_DEBUG", "WARN"));
  json missing = Fixture("well_set_p5.json");
  for (const char* side : {"limits", "requests"}) {
    missing["spec"]["containers"][0]["resources"][side].erase("vpc.amazonaws.com/efa");
  }
  out.emplace_back("pod.efa_resource_missing", missing);
  json partial = Fixture("well_set_p5.json");
  for (const char* side : {"limits", "requests"}) {
    partial["spec"]["containers"][0]["resources"][side]["vpc.amazonaws.com/efa"] = "8";
  }
  out.emplace_back("pod.efa_devices_partial", partial);
  json no_ipc = Fixture("well_set_p5.json");
  no_ipc["spec"]["containers"][0].erase("securityContext");
  out.emplace_back("pod.ipc_lock_missing", no_ipc);
  return out;
}

TEST_F(AdmissionWebhookTest, EachRuleWarnsAndUnderEnforceDenies) {
  for (const auto& [rule, pod] : PodPerRule()) {
    const json warned = Review(warn_->port(), pod);
    EXPECT_EQ(warned["allowed"], true) << rule;
    EXPECT_THAT(Warnings(warned), HasSubstr("[" + rule + "]"));
    EXPECT_THAT(Warnings(warned), HasSubstr("fix: "));
    const json denied = Review(enforce_->port(), pod);
    EXPECT_EQ(denied["allowed"], false) << rule;
    EXPECT_EQ(denied["status"]["code"], 403) << rule;
    EXPECT_THAT(denied["status"]["message"].get<std::string>(), HasSubstr(rule));
    // The namespace label's webhook entry calls /validate-pods-enforce on the same server.
    EXPECT_EQ(Review(warn_->port(), pod, "/validate-pods-enforce")["allowed"], false) << rule;
  }
}

TEST_F(AdmissionWebhookTest, WellSetAndOperatorShapedPodsPassWithoutWarning) {
  for (const char* name :
       {"well_set_p5.json", "raycluster_worker_g6.json", "pytorchjob_worker_p5.json"}) {
    for (const int port : {warn_->port(), enforce_->port()}) {
      const json r = Review(port, Fixture(name));
      EXPECT_EQ(r["allowed"], true) << name;
      EXPECT_EQ(r["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
      EXPECT_FALSE(r.contains("warnings")) << name << ": " << r.dump();
    }
  }
}

TEST_F(AdmissionWebhookTest, OperatorShapedPodsWithAMistakeAreCaught) {
  json ray = Fixture("raycluster_worker_g6.json");
  ray["spec"]["containers"][0]["env"].push_back({{"name", "NCCL_SOCKET_IFNAME"}, {"value", "lo"}});
  EXPECT_THAT(Warnings(Review(warn_->port(), ray)), HasSubstr("settings.nccl_socket_ifname"));
  json ddp = Fixture("pytorchjob_worker_p5.json");
  ddp["spec"]["initContainers"][0]["env"] = {{{"name", "FI_PROVIDER"}, {"value", "sockets"}}};
  const json r = Review(enforce_->port(), ddp);
  EXPECT_EQ(r["allowed"], false);
  EXPECT_THAT(r["status"]["message"].get<std::string>(), HasSubstr("init-pytorch"));
  EXPECT_THAT(r["status"]["message"].get<std::string>(), HasSubstr("FI_PROVIDER=sockets"));
}

TEST_F(AdmissionWebhookTest, ExemptAndOptedOutPodsPass) {
  const json bad = PodPerRule().front().second;
  const std::string body = ReviewOf(bad, "kube-system");
  const Reply exempt = Curl(enforce_->port(), "/validate-pods", &body);
  EXPECT_EQ(json::parse(exempt.body)["response"]["allowed"], true);
  json opted = bad;
  opted["metadata"]["annotations"]["efawatch.io/admission-opt-out"] = "TCP baseline run";
  EXPECT_EQ(Review(enforce_->port(), opted)["allowed"], true);
}

TEST_F(AdmissionWebhookTest, BadInputGets4xxAndTheServerKeepsAnswering) {
  for (const std::string& garbage : std::vector<std::string>{
           "", "{", "not json at all", "[1,2,3]", R"({"kind":"AdmissionReview","request":{}})",
           std::string(5000, '[')}) {
    const Reply r = Curl(warn_->port(), "/validate-pods", &garbage);
    EXPECT_EQ(r.status, 400) << garbage.substr(0, 40) << r.curl;
  }
  // Over --max-body-bytes (64 KiB here): refused on its Content-Length, and when sent chunked
  // (no length announced) once the body ends.
  const std::string big = ReviewOf(json{{"filler", std::string(100000, 'x')}});
  EXPECT_EQ(Curl(warn_->port(), "/validate-pods", &big).status, 413);
  EXPECT_EQ(
      Curl(warn_->port(), "/validate-pods", &big, {"-H", "Transfer-Encoding: chunked"}).status,
      413);
  // Far over (16 times the bound): refused before the body is sent (curl waits for
  // 100-continue on a body this large, as Go's client may).
  const std::string huge = ReviewOf(json{{"filler", std::string(2 << 20, 'x')}});
  EXPECT_EQ(Curl(warn_->port(), "/validate-pods", &huge).status, 413);
  EXPECT_EQ(Curl(warn_->port(), "/validate-pods").status, 405) << "GET on the review path";
  EXPECT_EQ(Curl(warn_->port(), "/nope").status, 404);
  EXPECT_EQ(Curl(warn_->port(), "/healthz").status, 200);
  EXPECT_EQ(Review(warn_->port(), Fixture("well_set_p5.json"))["allowed"], true);
}

TEST_F(AdmissionWebhookTest, AThousandReviewsAtOnceAllAnswered) {
  // One curl, 1,000 transfers, 50 at a time over their own TLS connections: the load of an
  // API server creating a large job's pods.
  const std::string good = ReviewOf(Fixture("well_set_p5.json"));
  const std::string bad = ReviewOf(PodPerRule().front().second);
  testing::WriteFile(scratch_.File("good"), good);
  testing::WriteFile(scratch_.File("bad"), bad);
  const std::string before = Curl(warn_->port(), "/metrics").body;
  std::ostringstream config;
  for (int i = 0; i < 1000; ++i) {
    if (i > 0) config << "next\n";
    config << "url = \"https://127.0.0.1:" << warn_->port() << "/validate-pods\"\n"
           << "cacert = \"" << certs_->File("ca.pem") << "\"\n"
           << "header = \"Content-Type: application/json\"\n"
           << "data-binary = \"@" << scratch_.File(i % 2 == 0 ? "good" : "bad") << "\"\n"
           << "output = \"/dev/null\"\n"
           << "silent\nshow-error\n"
           << "write-out = \"%{http_code}\\n\"\n";
  }
  testing::WriteFile(scratch_.File("curl.conf"), config.str());
  auto [rc, out] =
      testing::RunCommand({"/usr/bin/env", "curl", "-sS", "--no-progress-meter", "--parallel",
                           "--parallel-max", "50", "-K", scratch_.File("curl.conf")},
                          120s);
  ASSERT_EQ(rc, 0) << out.substr(0, 2000);
  std::istringstream lines(out);
  int ok = 0;
  std::string other;
  for (std::string line; std::getline(lines, line);) {
    if (line == "200") {
      ++ok;
    } else {
      other += line + "\n";
    }
  }
  EXPECT_EQ(ok, 1000);
  EXPECT_EQ(other, "");
  // Each review counted once, by result and by rule.
  const std::string metrics = Curl(warn_->port(), "/metrics").body;
  auto count = [](const std::string& text, const std::string& series) {
    const size_t at = text.find(series + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + series.size() + 1));
  };
  const std::string allowed = "efawatch_admission_reviews_total{result=\"allowed\"}";
  const std::string warned = "efawatch_admission_reviews_total{result=\"warned\"}";
  EXPECT_EQ(count(metrics, allowed) - count(before, allowed), 500) << metrics;
  EXPECT_EQ(count(metrics, warned) - count(before, warned), 500) << metrics;
  EXPECT_THAT(metrics, HasSubstr("efawatch_admission_findings_total{rule="
                                 "\"settings.nccl_socket_ifname\",result=\"warned\"}"));
  EXPECT_THAT(metrics, HasSubstr("efawatch_admission_bad_requests_total{reason=\"too_large\"}"));
  if (testing::OnPath("promtool")) {
    testing::WriteFile(scratch_.File("scrape.prom"), metrics);
    auto [prc, pout] = testing::RunCommand(
        {"/bin/sh", "-c", "promtool check metrics < " + scratch_.File("scrape.prom") + " 2>&1"},
        30s);
    EXPECT_EQ(prc, 0) << pout;
  }
}

TEST_F(AdmissionWebhookTest, ARenewedCertificateIsServedWithoutARestart) {
  TempDir next;
  ASSERT_EQ(testing::MakeTestCertificates(next.path()), "");
  TempDir live;
  for (const char* f : {"server.pem", "server.key"}) {
    testing::WriteFile(live.File(f), testing::ReadFileOrEmpty(certs_->File(f)));
  }
  Webhook w(live, {"--tls-reload-interval-ms", "100"});
  ASSERT_NE(w.port(), 0) << w.proc().Stdout() << w.proc().Stderr();
  ASSERT_EQ(Curl(w.port(), "/healthz").status, 200);
  // cert-manager's renewal: both files replaced (kubelet swaps the Secret volume at once).
  testing::WriteFile(live.File("server.key.tmp"),
                     testing::ReadFileOrEmpty(next.File("server.key")));
  testing::WriteFile(live.File("server.pem.tmp"),
                     testing::ReadFileOrEmpty(next.File("server.pem")));
  std::rename(live.File("server.key.tmp").c_str(), live.File("server.key").c_str());
  std::rename(live.File("server.pem.tmp").c_str(), live.File("server.pem").c_str());
  int status = 0;
  for (int i = 0; i < 100 && status != 200; ++i) {
    std::this_thread::sleep_for(100ms);
    status = Curl(w.port(), "/healthz", nullptr, {"--cacert", next.File("ca.pem")}).status;
  }
  EXPECT_EQ(status, 200) << "the new CA's certificate is not served";
}

TEST(AdmissionFlagsTest, ABadFlagExitsTwoWithOneLine) {
  auto [rc, out] = testing::RunCommand({testing::BinaryPath("bin/efawatch-admission"), "--tls-cert",
                                        "/nonexistent", "--tls-key", "/nonexistent"},
                                       10s);
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_THAT(out, HasSubstr("efawatch admission: "));
}

}  // namespace
}  // namespace efawatch
