// SPDX-License-Identifier: Apache-2.0
// efawatch: the command-line client's front. `efawatch analyze` runs here, in a binary that links
// the analyzer and nothing of gRPC: it starts in ~5 ms instead of ~15 (gRPC, protobuf and their
// forty shared libraries are not mapped and relocated), a tenth of the time `analyze` takes on a
// 400 MB pod log, and the file can be copied alone into a training container that lacks those
// libraries. Every other command (status, ping, bandwidth, collective, doctor, version, --help)
// is handed with the same arguments to efawatch-rpc, installed beside this binary, and
// `admission` to efawatch-admission (cli/exec_beside.h).
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/analyze.h"
#include "cli/analyze_command.h"
#include "cli/exec_beside.h"
#include "cli/version_line.h"

int main(int argc, char** argv) {
  // Answered here too, so a lone copy of this binary in a training container says what it is.
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::cout << efawatch::cli::VersionLine() << "\n";
    return 0;
  }
  // The admission webhook serves with the agent's HTTPS server: its own binary.
  if (argc >= 2 && std::string_view(argv[1]) == "admission") {
    return efawatch::cli::ExecBeside(argv, "efawatch-admission",
                                     "install it beside efawatch (docs/admission.md)");
  }
  if (argc < 2 || std::string_view(argv[1]) != "analyze") {
    return efawatch::cli::ExecBeside(argv, "efawatch-rpc",
                                     "install it beside efawatch (only `efawatch analyze` works "
                                     "without it)");
  }
  efawatch::cli::ReexecWithHugePageHeap(argv);
  CLI::App app{"efawatch: is this GPU node really on the fast fabric?"};
  app.require_subcommand(1);
  int exit_code = 0;
  efawatch::cli::AnalyzeCommand analyze;
  efawatch::cli::AddAnalyzeCommand(app, analyze, exit_code);
  return efawatch::cli::ParseAndRun(app, argc, argv, analyze, exit_code);
}
