// SPDX-License-Identifier: Apache-2.0
#include "lib/common/finding_kind.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "lib/common/finding.h"

namespace efawatch::common {
namespace {

namespace fs = std::filesystem;

TEST(FindingKindTest, EveryKindHasAName) {
  for (size_t i = 0; i < kFindingKindCount; ++i) {
    const auto k = static_cast<FindingKind>(i);
    EXPECT_FALSE(FindingKindName(k).empty()) << "kind " << i << " has no name";
    // FindingKindName indexes the table: the table must be in enum order.
    EXPECT_EQ(kFindingKindNames[i].first, k) << "table row " << i << " is out of enum order";
  }
}

TEST(FindingKindTest, NoTwoKindsShareAName) {
  std::set<std::string_view> seen;
  for (const auto& [kind, name] : kFindingKindNames) {
    EXPECT_TRUE(seen.insert(name).second) << name << " names two kinds";
  }
}

TEST(FindingKindTest, ParsesEveryNameBackToItsKind) {
  for (const auto& [kind, name] : kFindingKindNames) {
    EXPECT_EQ(ParseFindingKind(name), kind) << name;
  }
  EXPECT_EQ(ParseFindingKind("efa_rx_drops"), std::nullopt);
  EXPECT_EQ(ParseFindingKind(""), std::nullopt);
}

// The names are the wire (metric labels, gRPC, checkpoint JSON, alerts): these must not change.
TEST(FindingKindTest, KeepsTheWireNames) {
  EXPECT_EQ(FindingKindName(FindingKind::kTcpFallback), "tcp_fallback");
  EXPECT_EQ(FindingKindName(FindingKind::kEfaAdminQueueStuck), "efa_admin_queue_stuck");
  EXPECT_EQ(FindingKindName(FindingKind::kMeshSelfSuspect), "mesh_self_suspect");
  EXPECT_EQ(FindingKindName(FindingKind::kDoctorCheckFailed), "doctor_check_failed");
  EXPECT_EQ(EfaCounterRiseKind("rx_drops"), "efa_rx_drops");
}

TEST(FindingKindTest, FindingIsMatchesOnlyItsKind) {
  Finding f;
  f.kind = KindName(FindingKind::kEfaDeviceGone);
  EXPECT_TRUE(f.Is(FindingKind::kEfaDeviceGone));
  EXPECT_FALSE(f.Is(FindingKind::kEfaDevicesMissing));
  f.kind = EfaCounterRiseKind("rx_drops");
  for (const auto& [kind, name] : kFindingKindNames) EXPECT_FALSE(f.Is(kind)) << name;
}

// A kind's name as a string literal outside lib/ is a second spelling that the table does not
// see: the code must name the kind (FindingKind) instead. Tests are exempt: they pin the wire.
std::vector<std::string> LiteralKindsIn(const fs::path& file) {
  std::vector<std::string> hits;
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    // Comments may name a kind for people.
    if (auto c = line.find("//"); c != std::string::npos) line.resize(c);
    for (const auto& [kind, name] : kFindingKindNames) {
      if (line.find("\"" + std::string(name) + "\"") != std::string::npos) {
        hits.push_back(file.string() + ":" + std::to_string(n) + ": \"" + std::string(name) + "\"");
      }
    }
  }
  return hits;
}

// cli/status.cc lists the verdict's JSON keys, some of which are spelled like kinds
// ("tcp_fallback" is also a verdict field): those are field names, not finding kinds.
bool Exempt(const std::string& hit) {
  return hit.find("cli/status.cc:") != std::string::npos &&
         (hit.ends_with("\"tcp_fallback\"") || hit.ends_with("\"loopback_misuse\"") ||
          hit.ends_with("\"net_plugin_missing\"") || hit.ends_with("\"gdr_disabled\""));
}

TEST(FindingKindTest, NoKindIsSpelledAsALiteralOutsideLib) {
  const char* root = std::getenv("EFAWATCH_SOURCE_DIR");
  if (root == nullptr) GTEST_SKIP() << "EFAWATCH_SOURCE_DIR is not set (run under ctest)";
  std::vector<std::string> hits;
  size_t files = 0;
  for (const char* dir : {"daemon", "cli", "probes", "proto"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(root) / dir)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      ++files;
      for (std::string& h : LiteralKindsIn(e.path())) {
        if (!Exempt(h)) hits.push_back(std::move(h));
      }
    }
  }
  EXPECT_GT(files, 50u) << "the source tree was not found under " << root;
  for (const std::string& h : hits) ADD_FAILURE() << h << ": use common::FindingKind";
}

TEST(FindingKindTest, TheLiteralCheckSeesALiteral) {
  const fs::path file = fs::path(::testing::TempDir()) / "finding_kind_probe.cc";
  std::ofstream(file) << "// \"tcp_fallback\" in a comment is fine\n"
                      << "if (f.kind == \"mesh_self_suspect\") {}\n";
  const auto hits = LiteralKindsIn(file);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_TRUE(hits[0].ends_with(":2: \"mesh_self_suspect\"")) << hits[0];
  fs::remove(file);
}

}  // namespace
}  // namespace efawatch::common
