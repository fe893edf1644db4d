// SPDX-License-Identifier: Apache-2.0
#include "daemon/tls/cert_watcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/fake_clock.h"
#include "tests/support/subprocess.h"

namespace efawatch::tls {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

class CertWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string made = testing::MakeTestCertificates(certs_.path());
    ASSERT_TRUE(made.empty()) << made;
  }
  std::string Pem(const std::string& name) const {
    return testing::ReadFileOrEmpty(certs_.File(name));
  }
  // The watched files, rewritten in place as a renewal would.
  void Install(const std::string& cert, const std::string& key) {
    testing::WriteFile(live_.File("tls.crt"), Pem(cert));
    testing::WriteFile(live_.File("tls.key"), Pem(key));
  }
  absl::StatusOr<std::unique_ptr<CertificateWatcher>> Watch() {
    // A day between reads: the test calls Check() itself.
    return CertificateWatcher::Create({{"server", live_.File("tls.crt"), live_.File("tls.key")}},
                                      24h, clock_, &board_);
  }

  testing::TempDir certs_, live_;
  common::FakeClock clock_;
  common::FindingsBoard board_{clock_};
};

TEST_F(CertWatcherTest, CheckPemGivesTheEarliestEndAndRefusesAKeyOfAnotherCertificate) {
  const auto end = CheckPem(Pem("server.pem"), Pem("server.key"));
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_GT(*end, std::chrono::system_clock::now());
  EXPECT_LT(*end, std::chrono::system_clock::now() + 48h) << "issued for one day";
  const auto mismatch = CheckPem(Pem("server.pem"), Pem("client.key"));
  EXPECT_THAT(std::string(mismatch.status().message()), HasSubstr("do not go together"));
  EXPECT_THAT(std::string(CheckPem("not a certificate", "").status().message()),
              HasSubstr("no PEM certificate"));
  // A CA bundle mid-rotation: two certificates; the earlier end counts.
  const auto bundle = CheckPem(Pem("ca.pem") + Pem("server.pem"), "");
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  EXPECT_LE(*bundle, *end);
}

TEST_F(CertWatcherTest, AReplacedGoodPairIsAnnouncedOnceAndABadOneCountedAndIgnored) {
  Install("server.pem", "server.key");
  auto w = Watch();
  ASSERT_TRUE(w.ok()) << w.status();
  int changes = 0;
  (*w)->OnChange("server", [&changes] { ++changes; });
  (*w)->Check();
  EXPECT_EQ(changes, 0) << "nothing changed yet";

  Install("client.pem", "client.key");
  (*w)->Check();
  (*w)->Check();
  EXPECT_EQ(changes, 1);

  // The certificate of one pair with the key of another (a copy done by hand, half-way).
  Install("server.pem", "client.key");
  (*w)->Check();
  EXPECT_EQ(changes, 1);
  auto state = (*w)->State("server");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->reload_failures, 1u);
  EXPECT_THAT(state->problem, HasSubstr("do not go together"));
  (*w)->Check();
  EXPECT_EQ((*w)->State("server")->reload_failures, 1u) << "counted once per change";

  Install("server.pem", "server.key");
  (*w)->Check();
  EXPECT_EQ(changes, 2);
  EXPECT_TRUE((*w)->State("server")->problem.empty());
}

TEST_F(CertWatcherTest, AnExpiredCertificateRaisesACriticalFinding) {
  Install("server.pem", "server.key");
  auto w = Watch();
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(board_.Snapshot()->empty());
  const auto end = *(*w)->State("server")->not_after;
  clock_.Advance(end - clock_.WallNow() + 1s);
  (*w)->Check();
  const auto findings = board_.Snapshot();
  ASSERT_EQ(findings->size(), 1u);
  EXPECT_EQ(findings->front().kind, "tls_certificate_expired");
  EXPECT_EQ(findings->front().severity, common::Severity::kCritical);
  EXPECT_EQ(findings->front().subject, "server");
}

TEST_F(CertWatcherTest, UnusableFilesAtStartAreAnError) {
  Install("server.pem", "client.key");
  auto w = Watch();
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(std::string(w.status().message()), HasSubstr("tls.crt"));
}

}  // namespace
}  // namespace efawatch::tls
