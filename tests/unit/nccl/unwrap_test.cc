// SPDX-License-Identifier: Apache-2.0
#include "lib/nccl/unwrap.h"

#include <gtest/gtest.h>

#include <string>

namespace efawatch::nccl {
namespace {

TEST(UnwrapTest, ParsesCriRecords) {
  CriRecord r;
  ASSERT_TRUE(ParseCri("2025-03-04T05:06:07.123456789Z stdout F h:1:2 [0] NCCL INFO x", &r));
  EXPECT_EQ(r.stream, "stdout");
  EXPECT_FALSE(r.partial);
  EXPECT_EQ(r.text, "h:1:2 [0] NCCL INFO x");
  ASSERT_TRUE(ParseCri("2025-03-04T05:06:07.1+02:00 stderr P abc", &r));
  EXPECT_TRUE(r.partial);
  EXPECT_EQ(r.text, "abc");
  ASSERT_TRUE(ParseCri("2025-03-04T05:06:07.1Z stdout F", &r));
  EXPECT_TRUE(r.text.empty());
  EXPECT_FALSE(ParseCri("2025-03-04 05:06:07 stdout F x", &r));
  EXPECT_FALSE(ParseCri("451 host:1:2 [0] NCCL INFO x", &r));
  EXPECT_FALSE(ParseCri("2025-03-04T05:06:07.1Z stdin F x", &r));
}

TEST(UnwrapTest, DecodesDockerJson) {
  std::string text;
  bool partial = true;
  ASSERT_TRUE(ParseDockerJson(
      R"({"log":"h:1:2 [0] NCCL INFO a\"b\\c\u00e9\ud83d\ude00\t\n","stream":"stdout","time":"t"})",
      &text, &partial));
  EXPECT_FALSE(partial);
  EXPECT_EQ(text, "h:1:2 [0] NCCL INFO a\"b\\c\xc3\xa9\xf0\x9f\x98\x80\t");
  ASSERT_TRUE(ParseDockerJson(R"({"log":"no newline","stream":"stdout"})", &text, &partial));
  EXPECT_TRUE(partial);
  EXPECT_FALSE(ParseDockerJson(R"({"log":"broken \q"})", &text, &partial));
  EXPECT_FALSE(ParseDockerJson(R"({"log":"unterminated)", &text, &partial));
  EXPECT_FALSE(ParseDockerJson(R"({"msg":"x"})", &text, &partial));
  EXPECT_FALSE(ParseDockerJson("plain", &text, &partial));
}

// The text between a record's escapes is copied a run at a time (16 bytes per compare): an
// escape or the closing quote at every offset of a run, and runs longer than one compare.
TEST(UnwrapTest, DecodesDockerJsonRunsOfEveryLength) {
  std::string text;
  bool partial = true;
  for (size_t len = 0; len < 70; ++len) {
    const std::string run(len, 'x');
    const std::string record = R"({"log":")" + run + R"(\"q\\)" + run + R"(\n","stream":"stdout"})";
    ASSERT_TRUE(ParseDockerJson(record, &text, &partial)) << len;
    EXPECT_EQ(text, run + "\"q\\" + run) << len;
    EXPECT_FALSE(partial) << len;
    // No closing quote after a long run: not a record.
    EXPECT_FALSE(ParseDockerJson(R"({"log":")" + run + run, &text, &partial)) << len;
  }
}

TEST(UnwrapTest, CleanLineStripsWrappers) {
  std::string scratch;
  EXPECT_EQ(CleanLine("  | 2025-05-16T16:39:51.208-07:00ip-10:79:79 [0] NCCL INFO x", &scratch),
            "ip-10:79:79 [0] NCCL INFO x");
  EXPECT_EQ(CleanLine("  | 2024-12-04T07:19:43.480Z | algo-1:1:2 [7] NCCL INFO y", &scratch),
            "algo-1:1:2 [7] NCCL INFO y");
  EXPECT_EQ(CleanLine(" 2025-02-18 12:54 n:1:2 [1] NCCL INFO z", &scratch),
            "n:1:2 [1] NCCL INFO z");
  EXPECT_EQ(CleanLine("\xe2\x94\x82 t:28:53 [0] NCCL INFO c     \xe2\x94\x82", &scratch),
            "t:28:53 [0] NCCL INFO c");
  EXPECT_EQ(CleanLine("[1,0]<stdout>:#  Rank  0 Group", &scratch), "#  Rank  0 Group");
  EXPECT_EQ(CleanLine("(RayTrainWorker pid=355353) NCCL version 2.14.3+cuda11.8", &scratch),
            "NCCL version 2.14.3+cuda11.8");
  EXPECT_EQ(CleanLine("\x1b[0;32mh:1:2 [0] NCCL INFO x\x1b[0m\r", &scratch),
            "h:1:2 [0] NCCL INFO x");
  EXPECT_EQ(CleanLine("x\r\n", &scratch), "x");
  EXPECT_EQ(CleanLine(" 2024-12-04T05:27:48.125Z", &scratch), "");
  EXPECT_EQ(CleanLine("2020-06-11 20:08:36 I tensorflow", &scratch), "I tensorflow");
  EXPECT_EQ(CleanLine("2020-06-11 is a date", &scratch), "2020-06-11 is a date");
}

TEST(UnwrapTest, CleanLineReportsRayPrefixAndFoldedLines) {
  std::string scratch;
  RayWrapping ray;
  EXPECT_EQ(CleanLine("\x1b[36m(RayTrainWorker pid=7, ip=10.0.2.22)\x1b[0m h:7:7 [0] NCCL INFO "
                      "Using network Socket\x1b[2m [repeated 15x across cluster]\x1b[0m",
                      &scratch, true, &ray),
            "h:7:7 [0] NCCL INFO Using network Socket");
  EXPECT_EQ(ray.prefix, "(RayTrainWorker pid=7, ip=10.0.2.22)");
  EXPECT_EQ(ray.repeated, 15u);

  // The first folded line carries Ray's hint; a line without a prefix still loses the suffix.
  ray = {};
  EXPECT_EQ(CleanLine("h:7:7 [0] NCCL INFO x [repeated 2x across cluster] (Ray deduplicates logs "
                      "by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication.)",
                      &scratch, true, &ray),
            "h:7:7 [0] NCCL INFO x");
  EXPECT_EQ(ray.repeated, 2u);
  EXPECT_TRUE(ray.prefix.empty());

  // Look-alikes are text, not a fold count.
  for (const char* text : {"h:1:1 [0] NCCL INFO [repeated x across cluster]",
                           "h:1:1 [0] NCCL INFO y [repeated 3x across the cluster]",
                           "h:1:1 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [receive]"}) {
    ray = {};
    EXPECT_EQ(CleanLine(text, &scratch, true, &ray), text);
    EXPECT_EQ(ray.repeated, 0u) << text;
  }
}

TEST(UnwrapTest, RecognisesRayMarkerLines) {
  EXPECT_TRUE(IsRayMarkerLine(":actor_name:RayTrainWorker"));
  EXPECT_TRUE(IsRayMarkerLine(":task_name:RayTrainWorker.run_train_fn"));
  EXPECT_TRUE(IsRayMarkerLine(":job_id:02000000"));
  EXPECT_FALSE(IsRayMarkerLine("::1 is loopback"));
  EXPECT_FALSE(IsRayMarkerLine("task_name: x"));
}

TEST(UnwrapTest, TimestampLength) {
  EXPECT_EQ(TimestampLength("2025-05-16T16:39:51.208-07:00ip"), 29u);
  EXPECT_EQ(TimestampLength("2024-12-04T07:19:43.480Z |"), 24u);
  EXPECT_EQ(TimestampLength("2025-02-18 12:54 host"), 16u);
  EXPECT_EQ(TimestampLength("not a time"), 0u);
}

TEST(UnwrapTest, JoinerJoinsAndBounds) {
  PartialJoiner j(300);
  bool truncated = true;
  EXPECT_EQ(j.Complete("whole", &truncated), "whole");
  EXPECT_FALSE(truncated);
  j.AddPartial("ab");
  EXPECT_TRUE(j.pending());
  EXPECT_EQ(j.Complete("cd", &truncated), "abcd");
  EXPECT_FALSE(truncated);
  EXPECT_FALSE(j.pending());
  j.AddPartial(std::string(400, 'x'));
  EXPECT_EQ(j.Complete("y", &truncated).size(), 300u);
  EXPECT_TRUE(truncated);
}

}  // namespace
}  // namespace efawatch::nccl
