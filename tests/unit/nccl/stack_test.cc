// SPDX-License-Identifier: Apache-2.0
// The stack a container's NCCL log shows (lib/nccl/stack.h): versions, plugin, provider, GDR and
// the echoed settings, and the fingerprint of the settings that are not labels.
#include "lib/nccl/stack.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "lib/nccl/analyzer.h"
#include "tests/unit/nccl/nccl_test_util.h"

namespace efawatch::nccl {
namespace {

bool Holds(const std::string& path, const std::string& needle) {
  for (const std::string& line : testing::ReadLines(path)) {
    if (line.find(needle) != std::string::npos) return true;
  }
  return false;
}

Stack StackOfLines(const std::vector<std::string>& lines) {
  Analyzer a;
  uint64_t n = 0;
  for (const std::string& l : lines) a.Feed("test.log", ++n, l);
  return StackOf(a.Snapshot());
}

const std::vector<std::string> kEfaJob = {
    "h:1:1 [0] NCCL INFO NCCL version 2.27.5+cuda12.9",
    "h:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0",
    "h:1:1 [0] NCCL INFO NET/OFI Setting FI_EFA_FORK_SAFE environment variable to 1",
    "h:1:1 [0] NCCL INFO NCCL_PROTO set by environment to simple",
    "h:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8388608.",
    "h:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)",
    "h:1:1 [0] NCCL INFO Using network AWS Libfabric",
};

TEST(StackTest, ReadsVersionsPluginProviderAndSettings) {
  const Stack s = StackOfLines(kEfaJob);
  EXPECT_TRUE(s.Known());
  EXPECT_EQ(s.nccl_version, "2.27.5");
  EXPECT_EQ(s.net_plugin, "aws-ofi-nccl");
  EXPECT_EQ(s.net_plugin_version, "1.14.0");
  EXPECT_EQ(s.ofi_provider, "efa");
  EXPECT_EQ(SettingValue(s, "NCCL_PROTO"), "simple");
  EXPECT_EQ(SettingValue(s, "NCCL_BUFFSIZE"), "8388608");
  EXPECT_EQ(SettingValue(s, "FI_EFA_FORK_SAFE"), "1");
  EXPECT_EQ(SettingValue(s, "NCCL_ALGO"), "");
  // Sorted by name, whatever order the log printed them in.
  ASSERT_EQ(s.settings.size(), 3u);
  EXPECT_EQ(s.settings.front().first, "FI_EFA_FORK_SAFE");
}

TEST(StackTest, OldPluginLineNamesTheSamePlugin) {
  const Stack s =
      StackOfLines({"h:1:1 [0] NCCL INFO NET/OFI Using aws-ofi-nccl 1.4.0aws",
                    "h:1:1 [0] NCCL INFO NET/Plugin: Loaded net plugin AWS Libfabric (v6)"});
  EXPECT_EQ(s.net_plugin, "aws-ofi-nccl");
  EXPECT_EQ(s.net_plugin_version, "1.4.0aws");
}

TEST(StackTest, NothingShownIsUnknown) {
  const Stack s =
      StackOfLines({"h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000"});
  EXPECT_FALSE(s.Known());
  EXPECT_EQ(s.ofi_provider, "");
  EXPECT_EQ(SettingsFingerprint(s), "");
}

TEST(StackTest, FingerprintIsEqualForEqualSettingsAndDiffersForAnother) {
  const std::string a = SettingsFingerprint(StackOfLines(kEfaJob));
  ASSERT_EQ(a.size(), 8u);
  // Another rank of the same job: its own host id and debug file, the same settings otherwise.
  std::vector<std::string> other = kEfaJob;
  other.push_back("h:1:1 [0] NCCL INFO NCCL_HOSTID set by environment to node-7");
  other.push_back("h:1:1 [0] NCCL INFO NCCL_DEBUG_FILE set by environment to /tmp/n.%h.%p");
  EXPECT_EQ(SettingsFingerprint(StackOfLines(other)), a);
  // A labelled setting (NCCL_PROTO) is its own label, not part of the fingerprint.
  std::vector<std::string> proto = kEfaJob;
  proto[3] = "h:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL128";
  EXPECT_EQ(SettingsFingerprint(StackOfLines(proto)), a);
  // Another buffer size is another configuration.
  std::vector<std::string> buff = kEfaJob;
  buff[4] = "h:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 4194304.";
  EXPECT_NE(SettingsFingerprint(StackOfLines(buff)), a);
}

// Every real log of the shared corpus that prints aws-ofi-nccl's version gives it; none that
// does not invents one. Skips without the corpus.
TEST(StackTest, CorpusPluginVersions) {
  const std::string dir = testing::SharedDir() + "/nccl-logs";
  if (!std::filesystem::exists(dir + "/MANIFEST.tsv")) GTEST_SKIP() << "no corpus at " << dir;
  int with_version = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".log") continue;
    SCOPED_TRACE(e.path().filename().string());
    const Stack s = StackOf(testing::AnalyzeFile(e.path().string()));
    const bool printed = Holds(e.path().string(), "Initializing aws-ofi-nccl 1") ||
                         Holds(e.path().string(), "Using aws-ofi-nccl 1");
    if (printed) {
      ++with_version;
      EXPECT_EQ(s.net_plugin, "aws-ofi-nccl");
      EXPECT_FALSE(s.net_plugin_version.empty());
      EXPECT_TRUE(s.net_plugin_version[0] >= '0' && s.net_plugin_version[0] <= '9')
          << s.net_plugin_version;
    } else {
      EXPECT_EQ(s.net_plugin_version, "");
    }
  }
  EXPECT_GT(with_version, 0);
}

}  // namespace
}  // namespace efawatch::nccl
