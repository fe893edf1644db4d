// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

// The command-line client is three binaries installed side by side: efawatch (analyze, no
// gRPC), efawatch-rpc (every other command) and efawatch-admission (the webhook, which serves
// with the agent's HTTPS server and so is built in the daemon tier). One hands a command to
// another by exec, with the same arguments.
namespace efawatch::cli {

/// The directory this program was started from: where the other binaries are installed too.
inline std::string OwnDirectory(const char* argv0) {
  std::string path(4096, '\0');
  const ssize_t n = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n > 0) {
    path.resize(static_cast<size_t>(n));
  } else {
    path = argv0;  // no /proc: the path it was started by, when that holds a directory
  }
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// Replaces this process with `program` from this one's directory; returns 2, with one line on
/// stderr, only when that fails.
inline int ExecBeside(char** argv, const std::string& program, const std::string& hint) {
  const std::string path = OwnDirectory(argv[0]) + "/" + program;
  execv(path.c_str(), argv);
  const int error = errno;
  std::cerr << "efawatch: '" << (argv[1] != nullptr ? argv[1] : "") << "' runs in " << path
            << ", which cannot be started (" << std::strerror(error) << "); " << hint << "\n";
  return 2;
}

}  // namespace efawatch::cli
