// SPDX-License-Identifier: Apache-2.0
// SharedLibrary: the dlopen seam behind the libraries the agent opens only where it uses them.
#include "lib/common/shared_library.h"

#include <gtest/gtest.h>

#include <cstring>

namespace efawatch::common {
namespace {

TEST(SharedLibraryTest, BindsAFunctionThatThenWorks) {
  auto libc = SharedLibrary::Open("libc.so.6");
  ASSERT_TRUE(libc.ok()) << libc.status();
  decltype(&strlen) fn = nullptr;
  ASSERT_TRUE(libc->Bind("strlen", &fn).ok());
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn("fabric"), 6u);
}

TEST(SharedLibraryTest, AMissingSymbolNamesTheLibraryAndTheSymbol) {
  auto libc = SharedLibrary::Open("libc.so.6");
  ASSERT_TRUE(libc.ok()) << libc.status();
  void (*fn)() = nullptr;
  const absl::Status st = libc->Bind("efawatch_no_such_function", &fn);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("libc.so.6"), std::string::npos) << st;
  EXPECT_NE(st.message().find("efawatch_no_such_function"), std::string::npos) << st;
  EXPECT_EQ(fn, nullptr);
}

TEST(SharedLibraryTest, AMissingLibraryIsAnErrorNamingIt) {
  auto lib = SharedLibrary::Open("libefawatch-absent.so.9");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(lib.status().message().find("libefawatch-absent.so.9"), std::string::npos)
      << lib.status();
}

}  // namespace
}  // namespace efawatch::common
