// SPDX-License-Identifier: Apache-2.0
// The instance type table against what the DaemonSet targets: every type its node affinity
// names has an expected EFA count (else efa_devices_missing can never fire there), and the DMI
// product name is read the way EC2's Nitro instances write it.
#include "lib/common/instance_types.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace efawatch::common {
namespace {

std::string SourceDir() {
  const char* d = std::getenv("EFAWATCH_SOURCE_DIR");
  return d != nullptr ? d : ".";
}

TEST(InstanceTypesTest, EveryTypeTheDaemonSetTargetsHasAnExpectedEfaCount) {
  std::ifstream in(SourceDir() + "/deploy/kubernetes/base/daemonset.yaml");
  ASSERT_TRUE(in) << "daemonset.yaml not found under " << SourceDir();
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string yaml = ss.str();
  // The values listed after the instance-type key of the node affinity.
  const auto key = yaml.find("node.kubernetes.io/instance-type");
  ASSERT_NE(key, std::string::npos);
  const std::string after = yaml.substr(key, yaml.find("matchExpressions", key) - key);
  const std::regex item(R"(-\s+([a-z0-9-]+\.[0-9a-z]+))");
  int types = 0;
  for (std::sregex_iterator it(after.begin(), after.end(), item), end; it != end; ++it) {
    ++types;
    EXPECT_GT(ExpectedEfaDevices((*it)[1]), 0u) << (*it)[1] << " has no expected EFA count";
  }
  EXPECT_GE(types, 10) << after;
  EXPECT_EQ(ExpectedEfaDevices("p5.48xlarge"), 32u);
  EXPECT_EQ(ExpectedEfaDevices("p4de.24xlarge"), 4u);
  EXPECT_EQ(ExpectedEfaDevices("m5.large"), 0u) << "unknown types are not checked";
}

TEST(InstanceTypesTest, InstanceTypeFromTheDmiProductName) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("efawatch-dmi-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "devices/virtual/dmi/id");
  std::ofstream(dir / "devices/virtual/dmi/id/product_name") << "p5en.48xlarge \n";
  EXPECT_EQ(InstanceTypeFromDmi(dir), "p5en.48xlarge");
  EXPECT_EQ(ExpectedEfaDevices(InstanceTypeFromDmi(dir)), 16u);
  EXPECT_EQ(InstanceTypeFromDmi(dir / "missing"), "");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace efawatch::common
