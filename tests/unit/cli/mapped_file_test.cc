// SPDX-License-Identifier: Apache-2.0
#include "cli/mapped_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace efawatch::cli {
namespace {

// A temporary file holding `body`, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(const std::string& body) {
    std::string tmpl = ::testing::TempDir() + "/mapped_file_XXXXXX";
    fd_ = mkstemp(tmpl.data());
    path_ = tmpl;
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(write(fd_, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  }
  ~TempFile() {
    close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string path_;
};

TEST(MappedFileTest, HoldsTheFilesBytes) {
  const std::string body = "gpu-a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nsecond\n";
  TempFile f(body);
  auto m = MappedFile::Map(f.fd(), body.size());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ((*m)->data(), body);
  EXPECT_FALSE((*m)->shrank());
}

TEST(MappedFileTest, EmptyFileIsNotMapped) {
  TempFile f("");
  EXPECT_FALSE(MappedFile::Map(f.fd(), 0).ok());
}

// A file cut short under the mapping (copytruncate): reading past the new end neither kills the
// process nor returns stale bytes: the rest reads as zeros and shrank() says so. The mapping
// that did not shrink stays intact.
TEST(MappedFileTest, SurvivesTheFileShrinking) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const std::string body(4 * page, 'x');
  TempFile f(body);
  TempFile other(std::string(page, 'y'));
  auto m = MappedFile::Map(f.fd(), body.size());
  auto o = MappedFile::Map(other.fd(), page);
  ASSERT_TRUE(m.ok() && o.ok());
  const std::string_view data = (*m)->data();
  EXPECT_EQ(data[0], 'x');
  ASSERT_EQ(ftruncate(f.fd(), static_cast<off_t>(page)), 0);
  EXPECT_EQ(data[page - 1], 'x');  // still inside the file
  size_t nonzero = 0;
  for (size_t i = page; i < data.size(); ++i) nonzero += data[i] != '\0' ? 1 : 0;
  EXPECT_EQ(nonzero, 0u);
  EXPECT_TRUE((*m)->shrank());
  EXPECT_FALSE((*o)->shrank());
  EXPECT_EQ((*o)->data(), std::string(page, 'y'));
}

// A slot is free again once its MappedFile is gone.
TEST(MappedFileTest, SlotsAreReused) {
  TempFile f("line\n");
  for (int i = 0; i < 100; ++i) {
    auto m = MappedFile::Map(f.fd(), 5);
    ASSERT_TRUE(m.ok()) << i << ": " << m.status();
  }
}

}  // namespace
}  // namespace efawatch::cli
