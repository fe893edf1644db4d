// SPDX-License-Identifier: Apache-2.0
#include "tests/support/agent_process.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <regex>
#include <thread>

namespace efawatch::testing {

using namespace std::chrono_literals;

AgentProcess::AgentProcess(const std::string& provider, const std::string& interface,
                           const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv = {
      BinaryPath("bin/efawatchd"),      "--metrics-listen=127.0.0.1:0",
      "--grpc-listen=127.0.0.1:0",      "--port-file=" + dir_.File("ports.json"),
      "--sysfs-root=" + dir_.path(),    "--pod-log-root=" + dir_.path(),
      "--state-dir=" + dir_.path(),     "--fabric-providers=" + provider,
      "--fabric-interface=" + interface};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  proc_ = std::make_unique<Subprocess>(argv);
  const std::regex re(R"re("metrics": (\d+), "grpc": (\d+))re");
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline && grpc_ == 0) {
    std::smatch m;
    const std::string text = ReadFileOrEmpty(dir_.File("ports.json"));
    if (std::regex_search(text, m, re)) {
      metrics_ = std::stoi(m[1]);
      grpc_ = std::stoi(m[2]);
    } else if (proc_->Wait(0ms)) {
      break;
    } else {
      std::this_thread::sleep_for(20ms);
    }
  }
}

std::unique_ptr<v1::Agent::Stub> AgentProcess::Stub() const {
  return v1::Agent::NewStub(
      grpc::CreateChannel(grpc_address(), grpc::InsecureChannelCredentials()));
}

}  // namespace efawatch::testing
