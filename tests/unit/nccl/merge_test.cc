// SPDX-License-Identifier: Apache-2.0
// Analyzer::Merge must give the report that feeding the whole input to one analyzer gives.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "lib/nccl/report_json.h"
#include "tests/unit/nccl/nccl_test_util.h"

namespace efawatch::nccl {
namespace {

using testing::FixtureDir;
using testing::ReadLines;
using testing::SharedDir;

void CheckSplitEverywhere(const std::string& path) {
  SCOPED_TRACE(path);
  std::vector<std::string> lines = ReadLines(path);
  Analyzer whole;
  for (size_t i = 0; i < lines.size(); ++i) whole.Feed(path, i + 1, lines[i]);
  const std::string want = ReportToJson(whole.Snapshot()).dump();
  for (size_t cut = 0; cut <= lines.size(); cut += std::max<size_t>(1, lines.size() / 7)) {
    Analyzer first, second;
    for (size_t i = 0; i < cut; ++i) first.Feed(path, i + 1, lines[i]);
    for (size_t i = cut; i < lines.size(); ++i) second.Feed(path, i - cut + 1, lines[i]);
    first.Merge(std::move(second), cut);
    nlohmann::json got = ReportToJson(first.Snapshot());
    nlohmann::json exp = nlohmann::json::parse(want);
    EXPECT_EQ(got["summary"], exp["summary"]) << "cut at " << cut;
    EXPECT_EQ(got["findings"], exp["findings"]) << "cut at " << cut;
    EXPECT_EQ(got["processes"].size(), exp["processes"].size()) << "cut at " << cut;
  }
}

TEST(AnalyzerMergeTest, SplitFixturesGiveTheSameReport) {
  for (const auto& e : std::filesystem::directory_iterator(FixtureDir())) {
    if (e.path().extension() == ".log") CheckSplitEverywhere(e.path().string());
  }
}

TEST(AnalyzerMergeTest, SplitCorpusGivesTheSameReport) {
  const std::string dir = SharedDir() + "/nccl-logs";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "shared NCCL corpus not found at " << dir;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".log") CheckSplitEverywhere(e.path().string());
  }
}

}  // namespace
}  // namespace efawatch::nccl
