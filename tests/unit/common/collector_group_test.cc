// SPDX-License-Identifier: Apache-2.0
// A group of collectors is one collector to the edge: its name, every member's samples, the
// first failure.

#include "lib/common/collector_group.h"

#include <gtest/gtest.h>

#include <vector>

namespace efawatch::common {
namespace {

struct CountingSink final : MetricSink {
  void Add(metrics::Metric, const Labels&, double) override { ++samples; }
  void AddHistogram(metrics::Metric, const Labels&, const HistogramSample&) override {}
  int samples = 0;
};

class Member final : public Collector {
 public:
  explicit Member(absl::Status result) : result_(std::move(result)) {}
  std::string_view Name() const override { return "member"; }
  absl::Status Collect(std::chrono::steady_clock::time_point, MetricSink& sink) override {
    ++calls;
    sink.Add(metrics::M::kLogsFilesWatched, {}, 1);
    return result_;
  }
  int calls = 0;

 private:
  absl::Status result_;
};

TEST(CollectorGroupTest, RunsEveryMemberUnderOneNameAndReportsTheFirstFailure) {
  Member ok(absl::OkStatus());
  Member broken(absl::UnavailableError("sysfs gone"));
  Member late(absl::DeadlineExceededError("late"));
  CollectorGroup group("nccl_logs", {&ok, &broken, &late});
  CountingSink sink;
  const absl::Status st = group.Collect(std::chrono::steady_clock::now(), sink);
  EXPECT_EQ(group.Name(), "nccl_logs");
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_EQ(ok.calls + broken.calls + late.calls, 3) << "a failing member stopped the others";
  EXPECT_EQ(sink.samples, 3);
}

TEST(CollectorGroupTest, SucceedsWhenEveryMemberDoes) {
  Member a(absl::OkStatus()), b(absl::OkStatus());
  CollectorGroup group("logs", {&a, &b});
  CountingSink sink;
  EXPECT_TRUE(group.Collect(std::chrono::steady_clock::now(), sink).ok());
}

}  // namespace
}  // namespace efawatch::common
