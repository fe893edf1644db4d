// SPDX-License-Identifier: Apache-2.0
// Runs every fixture under tests/fixtures/nccl (plain, and re-wrapped as CRI and docker
// json-file records) and compares the summary with EXPECTED.tsv.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "tests/unit/nccl/nccl_test_util.h"

namespace efawatch::nccl {
namespace {

using testing::AnalyzeFile;
using testing::FixtureDir;
using testing::ReadTsv;
using testing::Wrap;

std::vector<std::map<std::string, std::string>> Expected() {
  auto rows = ReadTsv(FixtureDir() + "/EXPECTED.tsv");
  std::vector<std::map<std::string, std::string>> out;
  for (size_t i = 1; i < rows.size(); ++i) {
    std::map<std::string, std::string> m;
    for (size_t c = 0; c < rows[0].size(); ++c)
      m[rows[0][c]] = c < rows[i].size() ? rows[i][c] : "";
    out.push_back(m);
  }
  return out;
}

void CheckRow(const std::map<std::string, std::string>& row, Wrap wrap) {
  const std::string path = FixtureDir() + "/" + row.at("file");
  SCOPED_TRACE(path + " wrap=" + std::to_string(static_cast<int>(wrap)));
  Report r = AnalyzeFile(path, wrap);
  const Summary& s = r.summary;
  EXPECT_EQ(s.verdict.tcp_fallback, row.at("tcp_fallback") == "yes");
  EXPECT_EQ(s.verdict.loopback_misuse, row.at("loopback_misuse") == "yes");
  EXPECT_EQ(s.verdict.net_plugin_missing, row.at("net_plugin_missing") == "yes");
  EXPECT_EQ(s.verdict.gdr_disabled, row.at("gdr_disabled") == "yes");
  EXPECT_EQ(s.verdict.transport, row.at("inter_node_transport"));
  EXPECT_EQ(s.verdict.ofi_provider, row.at("ofi_provider"));
  EXPECT_EQ(NameOf(s.verdict.family), row.at("network_family"));
  EXPECT_EQ(s.verdict.nccl_version, row.at("nccl_version"));
  EXPECT_EQ(s.headline.rfind(row.at("verdict_prefix"), 0), 0u) << s.headline;
  int exit_code = r.MaxSeverity() == Severity::kCritical ? 1 : 0;
  EXPECT_EQ(exit_code, std::stoi(row.at("exit")));
}

TEST(NcclFixturesTest, EveryFixtureHasAnExpectation) {
  std::set<std::string> listed;
  for (const auto& row : Expected()) listed.insert(row.at("file"));
  ASSERT_FALSE(listed.empty());
  for (const auto& e : std::filesystem::directory_iterator(FixtureDir())) {
    if (e.path().extension() == ".log") {
      EXPECT_TRUE(listed.count(e.path().filename().string())) << e.path();
    }
  }
}

TEST(NcclFixturesTest, PlainMatchesExpected) {
  for (const auto& row : Expected()) CheckRow(row, Wrap::kPlain);
}

TEST(NcclFixturesTest, CriWrappedMatchesExpected) {
  for (const auto& row : Expected()) CheckRow(row, Wrap::kCri);
}

TEST(NcclFixturesTest, DockerJsonWrappedMatchesExpected) {
  for (const auto& row : Expected()) CheckRow(row, Wrap::kDockerJson);
}

// What consoles, launchers and shippers put around a line (timestamps, pod and service names,
// MPI tags, a syslog header, a byte-order mark) changes no verdict.
TEST(NcclFixturesTest, EveryEnvelopeMatchesExpected) {
  for (const auto& [wrap, name] : testing::AllWraps()) {
    SCOPED_TRACE(name);
    for (const auto& row : Expected()) CheckRow(row, wrap);
  }
}

}  // namespace
}  // namespace efawatch::nccl
