// SPDX-License-Identifier: Apache-2.0
// The webhook's judgement on hand-built pods: one per rule, a well-set EFA pod, and pods shaped
// as KubeRay and the Training Operator create them.
#include "lib/admission/review.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "lib/doctor/settings_rules.h"

namespace efawatch::admission {
namespace {

using nlohmann::json;

json Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
  json env = json::array();
  for (const auto& [k, v] : vars) env.push_back({{"name", k}, {"value", v}});
  return env;
}

// A p5.48xlarge training pod that does everything right.
json WellSetPod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "train-0", "namespace": "ml"},
    "spec": {
      "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
      "containers": [{
        "name": "trainer",
        "env": [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "FI_PROVIDER", "value": "efa"}],
        "resources": {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": "32"}},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}
      }]
    }})");
}

std::vector<std::string> Rules(const json& pod) {
  std::vector<std::string> out;
  for (const Finding& f : JudgePod(pod)) out.push_back(f.rule);
  return out;
}

bool Has(const std::vector<std::string>& rules, const std::string& r) {
  return std::find(rules.begin(), rules.end(), r) != rules.end();
}

json& Trainer(json& pod) { return pod["spec"]["containers"][0]; }

TEST(AdmissionReviewTest, WellSetEfaPodHasNoFinding) {
  EXPECT_TRUE(Judged(WellSetPod()));
  EXPECT_TRUE(JudgePod(WellSetPod()).empty());
}

TEST(AdmissionReviewTest, EachSettingThatForcesTcpIsFound) {
  for (const auto& [var, value, rule] :
       {std::tuple{"NCCL_SOCKET_IFNAME", "lo", "settings.nccl_socket_ifname"},
        {"NCCL_NET", "Socket", "settings.nccl_net"},
        {"NCCL_IB_DISABLE", "1", "settings.nccl_net"},
        {"FI_PROVIDER", "tcp", "settings.fi_provider"},
        {"FI_PROVIDER", "sockets", "settings.fi_provider"},
        {"NCCL_DEBUG", "WARN", "settings.nccl_debug"}}) {
    json pod = WellSetPod();
    Trainer(pod)["env"].push_back({{"name", var}, {"value", value}});
    const std::vector<Finding> found = JudgePod(pod);
    ASSERT_EQ(found.size(), 1u) << var << "=" << value;
    EXPECT_EQ(found[0].rule, rule);
    EXPECT_EQ(found[0].container, "trainer");
    // The message names the variable and the fix.
    EXPECT_NE(found[0].Warning().find(var), std::string::npos) << found[0].Warning();
    EXPECT_NE(found[0].Warning().find("fix: "), std::string::npos);
    EXPECT_LE(found[0].Warning().size(), kMaxWarningChars);
  }
}

TEST(AdmissionReviewTest, RulesComeFromDoctorsTable) {
  json pod = WellSetPod();
  Trainer(pod)["env"] = Env({{"NCCL_NET", "Socket"}, {"NCCL_DEBUG", "INFO"}});
  const Finding f = JudgePod(pod).at(0);
  const doctor::Check c =
      doctor::SettingsRuleById(f.rule).judge({{"NCCL_NET", "Socket"}}, {.efa = true});
  EXPECT_EQ(f.summary, c.summary);
  EXPECT_EQ(f.fix, c.fix);
  EXPECT_EQ(f.status, doctor::Status::kFail);
}

TEST(AdmissionReviewTest, EfaTypeWithoutTheResource) {
  json pod = WellSetPod();
  Trainer(pod)["resources"]["limits"].erase("vpc.amazonaws.com/efa");
  EXPECT_TRUE(Has(Rules(pod), "pod.efa_resource_missing"));
  // FI_PROVIDER=efa without the resource, on no particular type.
  json untyped = WellSetPod();
  untyped["spec"].erase("nodeSelector");
  Trainer(untyped)["resources"]["limits"].erase("vpc.amazonaws.com/efa");
  EXPECT_TRUE(Has(Rules(untyped), "pod.efa_resource_missing"));
}

TEST(AdmissionReviewTest, FewerEfaDevicesThanTheTypeWhenThePodTakesTheNode) {
  json pod = WellSetPod();
  Trainer(pod)["resources"]["limits"]["vpc.amazonaws.com/efa"] = 4;
  EXPECT_TRUE(Has(Rules(pod), "pod.efa_devices_partial"));
  // Half the GPUs: the other half's pod may take the other EFAs.
  Trainer(pod)["resources"]["limits"]["nvidia.com/gpu"] = 4;
  EXPECT_FALSE(Has(Rules(pod), "pod.efa_devices_partial"));
}

TEST(AdmissionReviewTest, IpcLockMissing) {
  json pod = WellSetPod();
  Trainer(pod).erase("securityContext");
  EXPECT_EQ(Rules(pod), std::vector<std::string>{"pod.ipc_lock_missing"});
  Trainer(pod)["securityContext"] = {{"privileged", true}};
  EXPECT_TRUE(Rules(pod).empty());
}

TEST(AdmissionReviewTest, PodsOffEfaHearOnlyOfWhatBreaksThemAnywhere) {
  // A GPU pod on a type without EFA that picks TCP on purpose: TCP is its only way.
  json pod = json::parse(R"({"spec": {"containers": [{"name": "c"}]}})");
  pod["spec"]["containers"][0]["env"] = Env({{"NCCL_NET", "Socket"}, {"FI_PROVIDER", "tcp"}});
  EXPECT_TRUE(Judged(pod));
  EXPECT_TRUE(JudgePod(pod).empty());
  pod["spec"]["containers"][0]["env"] = Env({{"NCCL_SOCKET_IFNAME", "lo"}});
  EXPECT_EQ(Rules(pod), std::vector<std::string>{"settings.nccl_socket_ifname"});
}

TEST(AdmissionReviewTest, OnlyPodsThatTouchTheFabricAreJudged) {
  EXPECT_FALSE(Judged(json::parse(R"({"spec": {"containers": [{"name": "web"}]}})")));
  EXPECT_FALSE(Judged(json::parse(R"({"spec": {"containers": "garbage"}})")));
  EXPECT_FALSE(Judged(json::parse("[]")));
}

TEST(AdmissionReviewTest, ValuesFromConfigMapsAreNotGuessed) {
  json pod = WellSetPod();
  Trainer(pod)["env"] = json::parse(
      R"([{"name": "NCCL_DEBUG", "valueFrom": {"configMapKeyRef": {"name": "nccl", "key": "d"}}},
          {"name": "FI_PROVIDER", "value": "efa"}])");
  EXPECT_TRUE(JudgePod(pod).empty());
}

// A Ray worker as KubeRay creates it from a RayCluster's workerGroupSpecs: the group's template,
// the ray container first, an init container that waits for the GCS, affinity on the type.
TEST(AdmissionReviewTest, RayClusterWorkerPod) {
  json pod = json::parse(R"({
    "metadata": {"name": "rc-worker-gpu-x7k2p", "namespace": "ml",
                 "labels": {"ray.io/cluster": "rc", "ray.io/node-type": "worker"},
                 "ownerReferences": [{"kind": "RayCluster", "name": "rc"}]},
    "spec": {
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
          {"key": "node.kubernetes.io/instance-type", "operator": "In",
           "values": ["g6.12xlarge"]}]}]}}},
      "initContainers": [{"name": "wait-gcs-ready", "env": [{"name": "FQ_RAY_IP", "value": "x"}]}],
      "containers": [{
        "name": "ray-worker",
        "env": [{"name": "RAY_ADDRESS", "value": "rc-head-svc:6379"},
                {"name": "NCCL_DEBUG", "value": "INFO"},
                {"name": "NCCL_SOCKET_IFNAME", "value": "lo"}],
        "resources": {"limits": {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"},
                      "requests": {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}
      }]
    }})");
  EXPECT_TRUE(Judged(pod));
  EXPECT_EQ(Rules(pod), std::vector<std::string>{"settings.nccl_socket_ifname"});
  // Without the resource (Kubeflow Trainer's resourcesPerNode replaced it).
  pod["spec"]["containers"][0]["resources"]["limits"].erase("vpc.amazonaws.com/efa");
  pod["spec"]["containers"][0]["resources"]["requests"].erase("vpc.amazonaws.com/efa");
  EXPECT_TRUE(Has(Rules(pod), "pod.efa_resource_missing"));
}

// A PyTorchJob worker as the Training Operator creates it: container "pytorch", MASTER_ADDR and
// friends injected, the job's env with FI_PROVIDER set in an init container too.
TEST(AdmissionReviewTest, PyTorchJobWorkerPod) {
  json pod = json::parse(R"({
    "metadata": {"name": "ddp-worker-1", "namespace": "ml",
                 "labels": {"training.kubeflow.org/job-name": "ddp",
                            "training.kubeflow.org/replica-type": "worker"},
                 "ownerReferences": [{"kind": "PyTorchJob", "name": "ddp"}]},
    "spec": {
      "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
      "initContainers": [{"name": "init-pytorch",
                          "env": [{"name": "FI_PROVIDER", "value": "sockets"}]}],
      "containers": [{
        "name": "pytorch",
        "env": [{"name": "MASTER_ADDR", "value": "ddp-master-0"},
                {"name": "MASTER_PORT", "value": "23456"},
                {"name": "WORLD_SIZE", "value": "16"}, {"name": "RANK", "value": "9"},
                {"name": "NCCL_DEBUG", "value": "INFO"}],
        "resources": {"limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}
      }]
    }})");
  const std::vector<Finding> found = JudgePod(pod);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rule, "settings.fi_provider");
  EXPECT_EQ(found[0].container, "init-pytorch");
  EXPECT_EQ(found[0].status, doctor::Status::kFail);
}

std::string ReviewOf(const json& pod, const std::string& ns = "ml") {
  return json({{"apiVersion", "admission.k8s.io/v1"},
               {"kind", "AdmissionReview"},
               {"request",
                {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
                 {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                 {"namespace", ns},
                 {"operation", "CREATE"},
                 {"object", pod}}}})
      .dump();
}

TEST(AdmissionReviewTest, WarnsByDefaultAndDeniesWhenEnforced) {
  json pod = WellSetPod();
  Trainer(pod)["env"].push_back({{"name", "NCCL_NET"}, {"value", "Socket"}});
  auto warned = Review(ReviewOf(pod), {});
  ASSERT_TRUE(warned.ok());
  EXPECT_EQ(warned->result, Result::kWarned);
  const json& r = warned->review["response"];
  EXPECT_EQ(warned->review["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(r["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(r["allowed"], true);
  ASSERT_EQ(r["warnings"].size(), 1u);
  auto denied = Review(ReviewOf(pod), {.enforce = true});
  ASSERT_TRUE(denied.ok());
  EXPECT_EQ(denied->result, Result::kDenied);
  EXPECT_EQ(denied->review["response"]["allowed"], false);
  EXPECT_EQ(denied->review["response"]["status"]["code"], 403);
  EXPECT_NE(denied->review["response"]["status"]["message"].get<std::string>().find("NCCL_NET"),
            std::string::npos);
}

TEST(AdmissionReviewTest, ExemptOptedOutSkippedAndAllowed) {
  json pod = WellSetPod();
  EXPECT_EQ(Review(ReviewOf(pod), {})->result, Result::kAllowed);
  EXPECT_FALSE(Review(ReviewOf(pod), {})->review["response"].contains("warnings"));
  Trainer(pod)["env"].push_back({{"name", "NCCL_NET"}, {"value", "Socket"}});
  EXPECT_EQ(Review(ReviewOf(pod, "kube-system"), {.enforce = true})->result, Result::kExempt);
  pod["metadata"]["annotations"][kOptOutAnnotation] = "measuring TCP against EFA";
  auto opted = Review(ReviewOf(pod), {.enforce = true});
  EXPECT_EQ(opted->result, Result::kOptedOut);
  EXPECT_EQ(opted->review["response"]["allowed"], true);
  EXPECT_EQ(opted->findings.size(), 1u) << "counted though not shown";
  pod["metadata"]["annotations"][kOptOutAnnotation] = "";
  EXPECT_EQ(Review(ReviewOf(pod), {.enforce = true})->result, Result::kDenied)
      << "an opt-out needs a reason";
  EXPECT_EQ(
      Review(ReviewOf(json::parse(R"({"spec": {"containers": [{"name": "web"}]}})")), {})->result,
      Result::kSkipped);
}

TEST(AdmissionReviewTest, MalformedReviewsAreInvalidArgument) {
  for (const std::string& body : std::vector<std::string>{
           "", "{", "null", "[]", R"({"kind": "AdmissionReview"})",
           R"({"kind": "AdmissionReview", "request": {"object": {}}})", std::string(100, '[')}) {
    EXPECT_EQ(Review(body, {}).status().code(), absl::StatusCode::kInvalidArgument) << body;
  }
}

}  // namespace
}  // namespace efawatch::admission
