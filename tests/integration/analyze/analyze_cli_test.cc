// SPDX-License-Identifier: Apache-2.0
// Runs the real `efawatch analyze` binary on the NCCL fixtures: text and JSON output, stdin,
// gzip input, and the exit codes (0 no critical finding, 1 critical, 2 usage or I/O error, 3 no
// NCCL output at all).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

std::string Bin() { return Env("EFAWATCH_BINARY_DIR", ".") + "/bin/efawatch"; }
std::string Fixture(const std::string& name) {
  return Env("EFAWATCH_SOURCE_DIR", ".") + "/tests/fixtures/nccl/" + name;
}

struct CmdResult {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs a shell command line; stderr goes to a temp file.
CmdResult Shell(const std::string& cmd) {
  std::filesystem::path err_path =
      std::filesystem::temp_directory_path() / ("efawatch_err_" + std::to_string(getpid()));
  CmdResult r;
  FILE* p = popen((cmd + " 2>" + err_path.string()).c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  std::filesystem::remove(err_path);
  return r;
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(AnalyzeCliTest, TextVerdictAndExitCodeOnHealthyEfa) {
  CmdResult r = Shell(Bin() + " analyze " + Fixture("efa-ofi-healthy-2.21.log"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(FirstLine(r.out), "OK: inter-node traffic on NET/OFI (efa), GDR on");
  EXPECT_TRUE(r.err.empty());
}

TEST(AnalyzeCliTest, TextVerdictAndExitCodeOnTcpFallback) {
  CmdResult r =
      Shell(Bin() + " analyze --format text " + Fixture("socket-fallback-plugin-missing-2.19.log"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(FirstLine(r.out).rfind("TCP FALLBACK: 2 ranks on 2 nodes use NET/Socket", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find("[critical] tcp_fallback"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("socket-fallback-plugin-missing-2.19.log:"), std::string::npos);
}

TEST(AnalyzeCliTest, InputWithoutNcclOutputSaysSo) {
  // Training chatter only, as a pod log looks when NCCL_DEBUG is unset.
  CmdResult r = Shell("printf 'epoch 1 loss 0.5\\nepoch 2 loss 0.4\\n' | " + Bin() + " analyze -");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_EQ(FirstLine(r.out).rfind(
                "NO NCCL OUTPUT: 2 lines read, none from NCCL; set NCCL_DEBUG=INFO", 0),
            0u)
      << r.out;
  // One NCCL line is enough to be judged on its content instead.
  CmdResult one = Shell("printf 'h:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\\n' | " + Bin() +
                        " analyze -");
  EXPECT_NE(one.code, 3) << one.out;
  EXPECT_EQ(FirstLine(one.out).rfind("NO NCCL OUTPUT", 0), std::string::npos) << one.out;
}

TEST(AnalyzeCliTest, LinesWithoutPrefixAreNcclOutput) {
  // A pasted excerpt whose "host:pid:tid [dev]" prefixes are gone.
  CmdResult r = Shell(
      "printf '%s\\n' 'NCCL INFO NET/OFI Selected Provider is efa' "
      "'NCCL INFO Using network AWS Libfabric' "
      "'NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/AWS Libfabric/0/GDRDMA' | " +
      Bin() + " analyze -");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(FirstLine(r.out), "OK: inter-node traffic on NET/OFI (efa), GDR on") << r.out;
}

TEST(AnalyzeCliTest, SocketNetOfACommunicatorWhoseEdgesStayOnTheNodeIsNoFallback) {
  // Ranks 0-2 joined by P2P/SHM edges, no NET channel: one node (rule on_node_links).
  CmdResult r = Shell(
      "printf '%s\\n' 'h:1:1 [0] NCCL INFO Using network Socket' "
      "'h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 3 cudaDev 0 commId 0x7 - Init START' "
      "'h:2:2 [1] NCCL INFO comm 0xb rank 1 nranks 3 cudaDev 1 commId 0x7 - Init START' "
      "'h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC' "
      "'h:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[2] via SHM/direct/direct' | " +
      Bin() + " analyze --format json -");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["summary"]["tcp_fallback"], false);
  EXPECT_EQ(j["summary"]["nodes_evidence"], "proven_single");
  EXPECT_EQ(j["summary"]["nodes_proof"]["rule"], "on_node_links");
}

TEST(AnalyzeCliTest, JsonOutput) {
  CmdResult r = Shell(Bin() + " analyze --format json " + Fixture("efa-ofi-tcp-provider-2.23.log"));
  EXPECT_EQ(r.code, 1);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["summary"]["tcp_fallback"], true);
  EXPECT_EQ(j["summary"]["ofi_provider"], "tcp;ofi_rxm");
  EXPECT_EQ(j["summary"]["nccl_version"], "2.23.4");
  EXPECT_EQ(j["processes"].size(), 2u);
  EXPECT_EQ(j["findings"][0]["kind"], "tcp_fallback");
  EXPECT_EQ(j["findings"][0]["severity"], "critical");
}

TEST(AnalyzeCliTest, ReadsStdin) {
  CmdResult r = Shell("cat " + Fixture("ifname-lo-single-node-2.16.log") + " | " + Bin() +
                      " analyze --format json -");
  EXPECT_EQ(r.code, 0);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["summary"]["loopback_misuse"], true);
  EXPECT_EQ(j["findings"][0]["evidence"]["file"], "<stdin>");
}

TEST(AnalyzeCliTest, ReadsGzipAndSeveralFiles) {
  std::filesystem::path gz =
      std::filesystem::temp_directory_path() / ("efawatch_" + std::to_string(getpid()) + ".log.gz");
  {
    std::ifstream in(Fixture("ib-healthy-internal-2.18.log"), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string data = ss.str();
    gzFile f = gzopen(gz.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, data.data(), static_cast<unsigned>(data.size())),
              static_cast<int>(data.size()));
    gzclose(f);
  }
  CmdResult r = Shell(Bin() + " analyze " + gz.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(FirstLine(r.out), "OK: inter-node traffic on NET/IB, GDR on");
  CmdResult both = Shell(Bin() + " analyze --format json " + gz.string() + " " +
                         Fixture("socket-single-node-2.20.log"));
  nlohmann::json j = nlohmann::json::parse(both.out);
  EXPECT_EQ(j["processes"].size(), 4u);
  std::filesystem::remove(gz);
}

// A file analyzed in parts on several threads gives the report of one pass: the same
// processes, communicators, findings and evidence line numbers. The file repeats every plain
// fixture (so the same processes span the cuts), holds a line longer than a read chunk and
// ends without a newline. The same file streamed through a pipe gives it too.
TEST(AnalyzeCliTest, ThreadedPartsGiveTheReportOfOnePass) {
  std::string body;
  for (int rep = 0; rep < 40; ++rep) {
    for (const auto& e : std::filesystem::directory_iterator(Fixture(""))) {
      std::string name = e.path().filename().string();
      if (e.path().extension() != ".log" || name.rfind("cri-", 0) == 0 ||
          name.rfind("docker-json-", 0) == 0) {
        continue;
      }
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      body += ss.str();
    }
    if (rep == 17) body += "junk " + std::string(600 * 1024, 'x') + " NCCL INFO tail\n";
  }
  body += "gpu-a:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>";  // no newline
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("efawatch_parts_" + std::to_string(getpid()));
  {
    std::ofstream out(path, std::ios::binary);
    out << body;
  }
  CmdResult one = Shell(Bin() + " analyze --format json --threads 1 " + path.string());
  ASSERT_NE(one.code, 2) << one.err;
  nlohmann::json want = nlohmann::json::parse(one.out);
  EXPECT_GT(want["summary"]["lines"].get<uint64_t>(), 5000u);
  for (int threads : {2, 3, 7}) {
    CmdResult many = Shell(Bin() + " analyze --format json --threads " + std::to_string(threads) +
                           " " + path.string());
    EXPECT_EQ(many.code, one.code) << many.err;
    nlohmann::json got = nlohmann::json::parse(many.out);
    EXPECT_EQ(got, want) << "threads " << threads;
  }
  // Read from a pipe (streamed through read()) and from the file (mapped): the same report.
  CmdResult piped =
      Shell("cat " + path.string() + " | " + Bin() + " analyze --format json --threads 1 -");
  CmdResult mapped = Shell(Bin() + " analyze --format json --threads 1 - < " + path.string());
  ASSERT_NE(piped.code, 2) << piped.err;
  EXPECT_EQ(nlohmann::json::parse(piped.out), nlohmann::json::parse(mapped.out));
  EXPECT_EQ(Shell(Bin() + " analyze --threads 65 " + path.string()).code, 2);
  std::filesystem::remove(path);
}

TEST(AnalyzeCliTest, MissingFileIsAnIoError) {
  CmdResult r = Shell(Bin() + " analyze /nonexistent/efawatch.log");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/efawatch.log"), std::string::npos);
}

TEST(AnalyzeCliTest, UsageErrors) {
  EXPECT_EQ(Shell(Bin() + " analyze --format yaml " + Fixture("efa-ofi-healthy-2.21.log")).code, 2);
  EXPECT_EQ(Shell(Bin() + " analyze").code, 2);
  EXPECT_EQ(Shell(Bin()).code, 2);
}

TEST(AnalyzeCliTest, PrintsVersion) {
  CmdResult r = Shell(Bin() + " version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("efawatch ", 0), 0u);
}

// `efawatch` runs `analyze` itself and hands every other command to efawatch-rpc from its own
// directory (cli/main.cc): copied alone, it still analyzes, and any other command fails with one
// line naming the missing file; beside the helper (through a symbolic link, as a package may
// install it), the other commands and the full help work.
TEST(AnalyzeCliTest, FrontAloneAnalyzesAndNamesTheMissingHelper) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("efawatch_front_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(Bin(), dir / "efawatch");
  const std::string alone = (dir / "efawatch").string();

  CmdResult analyzed = Shell(alone + " analyze " + Fixture("efa-ofi-healthy-2.21.log"));
  EXPECT_EQ(analyzed.code, 0) << analyzed.err;
  EXPECT_EQ(FirstLine(analyzed.out), "OK: inter-node traffic on NET/OFI (efa), GDR on");

  CmdResult status = Shell(alone + " status --agent 127.0.0.1:1");
  EXPECT_EQ(status.code, 2);
  EXPECT_TRUE(status.out.empty()) << status.out;
  EXPECT_EQ(std::count(status.err.begin(), status.err.end(), '\n'), 1) << status.err;
  EXPECT_NE(status.err.find((dir / "efawatch-rpc").string()), std::string::npos) << status.err;

  std::filesystem::remove(dir / "efawatch");
  std::filesystem::create_symlink(std::filesystem::absolute(Bin()), dir / "efawatch");
  CmdResult version = Shell((dir / "efawatch").string() + " version");
  EXPECT_EQ(version.code, 0) << version.err;
  EXPECT_EQ(version.out.rfind("efawatch ", 0), 0u) << version.out;
  CmdResult help = Shell((dir / "efawatch").string() + " --help");
  EXPECT_EQ(help.code, 0) << help.err;
  for (const char* command : {"status", "ping", "collective", "analyze", "doctor"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command << "\n" << help.out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
