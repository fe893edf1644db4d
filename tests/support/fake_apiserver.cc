// SPDX-License-Identifier: Apache-2.0
#include "tests/support/fake_apiserver.h"

#include <chrono>
#include <thread>
#include <vector>

namespace efawatch::testing {

std::string StartFakeApiServer(const TempDir& dir, std::unique_ptr<Subprocess>* server,
                               std::string* url) {
  using namespace std::chrono_literals;
  std::string made = MakeTestCertificates(dir.path());
  if (!made.empty()) return made;
  WriteFile(dir.File("token"), "secret-token\n");         // what the server expects
  WriteFile(dir.File("client-token"), "secret-token\n");  // what the client sends
  *server = std::make_unique<Subprocess>(std::vector<std::string>{
      "/usr/bin/env", "python3", SourceDir() + "/tests/component/mesh/fake_apiserver.py", "--cert",
      dir.File("server.pem"), "--key", dir.File("server.key"), "--token-file", dir.File("token"),
      "--objects", dir.File("objects.json"), "--port-file", dir.File("port"), "--request-log",
      dir.File("requests")});
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (ReadFileOrEmpty(dir.File("port")).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  const std::string port = ReadFileOrEmpty(dir.File("port"));
  if (port.empty()) return "the fake API server did not start: " + (*server)->Stderr();
  *url = "https://127.0.0.1:" + port;
  return "";
}

}  // namespace efawatch::testing
