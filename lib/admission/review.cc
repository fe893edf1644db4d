// SPDX-License-Identifier: Apache-2.0
#include "lib/admission/review.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/common/instance_types.h"
#include "lib/doctor/settings_rules.h"

namespace efawatch::admission {
namespace {

using nlohmann::json;

constexpr char kInstanceTypeLabel[] = "node.kubernetes.io/instance-type";
constexpr char kBetaInstanceTypeLabel[] = "beta.kubernetes.io/instance-type";
// Deeper JSON than any Pod is refused before parsing: a small body of nested brackets would
// otherwise cost a deep recursion when the parsed value is destroyed (nlohmann::json before
// 3.10 frees recursively). A Pod is about 10 levels deep; KubeRay's and the Training
// Operator's are under 20.
constexpr int kMaxDepth = 64;

// A member of an object, or null when `j` is not an object or lacks it.
const json& At(const json& j, std::string_view key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Str(const json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

bool TooDeep(std::string_view body) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

// An extended resource's quantity: a plain count (Kubernetes refuses fractions for them).
// nullopt for anything else; a request we cannot read is taken as present, count unknown.
std::optional<unsigned> Count(const json& q) {
  if (q.is_number_integer() && q.get<int64_t>() >= 0 && q.get<int64_t>() <= 1 << 20) {
    return static_cast<unsigned>(q.get<int64_t>());
  }
  if (!q.is_string()) return std::nullopt;
  const std::string s = q.get<std::string>();
  unsigned n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return n;
}

// What one container asks for and sets, as the rules need it.
struct Container {
  std::string name;
  bool init = false;
  doctor::SettingsEnv env;        // literal values
  std::set<std::string> hidden;   // set from a ConfigMap or Secret: value unknown
  bool sets_fabric_vars = false;  // any NCCL_* or FI_* variable
  bool sets_nccl_vars = false;    // any NCCL_* variable
  unsigned efa = 0;               // vpc.amazonaws.com/efa; 1 when present but unreadable
  bool efa_unreadable = false;
  unsigned accelerators = 0;  // nvidia.com/gpu or aws.amazon.com/neuron
  bool ipc_lock = false;      // IPC_LOCK added, or privileged
};

unsigned Resource(const json& resources, const char* name, bool* unreadable) {
  // Extended resources are set as limits (requests, when set, must equal them).
  for (const char* side : {"limits", "requests"}) {
    const json& q = At(At(resources, side), name);
    if (q.is_null()) continue;
    const auto n = Count(q);
    if (!n && unreadable != nullptr) *unreadable = true;
    return n.value_or(1);
  }
  return 0;
}

Container ReadContainer(const json& c, bool init) {
  Container out;
  out.name = Str(At(c, "name"));
  out.init = init;
  const json& env = At(c, "env");
  if (env.is_array()) {
    for (const json& e : env) {
      const std::string name = Str(At(e, "name"));
      if (name.empty()) continue;
      if (name.starts_with("NCCL_") || name.starts_with("FI_")) out.sets_fabric_vars = true;
      if (name.starts_with("NCCL_")) out.sets_nccl_vars = true;
      const json& value = At(e, "value");
      if (!At(e, "valueFrom").is_null()) {
        out.hidden.insert(name);
        out.env.erase(name);
      } else {
        out.hidden.erase(name);
        out.env[name] = Str(value);  // a later entry of the same name wins, as in the kubelet
      }
    }
  }
  const json& resources = At(c, "resources");
  out.efa = Resource(resources, kEfaResource, &out.efa_unreadable);
  out.accelerators = std::max(Resource(resources, "nvidia.com/gpu", nullptr),
                              Resource(resources, "aws.amazon.com/neuron", nullptr));
  const json& security = At(c, "securityContext");
  out.ipc_lock = At(security, "privileged") == json(true);
  const json& add = At(At(security, "capabilities"), "add");
  if (add.is_array()) {
    for (const json& cap : add) {
      const std::string s = Str(cap);
      if (s == "IPC_LOCK" || s == "CAP_IPC_LOCK" || s == "ALL") out.ipc_lock = true;
    }
  }
  return out;
}

std::vector<Container> ReadContainers(const json& pod) {
  std::vector<Container> out;
  const json& spec = At(pod, "spec");
  for (const auto& [key, init] : {std::pair{"initContainers", true}, {"containers", false}}) {
    const json& list = At(spec, key);
    if (!list.is_array()) continue;
    for (const json& c : list) out.push_back(ReadContainer(c, init));
  }
  return out;
}

// The instance types the pod may land on: nodeSelector, or the values of required node
// affinity terms with operator In on the instance-type label. Empty: unconstrained.
std::vector<std::string> InstanceTypes(const json& pod) {
  std::vector<std::string> out;
  const json& spec = At(pod, "spec");
  for (const char* label : {kInstanceTypeLabel, kBetaInstanceTypeLabel}) {
    if (std::string t = Str(At(At(spec, "nodeSelector"), label)); !t.empty()) {
      out.push_back(std::move(t));
    }
  }
  const json& terms = At(At(At(At(spec, "affinity"), "nodeAffinity"),
                            "requiredDuringSchedulingIgnoredDuringExecution"),
                         "nodeSelectorTerms");
  if (terms.is_array()) {
    for (const json& term : terms) {
      const json& exprs = At(term, "matchExpressions");
      if (!exprs.is_array()) continue;
      for (const json& e : exprs) {
        const std::string key = Str(At(e, "key"));
        if ((key != kInstanceTypeLabel && key != kBetaInstanceTypeLabel) ||
            Str(At(e, "operator")) != "In" || !At(e, "values").is_array()) {
          continue;
        }
        for (const json& v : At(e, "values")) {
          if (std::string t = Str(v); !t.empty()) out.push_back(std::move(t));
        }
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The pod's effective request, as the scheduler counts it: the larger of the largest init
// container's and the sum of the app containers' (init containers run one after another).
unsigned Effective(const std::vector<Container>& cs, unsigned Container::*field) {
  unsigned init = 0, app = 0;
  for (const Container& c : cs) {
    if (c.init) {
      init = std::max(init, c.*field);
    } else {
      app += c.*field;
    }
  }
  return std::max(init, app);
}

struct PodFacts {
  std::vector<Container> containers;
  std::vector<std::string> types;      // candidate instance types
  std::vector<std::string> efa_types;  // those with EFA
  unsigned efa = 0;
  unsigned accelerators = 0;
  bool efa_unreadable = false;
  bool sets_fabric_vars = false;
  bool wants_efa_provider = false;  // FI_PROVIDER=efa somewhere
};

PodFacts Facts(const json& pod) {
  PodFacts f;
  f.containers = ReadContainers(pod);
  f.types = InstanceTypes(pod);
  for (const std::string& t : f.types) {
    if (common::ExpectedEfaDevices(t) > 0) f.efa_types.push_back(t);
  }
  for (const Container& c : f.containers) {
    f.efa_unreadable = f.efa_unreadable || c.efa_unreadable;
    f.sets_fabric_vars = f.sets_fabric_vars || c.sets_fabric_vars;
    const auto it = c.env.find("FI_PROVIDER");
    f.wants_efa_provider = f.wants_efa_provider || (it != c.env.end() && it->second == "efa");
  }
  f.efa = Effective(f.containers, &Container::efa);
  f.accelerators = Effective(f.containers, &Container::accelerators);
  return f;
}

void SettingsFindings(const PodFacts& f, std::vector<Finding>* out) {
  const bool efa = f.efa > 0 || !f.efa_types.empty();
  for (const Container& c : f.containers) {
    if (!c.sets_fabric_vars && c.efa == 0) continue;  // touches neither NCCL nor libfabric
    for (const doctor::SettingsRule& rule : doctor::SettingsRules()) {
      if (!rule.admission) continue;
      // An NCCL row speaks to a container that runs NCCL (sets NCCL_ variables, or has EFA
      // devices to run it on): an init container that only sets FI_PROVIDER is not told to set
      // NCCL_DEBUG.
      const bool nccl_row = std::ranges::all_of(
          rule.variables, [](std::string_view v) { return v.starts_with("NCCL_"); });
      if (nccl_row && !c.sets_nccl_vars && c.efa == 0) continue;
      if (std::ranges::any_of(rule.variables,
                              [&](std::string_view v) { return c.hidden.count(std::string(v)); })) {
        continue;
      }
      doctor::Check check = rule.judge(c.env, {.efa = efa});
      const bool counts =
          check.status == doctor::Status::kFail || (efa && check.status == doctor::Status::kWarn);
      if (!counts) continue;
      out->push_back({.rule = check.id,
                      .status = check.status,
                      .container = c.name,
                      .evidence = check.evidence,
                      .summary = check.summary,
                      .fix = check.fix});
    }
  }
}

void PodFindings(const PodFacts& f, std::vector<Finding>* out) {
  const std::string types = absl::StrJoin(f.efa_types, ", ");
  // No EFA requested, on an EFA type or with FI_PROVIDER=efa, by a pod that runs NCCL: the
  // device plugin gives it no device and NCCL falls back to TCP (HyperPod's generated jobs,
  // Kubeflow Trainer's resourcesPerNode replacing a container's resources).
  if (f.efa == 0 && f.sets_fabric_vars && (!f.efa_types.empty() || f.wants_efa_provider)) {
    out->push_back(
        {.rule = "pod.efa_resource_missing",
         .status = doctor::Status::kFail,
         .container = "",
         .evidence = absl::StrCat(kEfaResource, " not requested",
                                  types.empty() ? ", FI_PROVIDER=efa" : ", targets " + types),
         .summary =
             "the pod runs NCCL on an EFA node without EFA devices: its traffic goes over TCP",
         .fix = absl::StrCat("add resources.limits ", kEfaResource,
                             " (the type's count) to the training container")});
  }
  // Fewer EFA devices than the type has, by a pod that takes every accelerator of the node:
  // nobody else can use the rest, and the job runs on a fraction of the fabric.
  if (f.efa > 0 && !f.efa_unreadable && !f.efa_types.empty() &&
      f.efa_types.size() == f.types.size()) {
    unsigned fewest = ~0u, gpus = ~0u;
    for (const std::string& t : f.efa_types) {
      fewest = std::min(fewest, common::ExpectedEfaDevices(t));
      const unsigned a = common::AcceleratorsPerNode(t);
      gpus = std::min(gpus, a == 0 ? ~0u : a);
    }
    if (f.efa < fewest && gpus != ~0u && f.accelerators >= gpus) {
      out->push_back(
          {.rule = "pod.efa_devices_partial",
           .status = doctor::Status::kWarn,
           .container = "",
           .evidence = absl::StrCat(kEfaResource, "=", f.efa, " of ", fewest, " on ", types),
           .summary = "the pod takes the whole node but only part of its EFA bandwidth",
           .fix = absl::StrCat("request ", kEfaResource, ": ", fewest)});
    }
  }
  // EFA registers memory the kernel must not page out; where the runtime limits memlock, that
  // fails (reg_mr_err) without IPC_LOCK.
  for (const Container& c : f.containers) {
    if (c.efa == 0 || c.ipc_lock) continue;
    out->push_back({.rule = "pod.ipc_lock_missing",
                    .status = doctor::Status::kWarn,
                    .container = c.name,
                    .evidence = absl::StrCat(kEfaResource, " without IPC_LOCK"),
                    .summary = "EFA memory registration fails where the runtime limits memlock",
                    .fix = "add IPC_LOCK to securityContext.capabilities.add"});
  }
}

json Response(const std::string& uid, bool allowed) {
  json r = {{"uid", uid}, {"allowed", allowed}};
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"response", r}};
}

}  // namespace

std::string Finding::Warning() const {
  std::string w =
      absl::StrCat("efawatch [", rule, "]",
                   container.empty() ? "" : absl::StrCat(" container \"", container, "\""), ": ",
                   evidence, ": fix: ", fix, " (", summary, ")");
  if (w.size() > kMaxWarningChars) {
    w.resize(kMaxWarningChars - 3);
    w += "...";
  }
  return w;
}

bool Judged(const json& pod) {
  const PodFacts f = Facts(pod);
  return f.efa > 0 || f.efa_unreadable || !f.efa_types.empty() || f.sets_fabric_vars;
}

std::vector<Finding> JudgePod(const json& pod) {
  const PodFacts f = Facts(pod);
  std::vector<Finding> out;
  PodFindings(f, &out);
  SettingsFindings(f, &out);
  return out;
}

std::string_view ResultName(Result r) {
  switch (r) {
    case Result::kAllowed:
      return "allowed";
    case Result::kWarned:
      return "warned";
    case Result::kDenied:
      return "denied";
    case Result::kSkipped:
      return "skipped";
    case Result::kExempt:
      return "exempt";
    case Result::kOptedOut:
      return "opted_out";
  }
  return "unknown";
}

absl::StatusOr<Decision> Review(std::string_view body, const Policy& policy) {
  if (TooDeep(body)) return absl::InvalidArgumentError("JSON nested too deep for a pod");
  const json review = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return absl::InvalidArgumentError("not JSON");
  const json& request = At(review, "request");
  const std::string uid = Str(At(request, "uid"));
  if (Str(At(review, "kind")) != "AdmissionReview" || !request.is_object() || uid.empty()) {
    return absl::InvalidArgumentError("not an AdmissionReview with a request and its uid");
  }
  Decision d;
  const json& object = At(request, "object");
  const json& kind = At(request, "kind");
  const std::string ns = Str(At(request, "namespace"));
  if (Str(At(kind, "kind")) != "Pod" || !Str(At(kind, "group")).empty() || !object.is_object()) {
    d.result = Result::kSkipped;
  } else if (policy.exempt_namespaces.count(ns) > 0) {
    d.result = Result::kExempt;
  } else if (!Judged(object)) {
    d.result = Result::kSkipped;
  } else {
    d.findings = JudgePod(object);
    const std::string reason =
        Str(At(At(At(object, "metadata"), "annotations"), kOptOutAnnotation));
    if (!reason.empty()) {
      d.result = Result::kOptedOut;
    } else if (d.findings.empty()) {
      d.result = Result::kAllowed;
    } else {
      d.result = policy.enforce ? Result::kDenied : Result::kWarned;
    }
  }
  d.review = Response(uid, d.result != Result::kDenied);
  json& response = d.review["response"];
  if (d.result == Result::kWarned) {
    json warnings = json::array();
    for (const Finding& f : d.findings) warnings.push_back(f.Warning());
    response["warnings"] = std::move(warnings);
  } else if (d.result == Result::kDenied) {
    std::vector<std::string> lines;
    for (const Finding& f : d.findings) lines.push_back(f.Warning());
    response["status"] = {
        {"code", 403},
        {"reason", "Forbidden"},
        {"message", absl::StrCat("efawatch: this pod would not use the EFA "
                                 "fabric as set (to opt out, annotate it ",
                                 kOptOutAnnotation, ": <reason>): ", absl::StrJoin(lines, "; "))}};
  }
  return d;
}

}  // namespace efawatch::admission
