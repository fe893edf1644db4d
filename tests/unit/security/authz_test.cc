// SPDX-License-Identifier: Apache-2.0
// The per-RPC role table and the authorizer that applies it.
#include "daemon/rpc/authz.h"

#include <gtest/gtest.h>

#include <set>

namespace efawatch::rpc {
namespace {

using std::chrono::steady_clock;

AuthzOptions Roles() {
  return {.readers = {"efawatch-reader"},
          .operators = {"efawatch-operator"},
          .agents = {"efawatch-agent"}};
}

TEST(AuthzTest, TableHasOneRowPerMethodInEnumOrder) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kMethodCount; ++i) {
    EXPECT_EQ(static_cast<size_t>(RoleTable()[i].method), i);
    EXPECT_NE(RoleTable()[i].roles, 0) << RoleTable()[i].name << " would be allowed to nobody";
    names.insert(RoleTable()[i].name);
  }
  EXPECT_EQ(names.size(), kMethodCount);
}

TEST(AuthzTest, EachRoleGetsExactlyTheMethodsOfTheTable) {
  const std::map<std::string, std::set<std::string>> allowed = {
      {"efawatch-reader", {"GetNodeHealth", "WatchFindings", "GetFabricAddress"}},
      {"efawatch-operator",
       {"GetNodeHealth", "WatchFindings", "GetFabricAddress", "Ping", "Bandwidth", "RunCollective",
        "RunDoctor"}},
      {"efawatch-agent",
       {"GetFabricAddress", "JoinCollective", "StartCollective", "AbortCollective"}},
      {"someone-else", {}},
  };
  Authorizer authz(Roles());
  ASSERT_TRUE(authz.enabled());
  for (const auto& [identity, methods] : allowed) {
    for (const auto& rule : RoleTable()) {
      bool log_now = false;
      const absl::Status st = authz.Check(rule.method, {identity}, steady_clock::now(), &log_now);
      if (methods.contains(std::string(rule.name))) {
        EXPECT_TRUE(st.ok()) << identity << " " << rule.name << ": " << st;
      } else {
        EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << identity << " " << rule.name;
      }
    }
  }
}

TEST(AuthzTest, AnyOfTheCertificateNamesMayHoldTheRole) {
  Authorizer authz(Roles());
  bool log_now = false;
  EXPECT_TRUE(authz
                  .Check(Method::kPing, {"node-7.example", "efawatch-operator"},
                         steady_clock::now(), &log_now)
                  .ok());
}

TEST(AuthzTest, DisabledWithoutIdentitiesAllowsEverything) {
  Authorizer authz(AuthzOptions{});
  EXPECT_FALSE(authz.enabled());
  bool log_now = true;
  EXPECT_TRUE(authz.Check(Method::kJoinCollective, {}, steady_clock::now(), &log_now).ok());
  EXPECT_FALSE(log_now);
}

TEST(AuthzTest, DenialsAreCountedPerMethodAndLoggedOncePerMinutePerIdentity) {
  Authorizer authz(Roles());
  const auto t0 = steady_clock::time_point{};
  bool log_now = false;
  auto st = authz.Check(Method::kPing, {"efawatch-reader"}, t0, &log_now);
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(st.message().find("Ping needs the operator role"), std::string_view::npos) << st;
  EXPECT_TRUE(log_now);
  (void)authz.Check(Method::kPing, {"efawatch-reader"}, t0 + std::chrono::seconds(59), &log_now);
  EXPECT_FALSE(log_now);
  (void)authz.Check(Method::kPing, {"efawatch-agent"}, t0 + std::chrono::seconds(59), &log_now);
  EXPECT_TRUE(log_now) << "another identity is logged on its own";
  (void)authz.Check(Method::kPing, {"efawatch-reader"}, t0 + std::chrono::seconds(60), &log_now);
  EXPECT_TRUE(log_now);
  (void)authz.Check(Method::kJoinCollective, {}, t0, &log_now);

  const auto denials = authz.Denials();
  EXPECT_EQ(denials.size(), kMethodCount);
  EXPECT_EQ(denials.at("Ping"), 4u);
  EXPECT_EQ(denials.at("JoinCollective"), 1u);
  EXPECT_EQ(denials.at("GetNodeHealth"), 0u);
}

}  // namespace
}  // namespace efawatch::rpc
