// SPDX-License-Identifier: Apache-2.0
// efawatch: the command-line client's front. `efawatch analyze` runs here, in a binary that links
// the analyzer and nothing of gRPC: it starts in ~5 ms instead of ~15 (gRPC, protobuf and their
// forty shared libraries are not mapped and relocated), a tenth of the time `analyze` takes on a
// 400 MB pod log, and the file can be copied alone into a training container that lacks those
// libraries. Every other command (status, ping, bandwidth, collective, doctor, version, --help)
// is handed with the same arguments to efawatch-rpc, installed beside this binary.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/analyze.h"
#include "cli/analyze_command.h"
#include "cli/version_line.h"

namespace {

// The directory this program was started from: where efawatch-rpc is installed too.
std::string OwnDirectory(const char* argv0) {
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

// Replaces this process with efawatch-rpc; returns (2, one line on stderr) only when that fails.
int ExecRpc(char** argv) {
  const std::string rpc = OwnDirectory(argv[0]) + "/efawatch-rpc";
  execv(rpc.c_str(), argv);
  const int error = errno;
  std::cerr << "efawatch: '" << (argv[1] != nullptr ? argv[1] : "") << "' runs in " << rpc
            << ", which cannot be started (" << std::strerror(error)
            << "); install it beside efawatch (only `efawatch analyze` works without it)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Answered here too, so a lone copy of this binary in a training container says what it is.
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::cout << efawatch::cli::VersionLine() << "\n";
    return 0;
  }
  if (argc < 2 || std::string_view(argv[1]) != "analyze") return ExecRpc(argv);
  efawatch::cli::ReexecWithHugePageHeap(argv);
  CLI::App app{"efawatch: is this GPU node really on the fast fabric?"};
  app.require_subcommand(1);
  int exit_code = 0;
  efawatch::cli::AnalyzeCommand analyze;
  efawatch::cli::AddAnalyzeCommand(app, analyze, exit_code);
  return efawatch::cli::ParseAndRun(app, argc, argv, analyze, exit_code);
}
