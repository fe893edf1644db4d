// efawatch: the command-line client. Each subcommand lives in its own cli/<name>.cc library;
// this file only wires them to CLI11.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "cli/analyze.h"

#ifndef EFAWATCH_VERSION
#define EFAWATCH_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{"efawatch: are your GPU nodes really talking over EFA/InfiniBand?"};
  app.require_subcommand(1);

  app.add_subcommand("version", "Print the efawatch version")->callback([] {
    std::cout << "efawatch " << EFAWATCH_VERSION << "\n";
  });

  std::vector<std::string> files;
  std::string format = "text";
  int rc = 0;
  CLI::App* analyze =
      app.add_subcommand("analyze", "Analyze NCCL_DEBUG=INFO logs (plain, CRI, docker json, .gz)");
  analyze->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
  analyze->add_option("files", files, "log files, - for stdin")->required();
  analyze->callback([&] { rc = efawatch::cli::RunAnalyze(files, format, std::cout, std::cerr); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return rc;
}
