// SPDX-License-Identifier: Apache-2.0
// Workload identity: WorkloadOf over the labels the operators set, and WorkloadWatcher against a
// local HTTPS server that answers pod lists the way the API server does
// (tests/component/mesh/fake_apiserver.py): the node's pods only (field selector), paged, their
// series gone when the pod is.

#include "daemon/workloads/workloads.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

#include "absl/strings/str_split.h"
#include "tests/support/fake_apiserver.h"
#include "tests/support/subprocess.h"

namespace efawatch::workloads {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::ReadFileOrEmpty;
using testing::TempDir;
using testing::WriteFile;

Json Pod(const std::string& name, const std::string& node, Json labels,
         Json owners = Json::array()) {
  return {
      {"metadata", {{"name", name}, {"labels", std::move(labels)}, {"ownerReferences", owners}}},
      {"spec", {{"nodeName", node}}},
      {"status", {{"phase", "Running"}}}};
}

Json Owner(const std::string& kind, const std::string& name) {
  return Json::array({{{"kind", kind}, {"name", name}, {"controller", true}}});
}

TEST(WorkloadOfTest, OperatorLabelsThenTheControllingOwner) {
  EXPECT_EQ(WorkloadOf(Pod("r", "n", {{"ray.io/cluster", "rc"}, {"ray.io/node-type", "worker"}})),
            (Workload{"RayCluster", "rc"}));
  EXPECT_EQ(WorkloadOf(Pod("r", "n",
                           {{"ray.io/cluster", "rj-abcde"},
                            {"ray.io/originated-from-crd", "RayJob"},
                            {"ray.io/originated-from-cr-name", "rj"}})),
            (Workload{"RayJob", "rj"}));
  EXPECT_EQ(WorkloadOf(Pod("p", "n",
                           {{"training.kubeflow.org/job-name", "llm"},
                            {"training.kubeflow.org/replica-type", "worker"}},
                           Owner("PyTorchJob", "llm"))),
            (Workload{"PyTorchJob", "llm"}));
  EXPECT_EQ(WorkloadOf(Pod("p", "n",
                           {{"training.kubeflow.org/job-name", "m"},
                            {"training.kubeflow.org/operator-name", "mpijob-controller"}})),
            (Workload{"MPIJob", "m"}));
  EXPECT_EQ(WorkloadOf(Pod("t", "n",
                           {{"trainer.kubeflow.org/trainjob-name", "tj"},
                            {"jobset.sigs.k8s.io/jobset-name", "tj"}})),
            (Workload{"TrainJob", "tj"}));
  EXPECT_EQ(WorkloadOf(Pod("j", "n",
                           {{"jobset.sigs.k8s.io/jobset-name", "js"},
                            {"batch.kubernetes.io/job-name", "js-workers-0"}},
                           Owner("Job", "js-workers-0"))),
            (Workload{"JobSet", "js"}));
  EXPECT_EQ(WorkloadOf(Pod("l", "n", {{"leaderworkerset.sigs.k8s.io/name", "lws"}},
                           Owner("StatefulSet", "lws-0"))),
            (Workload{"LeaderWorkerSet", "lws"}));
  EXPECT_EQ(WorkloadOf(Pod("b", "n", {{"batch.kubernetes.io/job-name", "bj"}}, Owner("Job", "bj"))),
            (Workload{"Job", "bj"}));
  EXPECT_EQ(WorkloadOf(Pod("b", "n", {{"job-name", "old"}})), (Workload{"Job", "old"}));
  EXPECT_EQ(
      WorkloadOf(Pod("d", "n", {{"pod-template-hash", "5d4f8"}}, Owner("ReplicaSet", "web-5d4f8"))),
      (Workload{"Deployment", "web"}));
  EXPECT_EQ(WorkloadOf(Pod("s", "n", Json::object(), Owner("StatefulSet", "db"))),
            (Workload{"StatefulSet", "db"}));
  EXPECT_EQ(WorkloadOf(Pod("alone", "n", Json::object())), (Workload{"Pod", "alone"}));
  // Input of the wrong shape is a bare pod, not a crash.
  EXPECT_EQ(WorkloadOf(Json::array()), (Workload{"Pod", ""}));
  EXPECT_EQ(WorkloadOf({{"metadata", {{"name", "x"}, {"labels", 7}, {"ownerReferences", "no"}}}}),
            (Workload{"Pod", "x"}));
}

class RecordingSink final : public common::MetricSink {
 public:
  void Add(metrics::Metric metric, const common::Labels& labels, double) override {
    ASSERT_EQ(metric.name(), "efawatch_pod_workload_info");
    std::map<std::string, std::string> m(labels.begin(), labels.end());
    series[m["namespace"] + "/" + m["pod"]] = m["workload_kind"] + " " + m["workload"];
  }
  void AddHistogram(metrics::Metric, const common::Labels&,
                    const common::HistogramSample&) override {}
  std::map<std::string, std::string> series;
};

class WorkloadWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::OnPath("openssl") || !testing::OnPath("python3")) {
      GTEST_SKIP() << "needs openssl and python3";
    }
    WriteObjects(true);
    std::string url;
    const std::string started = testing::StartFakeApiServer(dir_, &server_, &url);
    ASSERT_TRUE(started.empty()) << started;
    options_.api.api_server = url;
    options_.api.token_file = dir_.File("client-token");
    options_.api.ca_file = dir_.File("ca.pem");
    options_.api.page_size = 2;
    options_.api.timeout = 5000ms;
    options_.node_name = "node-a";
  }

  // Pods of two workloads on node-a (one pod of the Ray cluster only while `with_ray`), one on
  // node-b, and a system pod on node-a.
  void WriteObjects(bool with_ray) {
    Json train =
        Json::array({Pod("llm-worker-0", "node-a", {{"training.kubeflow.org/job-name", "llm"}},
                         Owner("PyTorchJob", "llm")),
                     Pod("llm-worker-1", "node-b", {{"training.kubeflow.org/job-name", "llm"}},
                         Owner("PyTorchJob", "llm"))});
    if (with_ray) {
      train.push_back(Pod("rc-worker-x", "node-a", {{"ray.io/cluster", "rc"}}));
    }
    const Json objects = {
        {"namespaces",
         {{"train", train},
          {"kube-system", Json::array({Pod("efa-plugin-abcde", "node-a", Json::object(),
                                           Owner("DaemonSet", "efa-plugin"))})}}}};
    WriteFile(dir_.File("objects.json"), objects.dump());
  }

  TempDir dir_;
  std::unique_ptr<testing::Subprocess> server_;
  WorkloadWatcherOptions options_;
};

TEST_F(WorkloadWatcherTest, ExportsThisNodesPodsAndDropsThemWithThePod) {
  WorkloadWatcher w(options_);
  ASSERT_TRUE(w.ListOnce({}).ok());
  RecordingSink sink;
  ASSERT_TRUE(w.Collect(std::chrono::steady_clock::now() + 1s, sink).ok());
  EXPECT_EQ(sink.series, (std::map<std::string, std::string>{
                             {"kube-system/efa-plugin-abcde", "DaemonSet efa-plugin"},
                             {"train/llm-worker-0", "PyTorchJob llm"},
                             {"train/rc-worker-x", "RayCluster rc"},
                         }));
  EXPECT_EQ(w.Lookup("train", "llm-worker-0"), (Workload{"PyTorchJob", "llm"}));
  EXPECT_FALSE(w.Lookup("train", "llm-worker-1").has_value()) << "another node's pod";
  // Every request lists all namespaces' pods of this node, in pages of 2.
  const std::vector<std::string> requests =
      absl::StrSplit(ReadFileOrEmpty(dir_.File("requests")), '\n', absl::SkipEmpty());
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& r : requests) {
    EXPECT_TRUE(r.starts_with("/api/v1/pods?limit=2")) << r;
    EXPECT_NE(r.find("fieldSelector=spec.nodeName%3Dnode-a"), std::string::npos) << r;
  }
  // The Ray pod is deleted: its series goes at the next listing.
  WriteObjects(false);
  ASSERT_TRUE(w.ListOnce({}).ok());
  RecordingSink after;
  ASSERT_TRUE(w.Collect(std::chrono::steady_clock::now() + 1s, after).ok());
  EXPECT_FALSE(after.series.contains("train/rc-worker-x"));
  EXPECT_EQ(after.series.size(), 2u);
}

TEST_F(WorkloadWatcherTest, AFailedListingKeepsTheLastTable) {
  WorkloadWatcher w(options_);
  ASSERT_TRUE(w.ListOnce({}).ok());
  WriteFile(dir_.File("client-token"), "wrong-token\n");
  const absl::Status st = w.ListOnce({});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("401"), std::string_view::npos) << st;
  EXPECT_EQ(w.Lookup("train", "rc-worker-x"), (Workload{"RayCluster", "rc"}));
}

TEST_F(WorkloadWatcherTest, StartsAndStopsItsThread) {
  options_.interval = 50ms;
  WorkloadWatcher w(options_);
  w.Start();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!w.Lookup("train", "llm-worker-0") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(w.Lookup("train", "llm-worker-0").has_value());
  const auto t0 = std::chrono::steady_clock::now();
  w.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

}  // namespace
}  // namespace efawatch::workloads
