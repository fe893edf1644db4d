// SPDX-License-Identifier: Apache-2.0
#include "lib/common/metric_table.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "tests/support/subprocess.h"

namespace efawatch::metrics {
namespace {

TEST(MetricTableTest, NamesFollowPrometheusConventions) {
  const std::regex name_re("^efawatch_[a-z0-9_]+$");
  for (const auto& d : MetricTable()) {
    const std::string name(d.name);
    EXPECT_TRUE(std::regex_match(name, name_re)) << name;
    EXPECT_EQ(d.type == MetricType::kCounter, name.ends_with("_total")) << name;
    EXPECT_FALSE(d.help.empty()) << name;
    std::set<std::string_view> labels(d.labels.begin(), d.labels.end());
    EXPECT_EQ(labels.size(), d.labels.size()) << name << " repeats a label";
  }
}

TEST(MetricTableTest, FindsDeclaredMetricsOnly) {
  ASSERT_NE(FindMetric("efawatch_build_info"), nullptr);
  EXPECT_EQ(FindMetric("efawatch_build_info")->labels.size(), 3u);
  EXPECT_EQ(FindMetric("efawatch_no_such_metric"), nullptr);
}

TEST(MetricTableTest, DebugOnlyMetricsAreDeclaredOnce) {
  std::set<std::string_view> seen;
  for (const auto& g : DebugOnlyMetrics()) {
    EXPECT_FALSE(g.why.empty());
    for (auto n : g.names) {
      EXPECT_NE(FindMetric(n), nullptr) << n << " is debug-only but not in the table";
      EXPECT_TRUE(seen.insert(n).second) << n << " is listed twice";
    }
  }
}

TEST(MetricTableTest, DocsMetricsMdIsGeneratedFromTheTable) {
  const char* src = std::getenv("EFAWATCH_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::string doc = testing::ReadFileOrEmpty(std::string(src) + "/docs/metrics.md");
  EXPECT_EQ(doc, RenderMetricsDoc())
      << "docs/metrics.md is stale: regenerate with `build/bin/efawatchd --print-metrics-doc > "
         "docs/metrics.md`";
}

}  // namespace
}  // namespace efawatch::metrics
