// SPDX-License-Identifier: Apache-2.0
#pragma once

// What the pod-log integration tests share: the real efawatchd over a fixture tree, its
// scrapes, and the fixture lines they write into logs.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/subprocess.h"

namespace efawatch::testing {

/// The lines of tests/fixtures/nccl/<name>.
inline std::vector<std::string> FixtureLines(const std::string& name) {
  std::ifstream in(SourceDir() + "/tests/fixtures/nccl/" + name);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// The value of `series` in a scrape, or -1 when absent.
inline double Value(const std::string& scrape, const std::string& series) {
  auto p = scrape.find("\n" + series + " ");
  if (p == std::string::npos) return -1;
  return std::stod(scrape.substr(p + series.size() + 2));
}

// Checkpoints the tailer took: written, or due and unchanged since the last one written (then the
// file on disk already holds the state). A wait for this to grow is a wait for the state read so
// far to be on disk.
inline double Checkpoints(const std::string& scrape) {
  return Value(scrape, "efawatch_logs_checkpoint_writes_total") +
         Value(scrape, "efawatch_logs_checkpoints_unchanged_total");
}

/// A real efawatchd with its state in `dir` (state/, nosys/ as an empty sysfs), a 2 s pod grace
/// period and `args` (the log roots); ports from its port file.
class LogAgent {
 public:
  LogAgent(const TempDir& dir, const std::vector<std::string>& args) {
    using namespace std::chrono_literals;
    std::filesystem::remove(dir.File("ports.json"));
    std::vector<std::string> argv = {
        BinaryPath("bin/efawatchd"),        "--metrics-listen=127.0.0.1:0",
        "--grpc-listen=127.0.0.1:0",        "--port-file=" + dir.File("ports.json"),
        "--state-dir=" + dir.File("state"), "--sysfs-root=" + dir.File("nosys"),
        "--pod-grace-period-seconds=2"};
    argv.insert(argv.end(), args.begin(), args.end());
    proc_ = std::make_unique<Subprocess>(argv);
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    const std::regex re(R"re("metrics": (\d+), "grpc": (\d+))re");
    while (std::chrono::steady_clock::now() < deadline && port_ == 0) {
      std::smatch m;
      const std::string text = ReadFileOrEmpty(dir.File("ports.json"));
      if (std::regex_search(text, m, re)) {
        port_ = std::stoi(m[1]);
        grpc_port_ = std::stoi(m[2]);
      }
      std::this_thread::sleep_for(20ms);
    }
  }
  std::string Scrape() const { return HttpGet(port_, "/metrics").second; }
  /// Polls until `pred(scrape)` holds or the timeout passes; returns the last scrape.
  std::string WaitFor(const std::function<bool(const std::string&)>& pred,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string s;
    do {
      s = Scrape();
      if (pred(s)) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    } while (std::chrono::steady_clock::now() < deadline);
    return s;
  }
  Subprocess& proc() { return *proc_; }
  int port() const { return port_; }
  int grpc_port() const { return grpc_port_; }

 private:
  std::unique_ptr<Subprocess> proc_;
  int port_ = 0;
  int grpc_port_ = 0;
};

}  // namespace efawatch::testing
