// SPDX-License-Identifier: Apache-2.0
// `efawatch node-conditions [--clear]` against the fake Kubernetes API server (tests/component/
// mesh/fake_apiserver.py, HTTPS with a bearer token on 127.0.0.1): which nodes carry the agent's
// conditions, a strategic merge patch per such node that deletes exactly those (kubelet's Ready
// and other agents' conditions untouched), one node by --node, RBAC refusals reported with exit
// 1, and exit 2 without an API server.
#include "cli/node_conditions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/fake_apiserver.h"

namespace efawatch::cli {
namespace {

using Json = nlohmann::json;
using testing::TempDir;

Json Node(const std::string& name, const std::vector<std::string>& types) {
  Json conditions = Json::array();
  for (const std::string& t : types) {
    conditions.push_back({{"type", t}, {"status", "True"}, {"reason", "Fine"}});
  }
  return {{"metadata", {{"name", name}}}, {"status", {{"conditions", conditions}}}};
}

class NodeConditionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteObjects(false);
    ASSERT_EQ(testing::StartFakeApiServer(dir_, &server_, &url_), "");
    args_.api.api_server = url_;
    args_.api.token_file = dir_.File("client-token");
    args_.api.ca_file = dir_.File("ca.pem");
  }

  // Three nodes: both agent conditions, one of them beside another agent's, none.
  void WriteObjects(bool forbid_writes) {
    const Json objects = {{"namespaces", Json::object()},
                          {"forbid_writes", forbid_writes},
                          {"nodes",
                           {Node("gpu-a", {"Ready", "EfaHealthy", "FabricReachable"}),
                            Node("gpu-b", {"Ready", "KernelDeadlock", "FabricReachable"}),
                            Node("cpu-c", {"Ready", "MemoryPressure"})}}};
    testing::WriteFile(dir_.File("objects.json"), objects.dump());
  }

  int Run() {
    out_.str("");
    err_.str("");
    return RunNodeConditions(args_, out_, err_);
  }

  // Each write the server took: {method, path, content_type, body}.
  std::vector<Json> Writes() const {
    std::vector<Json> writes;
    std::istringstream in(testing::ReadFileOrEmpty(dir_.File("requests.writes")));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) writes.push_back(Json::parse(line));
    }
    return writes;
  }

  static Json Deleting(const std::vector<std::string>& types) {
    Json list = Json::array();
    for (const std::string& t : types) list.push_back({{"type", t}, {"$patch", "delete"}});
    return {{"status", {{"conditions", list}}}};
  }

  TempDir dir_;
  std::unique_ptr<testing::Subprocess> server_;
  std::string url_;
  NodeConditionsArgs args_;
  std::ostringstream out_, err_;
};

TEST_F(NodeConditionsTest, ListsNodesCarryingAgentConditionsAndWritesNothing) {
  EXPECT_EQ(Run(), 0) << err_.str();
  EXPECT_EQ(out_.str(), "gpu-a: EfaHealthy, FabricReachable\ngpu-b: FabricReachable\n");
  EXPECT_TRUE(Writes().empty());
}

TEST_F(NodeConditionsTest, ClearDeletesOnlyTheAgentsConditionsOnEachNodeCarryingThem) {
  args_.clear = true;
  EXPECT_EQ(Run(), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "gpu-a: cleared EfaHealthy, FabricReachable\ngpu-b: cleared FabricReachable\n");
  const std::vector<Json> writes = Writes();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0]["method"], "PATCH");
  EXPECT_EQ(writes[0]["path"], "/api/v1/nodes/gpu-a/status");
  EXPECT_EQ(writes[0]["content_type"], "application/strategic-merge-patch+json");
  EXPECT_EQ(writes[0]["body"], Deleting({"EfaHealthy", "FabricReachable"}));
  EXPECT_EQ(writes[1]["path"], "/api/v1/nodes/gpu-b/status");
  // KernelDeadlock (node-problem-detector's) and Ready (kubelet's) are not named: they stay.
  EXPECT_EQ(writes[1]["body"], Deleting({"FabricReachable"}));
}

TEST_F(NodeConditionsTest, ClearWithNodeTouchesThatNodeOnly) {
  args_.clear = true;
  args_.node = "gpu-b";
  EXPECT_EQ(Run(), 0) << err_.str();
  const std::vector<Json> writes = Writes();
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(writes[0]["path"], "/api/v1/nodes/gpu-b/status");
  EXPECT_NE(testing::ReadFileOrEmpty(dir_.File("requests")).find("fieldSelector=metadata.name"),
            std::string::npos);
}

TEST_F(NodeConditionsTest, CleanNodeSaysSoAndAnUnknownNodeFails) {
  args_.clear = true;
  args_.node = "cpu-c";
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(out_.str(), "no node carries an efawatch condition\n");
  EXPECT_TRUE(Writes().empty());
  args_.node = "no-such-node";
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(err_.str(), "efawatch node-conditions: no node no-such-node\n");
}

TEST_F(NodeConditionsTest, RefusedPatchExitsOneNamingTheRbacItNeeds) {
  WriteObjects(/*forbid_writes=*/true);
  args_.clear = true;
  EXPECT_EQ(Run(), 1);
  EXPECT_EQ(out_.str(), "");
  EXPECT_NE(err_.str().find("gpu-a: HTTP 403"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("patch on nodes/status"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("gpu-b: HTTP 403"), std::string::npos) << err_.str();
}

TEST_F(NodeConditionsTest, WrongTokenFailsTheListing) {
  testing::WriteFile(dir_.File("client-token"), "wrong\n");
  args_.clear = true;
  EXPECT_EQ(Run(), 1);
  EXPECT_NE(err_.str().find("listing nodes"), std::string::npos) << err_.str();
  EXPECT_TRUE(Writes().empty());
}

TEST(NodeConditionsConfigTest, NoApiServerExitsTwoWithOneLine) {
  NodeConditionsArgs args;
  args.api.api_server = "";
  std::ostringstream out, err;
  // Outside a pod KUBERNETES_SERVICE_HOST is unset (ctest does not set it).
  if (std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) GTEST_SKIP() << "running in a pod";
  EXPECT_EQ(RunNodeConditions(args, out, err), 2);
  const std::string line = err.str();
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace efawatch::cli
