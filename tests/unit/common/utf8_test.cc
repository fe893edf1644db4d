// SPDX-License-Identifier: Apache-2.0
#include "lib/common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace efawatch::common {
namespace {

// The ASCII fast path reads 32 and 8 bytes at a time: a bad byte must be found at every offset
// and in every tail, not only where a word starts.
TEST(Utf8, FindsABadByteAtEveryOffset) {
  for (size_t len = 1; len <= 80; ++len) {
    for (size_t at = 0; at < len; ++at) {
      std::string s(len, 'a');
      s[at] = '\xff';
      EXPECT_FALSE(IsValidUtf8(s)) << "len " << len << " at " << at;
      const std::string fixed = ToValidUtf8(s);
      EXPECT_EQ(fixed, std::string(at, 'a') + "\xEF\xBF\xBD" + std::string(len - at - 1, 'a'))
          << "len " << len << " at " << at;
    }
  }
}

TEST(Utf8, AcceptsMultiByteCharactersAfterAsciiRuns) {
  for (size_t before = 0; before <= 70; ++before) {
    // U+00E9, U+20AC, U+1F600 behind `before` ASCII bytes, then ASCII again.
    const std::string s = std::string(before, 'x') + "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" +
                          std::string(before % 33, 'y');
    EXPECT_TRUE(IsValidUtf8(s)) << before;
    EXPECT_EQ(ToValidUtf8(s), s);
  }
}

TEST(Utf8, RejectsOverlongSurrogatesAndTruncatedSequences) {
  const std::string pad(40, 'p');
  for (const std::string bad : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE2\x82"}) {
    EXPECT_FALSE(IsValidUtf8(pad + bad)) << "at the end";
    EXPECT_FALSE(IsValidUtf8(pad + bad + pad)) << "in the middle";
  }
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8(pad));
}

TEST(Utf8, MakeValidChangesOnlyInvalidText) {
  std::string ok = "NCCL INFO ok \xC3\xA9";
  EXPECT_FALSE(MakeValidUtf8(&ok));
  std::string bad = std::string(35, 'n') + "\x80";
  EXPECT_TRUE(MakeValidUtf8(&bad));
  EXPECT_EQ(bad, std::string(35, 'n') + "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace efawatch::common
