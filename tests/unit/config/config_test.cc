// SPDX-License-Identifier: Apache-2.0
#include "daemon/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/support/subprocess.h"

namespace efawatch {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Config> Parse(const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env = {}) {
  auto p = ParseConfig(args, env);
  if (!p.ok()) return p.status();
  return p->config;
}

TEST(ConfigTest, DefaultsAvoidPortsTakenOnGpuNodes) {
  auto c = Parse({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metrics_listen, ":9477");
  EXPECT_EQ(c->grpc_listen, "127.0.0.1:9478");
  EXPECT_EQ(c->paths.sysfs, "/sys");
  EXPECT_EQ(c->paths.pod_log_root, "/var/log/pods");
  EXPECT_EQ(c->fabric_providers, (std::vector<std::string>{"efa", "tcp"}));
  EXPECT_FALSE(c->node_name.empty()) << "node name defaults to the host name";
}

TEST(ConfigTest, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("c.conf"),
                     "# comment\nsysfs-root = /file/sys\nprocfs-root = \"/file/proc\"\n"
                     "pod-log-root = /file/pods\n");
  auto c = Parse({"--config", dir.File("c.conf"), "--sysfs-root=/flag/sys"},
                 {{"EFAWATCH_SYSFS_ROOT", "/env/sys"}, {"EFAWATCH_PROCFS_ROOT", "/env/proc"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->paths.sysfs, "/flag/sys");
  EXPECT_EQ(c->paths.procfs, "/env/proc");
  EXPECT_EQ(c->paths.pod_log_root, "/file/pods");
  EXPECT_EQ(c->state_dir, "/var/lib/efawatch");
}

TEST(ConfigTest, ListenAddressesFromThePodIpTakeIpv6WithoutBrackets) {
  // The DaemonSet writes EFAWATCH_METRICS_LISTEN as "$(EFAWATCH_POD_IP):9477".
  auto c = Parse({}, {{"EFAWATCH_METRICS_LISTEN", "fd00:10::5:9477"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metrics_listen, "[fd00:10::5]:9477");
  c = Parse({}, {{"EFAWATCH_METRICS_LISTEN", "10.1.2.3:9477"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metrics_listen, "10.1.2.3:9477");
  c = Parse({"--grpc-listen", "::1:9478"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->grpc_listen, "[::1]:9478");
  // Unset in the pod spec, Kubernetes leaves the reference as written: one clear line.
  c = Parse({}, {{"EFAWATCH_METRICS_LISTEN", "$(EFAWATCH_POD_IP):9477"}});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("metrics-listen"));
}

TEST(ConfigTest, ConfigFileComesFromEnvironmentToo) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("c.conf"), "log-format = json\n");
  auto c = Parse({}, {{"EFAWATCH_CONFIG", dir.File("c.conf")}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->log_format, LogFormat::kJson);
}

TEST(ConfigTest, BooleanFlagsTakeNoValueOrAnExplicitOne) {
  auto c = Parse({"--grpc-insecure", "--grpc-listen", "0.0.0.0:1", "--fabric-responder=false"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->grpc_insecure);
  EXPECT_FALSE(c->fabric_responder);
}

TEST(ConfigTest, FleetFlags) {
  auto d = Parse({});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->workload_identity);
  EXPECT_EQ(d->max_communicators_per_pod, 32u);
  auto c = Parse({"--workload-identity", "--workload-interval-ms=5000"},
                 {{"EFAWATCH_MAX_COMMUNICATORS_PER_POD", "8"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->workload_identity);
  EXPECT_EQ(c->workload_interval, std::chrono::milliseconds(5000));
  EXPECT_EQ(c->max_communicators_per_pod, 8u);
  EXPECT_FALSE(Parse({"--max-communicators-per-pod=5000"}).ok());
  EXPECT_FALSE(Parse({"--workload-interval-ms=10"}).ok());
}

TEST(ConfigTest, CollectiveProbeIsOffByDefaultAndChecked) {
  auto d = Parse({});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->collective_probe_interval.count(), 0);
  EXPECT_EQ(d->collective_probe_backend, "host");
  auto c = Parse({"--collective-probe-interval-ms=900000",
                  "--collective-probe-peers=10.0.0.2:9478,10.0.0.3:9478"},
                 {{"EFAWATCH_COLLECTIVE_PROBE_SIZES", "1M,4M"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->collective_probe_interval, std::chrono::minutes(15));
  EXPECT_EQ(c->collective_probe_sizes, "1M,4M");
  auto no_peers = Parse({"--collective-probe-interval-ms=900000"});
  ASSERT_FALSE(no_peers.ok());
  EXPECT_THAT(no_peers.status().message(), HasSubstr("needs --collective-probe-peers"));
  EXPECT_FALSE(Parse({"--collective-probe-interval-ms=30000", "--collective-probe-peers=a:1",
                      "--collective-probe-deadline-ms=30000"})
                   .ok());
  EXPECT_FALSE(Parse({"--collective-probe-interval-ms=900000", "--collective-probe-peers=mesh:2"})
                   .ok());  // no mesh
  EXPECT_FALSE(Parse({"--collective-probe-backend=gloo"}).ok());
}

struct BadCase {
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::string expected;
};

class ConfigBadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConfigBadTest, IsRejectedWithOneLineNamingTheProblem) {
  auto c = Parse(GetParam().args, GetParam().env);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(GetParam().expected));
  EXPECT_EQ(std::string(c.status().message()).find('\n'), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    All, ConfigBadTest,
    ::testing::Values(BadCase{{"--no-such-flag"}, {}, "unknown flag --no-such-flag"},
                      BadCase{{"positional"}, {}, "unexpected argument"},
                      BadCase{{"--metrics-listen", "1.2.3.4"}, {}, "--metrics-listen=1.2.3.4"},
                      BadCase{{"--metrics-listen", "127.0.0.1:70000"}, {}, "port must be"},
                      BadCase{{"--grpc-listen", "300.1.1.1:5"}, {}, "--grpc-listen=300.1.1.1:5"},
                      BadCase{{"--grpc-listen", "10.0.0.1:9478"}, {}, "not a loopback address"},
                      BadCase{{"--grpc-listen", "unix:grpc.sock"}, {}, "absolute path"},
                      BadCase{{"--grpc-listen=unix:/run/efawatch/grpc.sock", "--mesh-discovery=dns",
                               "--mesh-dns-name=agents"},
                              {},
                              "needs gRPC on the network"},
                      BadCase{{"--grpc-tls-cert", "/nonexistent/c.pem", "--grpc-tls-key",
                               "/nonexistent/k"},
                              {},
                              "--grpc-tls-cert=/nonexistent/c.pem: cannot read file"},
                      BadCase{{"--grpc-tls-cert", "/etc/hostname"}, {}, "go together"},
                      BadCase{{"--log-format", "xml"}, {}, "must be text or json"},
                      BadCase{{"--collector-budget-ms", "5"}, {}, "from 10 to 60000"},
                      BadCase{{"--config", "/nonexistent.conf"}, {}, "cannot read"},
                      BadCase{{}, {{"EFAWATCH_LOG_LEVEL", "loud"}}, "(from EFAWATCH_LOG_LEVEL)"},
                      BadCase{{"--sysfs-root"}, {}, "needs a value"}));

INSTANTIATE_TEST_SUITE_P(
    Security, ConfigBadTest,
    ::testing::Values(
        BadCase{{"--grpc-authz-operators=alice"}, {}, "need --grpc-tls-client-ca"},
        BadCase{{"--probe-allowed-cidrs=10.0.0.0/33"}, {}, "--probe-allowed-cidrs=10.0.0.0/33"}));

TEST(ConfigTest, SecurityFlags) {
  auto c = Parse({"--probe-allowed-cidrs", "10.0.0.0/16, fd00::/8"},
                 {{"EFAWATCH_GRPC_AUTHZ_READERS", "efawatch-reader, alice"}});
  // Roles without client certificates are refused; the lists parse once they come with a CA.
  ASSERT_FALSE(c.ok());
  c = Parse(
      {"--grpc-tls-cert=/etc/hostname", "--grpc-tls-key=/etc/hostname",
       "--grpc-tls-client-ca=/etc/hostname", "--probe-allowed-cidrs", "10.0.0.0/16, fd00::/8"},
      {{"EFAWATCH_GRPC_AUTHZ_READERS", "efawatch-reader, alice"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->grpc_authz_readers, (std::vector<std::string>{"efawatch-reader", "alice"}));
  ASSERT_EQ(c->probe_allowed_cidrs.size(), 2u);
  EXPECT_EQ(c->probe_allowed_cidrs[1].ToString(), "fd00::/8");
  EXPECT_TRUE(c->probe_allow_loopback) << "loopback gRPC: a local agent probes local agents";

  c = Parse({}, {{"EFAWATCH_GRPC_LISTEN", "unix:/run/efawatch/grpc.sock"}});
  ASSERT_TRUE(c.ok()) << c.status() << ": plaintext on a unix socket only the pod reaches";
  EXPECT_EQ(c->grpc_listen, "unix:/run/efawatch/grpc.sock");
  EXPECT_FALSE(c->probe_allow_loopback) << "a unix socket is not loopback";
  c = Parse({"--grpc-listen=10.0.0.1:9478", "--grpc-insecure"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->probe_allow_loopback) << "an agent on the network never probes loopback";
  c = Parse({"--probe-allow-loopback=false"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->probe_allow_loopback);
}

INSTANTIATE_TEST_SUITE_P(
    MetricsTls, ConfigBadTest,
    ::testing::Values(
        BadCase{{"--metrics-tls-cert=/etc/hostname"}, {}, "go together"},
        BadCase{{"--metrics-tls-client-ca=/etc/hostname"}, {}, "needs --metrics-tls-cert"},
        BadCase{{}, {{"EFAWATCH_METRICS_BEARER_TOKEN_FILE", "/etc/hostname"}}, "plain HTTP"},
        BadCase{{"--metrics-tls-cert=/nonexistent/c.pem", "--metrics-tls-key=/etc/hostname"},
                {},
                "--metrics-tls-cert=/nonexistent/c.pem: cannot read file"},
        BadCase{{"--metrics-tls-cert=/etc/hostname", "--metrics-tls-key=/etc/hostname",
                 "--metrics-bearer-token-file=/dev/null"},
                {},
                "--metrics-bearer-token-file=/dev/null: holds no token"}));

TEST(ConfigTest, MetricsTlsFlagsHaveEnvironmentAndFileTwins) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("token"), "s3cret\n");
  testing::WriteFile(dir.File("c.conf"), "metrics-tls-client-ca = /etc/hostname\n");
  auto c = Parse({"--config", dir.File("c.conf"), "--metrics-tls-cert=/etc/hostname"},
                 {{"EFAWATCH_METRICS_TLS_KEY", "/etc/hostname"},
                  {"EFAWATCH_METRICS_BEARER_TOKEN_FILE", dir.File("token")}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metrics_tls_cert, "/etc/hostname");
  EXPECT_EQ(c->metrics_tls_key, "/etc/hostname");
  EXPECT_EQ(c->metrics_tls_client_ca, "/etc/hostname");
  EXPECT_EQ(c->metrics_bearer_token_file, dir.File("token"));
  c = Parse({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->metrics_tls_cert.empty()) << "plain HTTP unless asked";
}

TEST(ConfigTest, EfaExpectedDevicesTakesAutoNoneTypeOrACountAndZeroStaysAuto) {
  using E = Config::EfaExpectation;
  auto c = Parse({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->efa_expectation, E::kAuto) << "what the node was given, not its type";
  for (auto [value, want] : {std::pair{"auto", E::kAuto},
                             {"none", E::kNone},
                             {"type", E::kType},
                             {"0", E::kAuto},
                             {"32", E::kCount}}) {
    c = Parse({std::string("--efa-expected-devices=") + value});
    ASSERT_TRUE(c.ok()) << value << ": " << c.status();
    EXPECT_EQ(c->efa_expectation, want) << value;
  }
  EXPECT_EQ(c->efa_expected_devices, 32u);
  EXPECT_FALSE(c->efa_expected_devices_zero);
  c = Parse({"--efa-expected-devices=0"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->efa_expected_devices_zero) << "the agent warns: 0 is the old spelling of auto";
  c = Parse({}, {{"EFAWATCH_EFA_EXPECTED_DEVICES", "none"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->efa_expectation, E::kNone);
  for (const char* bad : {"257", "-1", "some", ""}) {
    c = Parse({std::string("--efa-expected-devices=") + bad});
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("efa-expected-devices")) << bad;
  }
}

// docs/configuration.md says it is generated from --help: hold it to that.
TEST(ConfigTest, ConfigurationDocIsTheHelpText) {
  const std::string doc = testing::ReadFileOrEmpty(testing::SourceDir() + "/docs/configuration.md");
  ASSERT_FALSE(doc.empty()) << "docs/configuration.md not found under EFAWATCH_SOURCE_DIR";
  auto p = ParseConfig({"--help"}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_THAT(doc, HasSubstr("```\n" + p->help_text + "```\n"))
      << "regenerate the block in docs/configuration.md from `efawatchd --help`";
}

TEST(ConfigTest, UnknownKeyInConfigFileNamesFileAndLine) {
  testing::TempDir dir;
  testing::WriteFile(dir.File("c.conf"), "log-format = json\nbogus = 1\n");
  auto c = Parse({"--config", dir.File("c.conf")});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("c.conf:2: unknown key `bogus`"));
}

TEST(ConfigTest, HelpIsPrintedNotAnError) {
  auto p = ParseConfig({"--help"}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->action, Action::kHelp);
  EXPECT_THAT(p->help_text, HasSubstr("EFAWATCH_METRICS_LISTEN"));
}

TEST(ConfigTest, LoopbackDetection) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:1"));
  EXPECT_TRUE(IsLoopbackAddress("127.9.9.9:1"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:1"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:1"));
  EXPECT_FALSE(IsLoopbackAddress(":1"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:1"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:1"));
}

}  // namespace
}  // namespace efawatch

namespace efawatch {
namespace {

TEST(ConfigLimitsTest, MemoryBudgetTakesQuantitiesAndWatchStreamsAreBounded) {
  auto c = Parse({}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->memory_budget, uint64_t{96} << 20);
  EXPECT_EQ(c->max_watch_streams, 32u);
  c = Parse({"--memory-budget=64Mi", "--max-watch-streams=4"}, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->memory_budget, uint64_t{64} << 20);
  EXPECT_EQ(c->max_watch_streams, 4u);
  c = Parse({}, {{"EFAWATCH_MEMORY_BUDGET", "1Gi"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->memory_budget, uint64_t{1} << 30);
  for (const char* bad : {"--memory-budget=lots", "--memory-budget=12", "--memory-budget=-1Mi",
                          "--max-watch-streams=0"}) {
    auto b = Parse({bad}, {});
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(std::string(b.status().message()).find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace efawatch
