// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/doctor/doctor.h"

// The admission webhook's judgement of a pod, before it runs: which pods it looks at, the rules
// (doctor's settings table, lib/doctor/settings_rules.h, plus the pod-shape rules here), and
// the AdmissionReview v1 answer. Plain functions over JSON values: no I/O, thread-safe. The
// HTTPS edge (daemon/admission) parses nothing and decides nothing itself.
namespace efawatch::admission {

/// The resource the EFA device plugin advertises.
inline constexpr char kEfaResource[] = "vpc.amazonaws.com/efa";
/// A pod annotation that skips the rules; its value is the reason, and must not be empty.
inline constexpr char kOptOutAnnotation[] = "efawatch.io/admission-opt-out";
/// The namespace label under which findings deny (the webhook sees it through the second
/// webhook entry's namespaceSelector, which calls /validate-pods-enforce: docs/admission.md).
inline constexpr char kEnforceLabel[] = "efawatch.io/enforce";
/// The API server keeps warnings short: longer ones may be truncated (Kubernetes documents 256
/// characters as the point past which it may cut). Ours are cut here, the fix kept first.
inline constexpr size_t kMaxWarningChars = 256;

/// One rule that a pod breaks.
struct Finding {
  std::string rule;       ///< "settings.nccl_net" (doctor's id) or "pod.efa_resource_missing"
  doctor::Status status;  ///< kWarn or kFail
  std::string container;  ///< the container it is about; "" for the pod as a whole
  std::string evidence;   ///< the variable and its value, or the resource and its count
  std::string summary;    ///< what goes wrong
  std::string fix;        ///< one line: what to change

  /// "[rule] container "c": EVIDENCE: fix: FIX (SUMMARY)", at most kMaxWarningChars.
  std::string Warning() const;
};

/// Whether a pod is one the webhook judges: it requests vpc.amazonaws.com/efa, targets an EFA
/// instance type (node.kubernetes.io/instance-type in nodeSelector or required node affinity),
/// or sets NCCL_* or FI_* variables in any container or init container.
bool Judged(const nlohmann::json& pod);

/// The rules `pod` (a v1 Pod object) breaks, in a stable order. Settings rows come from doctor's
/// table, per container that runs NCCL (sets NCCL_/FI_ variables or requests EFA); on a pod
/// meant for EFA WARN and FAIL rows count, elsewhere only FAILs (TCP is right off EFA).
std::vector<Finding> JudgePod(const nlohmann::json& pod);

/// What the webhook did with one review.
enum class Result {
  kAllowed,   ///< judged, nothing found
  kWarned,    ///< allowed with warnings
  kDenied,    ///< refused (--enforce or the namespace's label)
  kSkipped,   ///< not a pod the webhook judges (see Judged), or not a pod at all
  kExempt,    ///< in an exempt namespace
  kOptedOut,  ///< the pod's opt-out annotation, with a reason
};
std::string_view ResultName(Result r);  // allowed, warned, denied, skipped, exempt, opted_out

struct Policy {
  bool enforce = false;  ///< findings deny instead of warning
  std::set<std::string> exempt_namespaces = {"kube-system", "efawatch"};
};

struct Decision {
  Result result = Result::kSkipped;
  std::vector<Finding> findings;  ///< also for an opted-out pod (counted, not shown)
  nlohmann::json review;          ///< the AdmissionReview v1 to answer with
};

/// Reads an AdmissionReview v1 and decides. InvalidArgument (the edge answers 400) for a body
/// that is not JSON or not an AdmissionReview with a request and its uid.
absl::StatusOr<Decision> Review(std::string_view body, const Policy& policy);

}  // namespace efawatch::admission
