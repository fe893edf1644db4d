// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace efawatch::testing {

/// A child process for integration tests: started with posix_spawn, stdout and stderr captured
/// to files, waited for with a timeout, killed in the destructor if still running.
class Subprocess {
 public:
  /// Starts argv[0] with `argv`, the current environment plus `extra_env`.
  Subprocess(const std::vector<std::string>& argv,
             const std::map<std::string, std::string>& extra_env = {});
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig);
  /// The exit code (128+signal when killed by one), or nullopt if still running at the timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string out_path_, err_path_;
};

/// Runs a command to completion (bounded by `timeout`) and returns {exit code, stdout+stderr}.
std::pair<int, std::string> RunCommand(const std::vector<std::string>& argv,
                                       std::chrono::milliseconds timeout);

/// A fresh temporary directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string ReadFileOrEmpty(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);

/// The source tree (EFAWATCH_SOURCE_DIR, set by ctest), or "." when unset.
std::string SourceDir();

/// Path of a built executable (bin/efawatchd ...), from EFAWATCH_BINARY_DIR.
std::string BinaryPath(const std::string& name);

/// Plain HTTP GET on 127.0.0.1:port; returns {status code, body}; status 0 on connection error.
std::pair<int, std::string> HttpGet(int port, const std::string& path);

/// Polls /metrics on 127.0.0.1:port until its text matches the ECMAScript regex `pattern`; false
/// when `timeout` passes first. What a test waits on instead of a fixed sleep.
bool WaitForMetrics(int port, const std::string& pattern, std::chrono::milliseconds timeout);

/// Makes, with openssl, in `dir`: ca.pem/ca.key, server.pem/server.key (for localhost and
/// 127.0.0.1) and client.pem/client.key, both signed by the CA. Returns "" or openssl's output.
std::string MakeTestCertificates(const std::string& dir);

/// True if `program` is found on PATH.
bool OnPath(const std::string& program);

}  // namespace efawatch::testing
