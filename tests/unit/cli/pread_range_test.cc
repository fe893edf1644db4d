// SPDX-License-Identifier: Apache-2.0
// How `efawatch analyze` reads a regular file's range: whole, then 0 at the range's end; a file
// that ends before the range does (it shrank while it was read) is an error, not a short count.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "cli/analyze.h"

namespace efawatch::cli {
namespace {

class PreadRangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/pread_range_XXXXXX";
    fd_ = mkstemp(name);
    ASSERT_GE(fd_, 0);
    unlink(name);
    ASSERT_EQ(write(fd_, "0123456789", 10), 10);
  }
  void TearDown() override { close(fd_); }
  int fd_ = -1;
};

TEST_F(PreadRangeTest, ReadsTheRangeThenEnds) {
  uint64_t offset = 2;
  char buf[4];
  std::string error, got;
  for (int64_t n; (n = internal::PreadRange(fd_, &offset, 9, buf, sizeof(buf), &error)) > 0;) {
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, "2345678");
  EXPECT_EQ(offset, 9u);
  EXPECT_EQ(error, "");
}

TEST_F(PreadRangeTest, AFileThatShrankIsAnError) {
  uint64_t offset = 0;
  char buf[16];
  std::string error;
  EXPECT_EQ(internal::PreadRange(fd_, &offset, 20, buf, sizeof(buf), &error), 10);
  ASSERT_EQ(ftruncate(fd_, 4), 0);  // copytruncate under the reader
  EXPECT_EQ(internal::PreadRange(fd_, &offset, 20, buf, sizeof(buf), &error), -1);
  EXPECT_EQ(error, "the file shrank while it was read");
}

}  // namespace
}  // namespace efawatch::cli
