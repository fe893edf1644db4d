// SPDX-License-Identifier: Apache-2.0
#include "daemon/rpc/authz.h"

#include "absl/strings/str_cat.h"

namespace efawatch::rpc {
namespace {

constexpr RoleSet kReader = static_cast<RoleSet>(Role::kReader);
constexpr RoleSet kOperator = static_cast<RoleSet>(Role::kOperator);
constexpr RoleSet kAgent = static_cast<RoleSet>(Role::kAgent);

std::string RoleNames(RoleSet roles) {
  std::string out;
  for (auto [bit, name] :
       {std::pair{kReader, "reader"}, {kOperator, "operator"}, {kAgent, "agent"}}) {
    if ((roles & bit) != 0) absl::StrAppend(&out, out.empty() ? "" : " or ", name);
  }
  return out;
}

}  // namespace

const std::array<MethodRule, kMethodCount>& RoleTable() {
  // Agents never need Ping, Bandwidth or RunCollective of a peer: a coordinator only joins,
  // starts and aborts; an operator's collective is aborted by cancelling its RunCollective call.
  static constexpr std::array<MethodRule, kMethodCount> kTable = {{
      {Method::kGetNodeHealth, "GetNodeHealth", kReader | kOperator},
      {Method::kWatchFindings, "WatchFindings", kReader | kOperator},
      {Method::kGetFabricAddress, "GetFabricAddress", kReader | kOperator | kAgent},
      {Method::kPing, "Ping", kOperator},
      {Method::kBandwidth, "Bandwidth", kOperator},
      {Method::kRunCollective, "RunCollective", kOperator},
      {Method::kJoinCollective, "JoinCollective", kAgent},
      {Method::kStartCollective, "StartCollective", kAgent},
      {Method::kAbortCollective, "AbortCollective", kAgent},
      // Reads every NCCL process's libraries and settings: work on the node, so an operator's.
      {Method::kRunDoctor, "RunDoctor", kOperator},
  }};
  return kTable;
}

Authorizer::Authorizer(const AuthzOptions& options) {
  for (auto [list, role] : {std::pair{&options.readers, kReader},
                            {&options.operators, kOperator},
                            {&options.agents, kAgent}}) {
    for (const auto& identity : *list) {
      roles_[identity] |= role;
      enabled_ = true;
    }
  }
}

RoleSet Authorizer::RolesOf(const std::vector<std::string>& identities) const {
  RoleSet roles = 0;
  for (const auto& id : identities) {
    if (auto it = roles_.find(id); it != roles_.end()) roles |= it->second;
  }
  return roles;
}

absl::Status Authorizer::Check(Method method, const std::vector<std::string>& identities,
                               std::chrono::steady_clock::time_point now, bool* log_now) {
  *log_now = false;
  if (!enabled_) return absl::OkStatus();
  const MethodRule& rule = RoleTable()[static_cast<size_t>(method)];
  if ((RolesOf(identities) & rule.roles) != 0) return absl::OkStatus();
  const std::string who = identities.empty() ? std::string("(no identity)") : identities.front();
  {
    std::lock_guard lock(mu_);
    ++denied_[static_cast<size_t>(method)];
    auto key = std::pair{who, method};
    auto it = last_logged_.find(key);
    if (it == last_logged_.end() || now - it->second >= std::chrono::minutes(1)) {
      if (it == last_logged_.end() && last_logged_.size() >= kMaxLogKeys) last_logged_.clear();
      last_logged_[key] = now;
      *log_now = true;
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat(std::string(rule.name), " needs the ", RoleNames(rule.roles),
                   " role; certificate identity ", who, " has none of them (docs/security.md)"));
}

std::map<std::string, uint64_t> Authorizer::Denials() const {
  std::map<std::string, uint64_t> out;
  std::lock_guard lock(mu_);
  for (const auto& rule : RoleTable()) {
    out[std::string(rule.name)] = denied_[static_cast<size_t>(rule.method)];
  }
  return out;
}

absl::Status DenialCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                      common::MetricSink& sink) {
  for (const auto& [method, n] : authz_.Denials()) {
    sink.Add(metrics::M::kGrpcDeniedTotal, {{"method", method}}, static_cast<double>(n));
  }
  return absl::OkStatus();
}

}  // namespace efawatch::rpc
