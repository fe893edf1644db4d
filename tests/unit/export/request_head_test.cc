// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/request_head.h"

#include <gtest/gtest.h>

#include <string>

namespace efawatch::exporter {
namespace {

constexpr size_t kMax = 16 * 1024;
using Outcome = HeadParse::Outcome;

HeadParse Parse(const std::string& s, size_t max = kMax) { return ParseRequestHead(s, max); }

TEST(RequestHeadTest, ReadsAPrometheusScrape) {
  const std::string head =
      "GET /metrics?x=1 HTTP/1.1\r\nHost: 10.0.0.1:9100\r\nUser-Agent: Prometheus/2.45.0\r\n"
      "Accept: application/openmetrics-text\r\nAuthorization: Bearer abc\r\n"
      "Authorization: Bearer second\r\n\r\n";
  const HeadParse p = Parse(head + "GET /next");
  ASSERT_EQ(p.outcome, Outcome::kComplete) << p.why;
  EXPECT_EQ(p.head.method, "GET");
  EXPECT_EQ(p.head.path, "/metrics");
  EXPECT_EQ(p.head.minor_version, 1);
  EXPECT_TRUE(p.head.keep_alive);
  EXPECT_FALSE(p.head.content_length.has_value());
  EXPECT_EQ(p.head.authorization, "Bearer abc") << "the first field";
  EXPECT_EQ(p.head.size, head.size()) << "the next request's bytes are not the head's";
}

TEST(RequestHeadTest, IsIncompleteUntilTheBlankLineAtEverySplit) {
  const std::string head = "POST /validate HTTP/1.1\r\nContent-Length: 5\r\n\r\n";
  for (size_t n = 0; n < head.size(); ++n) {
    EXPECT_EQ(Parse(head.substr(0, n)).outcome, Outcome::kIncomplete) << n << " bytes";
  }
  const HeadParse p = Parse(head);
  ASSERT_EQ(p.outcome, Outcome::kComplete);
  EXPECT_EQ(p.head.content_length, 5u);
}

TEST(RequestHeadTest, TakesBareLineFeedsLeadingBlankLinesAndAbsoluteTargets) {
  HeadParse p = Parse("\r\n\nHEAD http://node:9100/healthz?probe HTTP/1.1\nHost: x\n\n");
  ASSERT_EQ(p.outcome, Outcome::kComplete) << p.why;
  EXPECT_EQ(p.head.method, "HEAD");
  EXPECT_EQ(p.head.path, "/healthz");
  p = Parse("GET http://node:9100 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(p.outcome, Outcome::kComplete) << p.why;
  EXPECT_EQ(p.head.path, "/");
}

TEST(RequestHeadTest, KeepAliveFollowsTheVersionAndTheConnectionField) {
  EXPECT_FALSE(Parse("GET / HTTP/1.0\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").head.keep_alive);
  EXPECT_FALSE(Parse("GET / HTTP/1.1\r\nConnection: TE, close\r\n\r\n").head.keep_alive);
  EXPECT_TRUE(Parse("GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n").head.keep_alive);
  const HeadParse p = Parse("GET / HTTP/1.3\r\n\r\n");
  ASSERT_EQ(p.outcome, Outcome::kComplete) << "a later 1.x is answered as 1.1";
  EXPECT_EQ(p.head.minor_version, 1);
}

TEST(RequestHeadTest, ReadsExpectContinueAndTransferEncoding) {
  EXPECT_TRUE(Parse("POST /v HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 9\r\n\r\n")
                  .head.expect_continue);
  EXPECT_FALSE(Parse("POST /v HTTP/1.1\r\nExpect: other\r\n\r\n").head.expect_continue);
  EXPECT_TRUE(
      Parse("POST /v HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").head.transfer_encoding);
}

TEST(RequestHeadTest, RefusesWhatTwoParsersCouldReadDifferently) {
  const struct {
    const char* text;
    int status;
  } cases[] = {
      {"GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n", 400},            // space before colon
      {"GET /metrics HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n", 400},  // obs-fold
      {"GET /metrics HTTP/1.1\r\nX-A: 1\r2\r\n\r\n", 400},           // bare CR
      {"POST /v HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST /v HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
      {"POST /v HTTP/1.1\r\nContent-Length: -3\r\n\r\n", 400},
      {"POST /v HTTP/1.1\r\nContent-Length: 3 4\r\n\r\n", 400},
      {"POST /v HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST /v HTTP/1.1\r\nContent-Length:\r\n\r\n", 400},
      {"GET /metrics HTTP/2.0\r\n\r\n", 505},
      {"GET /metrics HTTP/1.1x\r\n\r\n", 400},
      {"GET /metrics\r\n\r\n", 400},               // HTTP/0.9
      {"GET  /metrics HTTP/1.1\r\n\r\n", 400},     // two spaces
      {"GET metrics HTTP/1.1\r\n\r\n", 400},       // not a path
      {"GE(T /metrics HTTP/1.1\r\n\r\n", 400},     // not a token
      {"GET /met\x01rics HTTP/1.1\r\n\r\n", 400},  // control byte
  };
  for (const auto& c : cases) {
    const std::string text(c.text);
    const HeadParse p = Parse(text);
    EXPECT_EQ(p.outcome, Outcome::kBad) << text;
    EXPECT_EQ(p.status, c.status) << text;
    EXPECT_FALSE(p.why.empty());
  }
  // The NUL case needs its length given: a C string stops at it.
  constexpr char kNul[] = "GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n";
  const std::string nul(kNul, sizeof(kNul) - 1);
  EXPECT_EQ(Parse(nul).status, 400);
  // The same length twice is one length.
  const HeadParse same =
      Parse("POST /v HTTP/1.1\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\n");
  ASSERT_EQ(same.outcome, Outcome::kComplete);
  EXPECT_EQ(same.head.content_length, 3u);
}

TEST(RequestHeadTest, BoundsTheHeadsSizeAndFields) {
  const std::string big = "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(200, 'a');
  EXPECT_EQ(Parse(big, 100).status, 431) << "no blank line within the bound";
  EXPECT_EQ(Parse(big + "\r\n\r\n", 100).status, 431) << "a blank line past the bound";
  EXPECT_EQ(Parse(big, 1000).outcome, Outcome::kIncomplete);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X-F: " + std::to_string(i) + "\r\n";
  EXPECT_EQ(Parse(many + "\r\n").status, 431);
}

}  // namespace
}  // namespace efawatch::exporter
