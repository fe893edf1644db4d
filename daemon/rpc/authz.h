// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "lib/common/collector.h"

namespace efawatch::rpc {

/// What a caller may do, from the identity in its client certificate (docs/security.md):
/// readers look, operators run probes and collectives, agents take part in other agents' work.
enum class Role : uint8_t { kReader = 1, kOperator = 2, kAgent = 4 };
using RoleSet = uint8_t;  ///< Bits of Role.

/// Every method of efawatch.v1.Agent: the edge names the one it serves, the table gives its roles.
enum class Method : uint8_t {
  kGetNodeHealth,
  kWatchFindings,
  kGetFabricAddress,
  kPing,
  kBandwidth,
  kRunCollective,
  kJoinCollective,
  kStartCollective,
  kAbortCollective,
  kRunDoctor,
};
inline constexpr size_t kMethodCount = 10;

struct MethodRule {
  Method method;
  std::string_view name;  ///< The RPC's name in efawatch.v1.Agent (the metric's label).
  RoleSet roles;
};

/// The per-RPC role table, one row per Method in enum order. Operators may also read (they need
/// the status of what they probe); GetFabricAddress is open to every role because agents ask it
/// of each other before a probe and readers show it.
const std::array<MethodRule, kMethodCount>& RoleTable();

/// Certificate identities (DNS/URI subject alternative names, or the common name) per role.
struct AuthzOptions {
  std::vector<std::string> readers;
  std::vector<std::string> operators;
  std::vector<std::string> agents;
};

/// Decides and accounts for per-call authorization. Disabled (every call allowed) when no
/// identity is configured for any role: plaintext on loopback, or TLS without a role table.
/// Thread-safe: gRPC threads call Check concurrently.
class Authorizer {
 public:
  explicit Authorizer(const AuthzOptions& options);

  bool enabled() const { return enabled_; }

  /// OK when one of `identities` (a caller's certificate names) holds a role the method allows,
  /// else PERMISSION_DENIED naming the method and the missing role; a denial is counted.
  /// `log_now` is set when this identity and method were not logged in the last minute, so the
  /// edge logs a flood of denials once a minute (`now`: a steady clock reading).
  absl::Status Check(Method method, const std::vector<std::string>& identities,
                     std::chrono::steady_clock::time_point now, bool* log_now);

  /// Denials so far per method (the table's name), methods never denied included as 0.
  std::map<std::string, uint64_t> Denials() const;

 private:
  RoleSet RolesOf(const std::vector<std::string>& identities) const;

  static constexpr size_t kMaxLogKeys = 1024;  // bounds the memory an identity flood costs

  std::map<std::string, RoleSet> roles_;  // identity -> roles; immutable after construction
  bool enabled_ = false;
  mutable std::mutex mu_;
  std::array<uint64_t, kMethodCount> denied_{};  // guarded by mu_
  std::map<std::pair<std::string, Method>, std::chrono::steady_clock::time_point>
      last_logged_;  // guarded by mu_
};

/// efawatch_grpc_denied_total{method} from an Authorizer, at scrape time. Every method's series
/// is written (0 before the first denial) so rate() sees the first one.
class DenialCollector final : public common::Collector {
 public:
  explicit DenialCollector(const Authorizer& authz) : authz_(authz) {}
  std::string_view Name() const override { return "grpc"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  const Authorizer& authz_;
};

}  // namespace efawatch::rpc
