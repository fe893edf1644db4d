// SPDX-License-Identifier: Apache-2.0
// How `efawatch analyze` reads a regular file's range: whole, then 0 at the range's end; a file
// that ends before the range does (it shrank while it was read) is an error, not a short count.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

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

namespace efawatch::cli {
namespace {

// Which logs earn the huge-page heap's second start: NCCL logs, not a pod's chatter.
class MostlyNcclTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    char name[] = "/tmp/mostly_nccl_XXXXXX";
    const int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fd);
    names_.emplace_back(name);
    return name;
  }
  void TearDown() override {
    for (const std::string& n : names_) unlink(n.c_str());
  }
  std::vector<std::string> names_;
};

TEST_F(MostlyNcclTest, NcclLogsYesChatterNo) {
  std::string nccl, chatter;
  for (int i = 0; i < 100; ++i) {
    nccl += "h:1:2 [0] NCCL INFO Channel 00/0" + std::to_string(i % 8) + " : 0 1\n";
    chatter += i % 50 == 0 ? "h:1:2 [0] NCCL INFO NET/OFI Using aws-ofi-nccl\n"
                           : "step " + std::to_string(i) + " loss 0.25\n";
  }
  std::string nccl_file = Write(nccl), chatter_file = Write(chatter);
  std::string prog = "efawatch", cmd = "analyze", missing = "/nonexistent/file.log";
  char* yes[] = {prog.data(), cmd.data(), nccl_file.data(), nullptr};
  char* no[] = {prog.data(), cmd.data(), chatter_file.data(), nullptr};
  // The first regular file decides: a missing one is passed over.
  char* first_missing[] = {prog.data(), missing.data(), nccl_file.data(), nullptr};
  char* none[] = {prog.data(), cmd.data(), nullptr};
  EXPECT_TRUE(internal::MostlyNccl(yes));
  EXPECT_FALSE(internal::MostlyNccl(no));
  EXPECT_TRUE(internal::MostlyNccl(first_missing));
  EXPECT_FALSE(internal::MostlyNccl(none));
}

}  // namespace
}  // namespace efawatch::cli
