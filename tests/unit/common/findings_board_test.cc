// SPDX-License-Identifier: Apache-2.0
#include "lib/common/findings_board.h"

#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"

namespace efawatch::common {
namespace {

Finding Make(std::string kind, Severity s, std::string subject) {
  Finding f;
  f.kind = std::move(kind);
  f.severity = s;
  f.subject = std::move(subject);
  return f;
}

TEST(FindingsBoardTest, RepublishingClearsWhatIsGone) {
  FakeClock clock;
  FindingsBoard board(clock);
  board.Publish("efa", {Make("efa_port_down", Severity::kCritical, "rdmap0")});
  board.Publish("nccl", {Make("tcp_fallback", Severity::kCritical, "ns/pod")});
  EXPECT_EQ(board.Snapshot()->size(), 2u);
  board.Publish("efa", {});
  ASSERT_EQ(board.Snapshot()->size(), 1u);
  EXPECT_EQ(board.Snapshot()->front().kind, "tcp_fallback");
}

TEST(FindingsBoardTest, FirstSeenSurvivesRepublishingAndLastSeenMoves) {
  FakeClock clock;
  FindingsBoard board(clock);
  board.Publish("efa", {Make("efa_port_down", Severity::kCritical, "rdmap0")});
  const auto first = board.Snapshot()->front().first_seen;
  clock.Advance(std::chrono::seconds(30));
  board.Publish("efa", {Make("efa_port_down", Severity::kCritical, "rdmap0")});
  const auto& f = board.Snapshot()->front();
  EXPECT_EQ(f.first_seen, first);
  EXPECT_EQ(f.last_seen - first, std::chrono::seconds(30));
}

TEST(FindingsBoardTest, MostSevereFirst) {
  FakeClock clock;
  FindingsBoard board(clock);
  board.Publish("a", {Make("w", Severity::kWarning, "x"), Make("i", Severity::kInfo, "x"),
                      Make("c", Severity::kCritical, "x")});
  auto snap = board.Snapshot();
  ASSERT_EQ(snap->size(), 3u);
  EXPECT_EQ((*snap)[0].kind, "c");
  EXPECT_EQ((*snap)[1].kind, "w");
  EXPECT_EQ((*snap)[2].kind, "i");
}

TEST(FindingsBoardTest, OldSnapshotStaysValidAfterPublish) {
  FakeClock clock;
  FindingsBoard board(clock);
  board.Publish("a", {Make("k", Severity::kWarning, "x")});
  auto before = board.Snapshot();
  board.Publish("a", {});
  EXPECT_EQ(before->size(), 1u);
  EXPECT_TRUE(board.Snapshot()->empty());
}

}  // namespace
}  // namespace efawatch::common
