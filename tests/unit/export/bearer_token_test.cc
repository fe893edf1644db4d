// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/bearer_token.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "tests/support/subprocess.h"

namespace efawatch::exporter {
namespace {

TEST(BearerTokenFileTest, AllowsOnlyTheFilesTokenWithTheBearerScheme) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("token"), "  s3cret-token\n");
  auto t = BearerTokenFile::Create(dir.File("token"));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE((*t)->Allows("Bearer s3cret-token"));
  EXPECT_TRUE((*t)->Allows("bearer s3cret-token")) << "the scheme is case-insensitive";
  EXPECT_FALSE((*t)->Allows(""));
  EXPECT_FALSE((*t)->Allows("Bearer "));
  EXPECT_FALSE((*t)->Allows("Bearer s3cret-toke"));
  EXPECT_FALSE((*t)->Allows("Bearer s3cret-token2"));
  EXPECT_FALSE((*t)->Allows("Basic s3cret-token"));
  EXPECT_FALSE((*t)->Allows("s3cret-token"));
}

TEST(BearerTokenFileTest, ARewrittenOrReplacedFileChangesTheTokenAtOnce) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("token"), "old-token\n");
  auto t = BearerTokenFile::Create(dir.File("token"));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE((*t)->Allows("Bearer old-token"));
  // In place, same length, at once: no timestamp tick in between.
  testing::WriteFile(dir.File("token"), "new-token\n");
  EXPECT_FALSE((*t)->Allows("Bearer old-token"));
  EXPECT_TRUE((*t)->Allows("Bearer new-token"));
  // As a Kubernetes Secret volume rotates: a new file renamed over the old one.
  testing::WriteFile(dir.File("token.next"), "rotated\n");
  ASSERT_EQ(std::rename(dir.File("token.next").c_str(), dir.File("token").c_str()), 0);
  EXPECT_FALSE((*t)->Allows("Bearer new-token"));
  EXPECT_TRUE((*t)->Allows("Bearer rotated"));
}

TEST(BearerTokenFileTest, AMissingOrEmptyFileRefusesEveryone) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("token"), "t\n");
  auto t = BearerTokenFile::Create(dir.File("token"));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(::unlink(dir.File("token").c_str()), 0);
  EXPECT_FALSE((*t)->Allows("Bearer t"));
  EXPECT_FALSE((*t)->Allows("Bearer "));
  testing::WriteFile(dir.File("token"), "\n");
  EXPECT_FALSE((*t)->Allows("Bearer "));
  EXPECT_FALSE((*t)->Allows("Bearer t"));
  testing::WriteFile(dir.File("token"), "t\n");
  EXPECT_TRUE((*t)->Allows("Bearer t"));

  testing::WriteFile(dir.File("empty"), " \n");
  EXPECT_FALSE(BearerTokenFile::Create(dir.File("empty")).ok());
  EXPECT_FALSE(BearerTokenFile::Create(dir.File("missing")).ok());
}

}  // namespace
}  // namespace efawatch::exporter
