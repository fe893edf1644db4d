// SPDX-License-Identifier: Apache-2.0
// Kubernetes API discovery against a local HTTPS server that answers list requests the way the
// API server does (tests/component/mesh/fake_apiserver.py): CA pinned, bearer token checked,
// label selector applied, pagination with limit/continue.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "absl/strings/str_split.h"
#include "probes/mesh/discovery.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/subprocess.h"

namespace efawatch::mesh {
namespace {

using namespace std::chrono_literals;
using testing::ReadFileOrEmpty;
using testing::TempDir;
using testing::WriteFile;

std::string Pod(const std::string& name, const std::string& node, const std::string& ip,
                const std::string& phase, const std::string& app = "efawatch") {
  return R"({"metadata":{"name":")" + name + R"(","labels":{"app.kubernetes.io/name":")" + app +
         R"("}},"spec":{"nodeName":")" + node + R"("},"status":{"phase":")" + phase +
         R"(","podIP":")" + ip + R"("}})";
}

class KubernetesDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::OnPath("openssl") || !testing::OnPath("python3")) {
      GTEST_SKIP() << "needs openssl and python3";
    }
    WriteFile(dir_.File("namespace"), "efawatch");
    // Five agent pods (one pending, without an IP), an unrelated pod the selector must drop, and
    // one in another namespace.
    WriteFile(dir_.File("objects.json"),
              R"({"namespaces":{"efawatch":[)" + Pod("a", "node-a", "10.0.0.1", "Running") + "," +
                  Pod("b", "node-b", "10.0.0.2", "Running") + "," +
                  Pod("other", "node-b", "10.0.0.9", "Running", "something-else") + "," +
                  Pod("c", "node-c", "fd00::3", "Running") + "," +
                  Pod("d", "node-d", "", "Pending") + "," +
                  Pod("e", "node-e", "10.0.0.5", "Running") + R"(],"kube-system":[)" +
                  Pod("x", "node-x", "10.9.9.9", "Running") + R"(]},)" +
                  R"("nodes":[{"metadata":{"name":"node-a","labels":{"pg":"pg-1"}}},)" +
                  R"({"metadata":{"name":"node-b","labels":{"pg":"pg-1"}}},)" +
                  R"({"metadata":{"name":"node-c","labels":{"pg":"pg-2"}}}]})");
    std::string url;
    const std::string started = testing::StartFakeApiServer(dir_, &server_, &url);
    ASSERT_TRUE(started.empty()) << started;
    options_.api_server = url;
    options_.token_file = dir_.File("client-token");
    options_.ca_file = dir_.File("ca.pem");
    options_.namespace_file = dir_.File("namespace");
    options_.page_size = 2;
    options_.timeout = 5000ms;
  }

  std::vector<std::string> Requests() const {
    return absl::StrSplit(ReadFileOrEmpty(dir_.File("requests")), '\n', absl::SkipEmpty());
  }

  TempDir dir_;
  std::unique_ptr<testing::Subprocess> server_;
  KubernetesSourceOptions options_;
};

TEST_F(KubernetesDiscoveryTest, ListsRunningAgentPodsAcrossPages) {
  auto source = KubernetesPeerSource(options_);
  auto peers = source->List({});
  ASSERT_TRUE(peers.ok()) << peers.status();
  std::sort(peers->begin(), peers->end(),
            [](const Peer& x, const Peer& y) { return x.node < y.node; });
  ASSERT_EQ(peers->size(), 4u);
  EXPECT_EQ((*peers)[0], (Peer{"node-a", "10.0.0.1:9478", ""}));
  EXPECT_EQ((*peers)[1], (Peer{"node-b", "10.0.0.2:9478", ""}));
  EXPECT_EQ((*peers)[2], (Peer{"node-c", "[fd00::3]:9478", ""}));
  EXPECT_EQ((*peers)[3], (Peer{"node-e", "10.0.0.5:9478", ""}));
  // 5 matching pods in pages of 2: three requests, all in the agent's namespace with the
  // selector, the later two with a continue token.
  const auto requests = Requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) {
    EXPECT_TRUE(r.starts_with("/api/v1/namespaces/efawatch/pods?limit=2")) << r;
    EXPECT_NE(r.find("labelSelector=app.kubernetes.io%2Fname%3Defawatch"), std::string::npos) << r;
  }
  EXPECT_EQ(requests[0].find("continue="), std::string::npos);
  EXPECT_NE(requests[2].find("continue="), std::string::npos);
  // The first page is served from the API server's watch cache (resourceVersion=0), not etcd;
  // a continued page carries only its token.
  EXPECT_NE(requests[0].find("&resourceVersion=0"), std::string::npos) << requests[0];
  EXPECT_EQ(requests[2].find("resourceVersion"), std::string::npos) << requests[2];
}

TEST_F(KubernetesDiscoveryTest, GroupsComeFromANodeLabel) {
  options_.group_node_label = "pg";
  auto peers = KubernetesPeerSource(options_)->List({});
  ASSERT_TRUE(peers.ok()) << peers.status();
  std::map<std::string, std::string> groups;
  for (const Peer& p : *peers) groups[p.node] = p.group;
  EXPECT_EQ(groups,
            (std::map<std::string, std::string>{
                {"node-a", "pg-1"}, {"node-b", "pg-1"}, {"node-c", "pg-2"}, {"node-e", ""}}));
  EXPECT_TRUE(Requests().front().starts_with("/api/v1/nodes?limit=2&labelSelector=pg"));
}

TEST_F(KubernetesDiscoveryTest, WrongTokenIsAnErrorWithTheApiServersMessage) {
  auto source = KubernetesPeerSource(options_);
  ASSERT_TRUE(source->List({}).ok());
  WriteFile(dir_.File("client-token"), "stale-token");  // read at every listing (tokens rotate)
  auto peers = source->List({});
  ASSERT_FALSE(peers.ok());
  EXPECT_EQ(peers.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(peers.status().message().find("HTTP 401: Unauthorized"), absl::string_view::npos)
      << peers.status();
}

TEST_F(KubernetesDiscoveryTest, ServerNotSignedByThePinnedCaIsRefused) {
  TempDir other;
  ASSERT_TRUE(testing::MakeTestCertificates(other.path()).empty());
  options_.ca_file = other.File("ca.pem");
  auto peers = KubernetesPeerSource(options_)->List({});
  ASSERT_FALSE(peers.ok());
  EXPECT_EQ(peers.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Requests().empty()) << "the request must not reach an unverified server";
}

TEST_F(KubernetesDiscoveryTest, MissingTokenFileIsAClearError) {
  options_.token_file = dir_.File("no-such-token");
  auto peers = KubernetesPeerSource(options_)->List({});
  ASSERT_FALSE(peers.ok());
  EXPECT_NE(peers.status().message().find("no-such-token"), absl::string_view::npos);
}

}  // namespace
}  // namespace efawatch::mesh
