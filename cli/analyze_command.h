// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "lib/nccl/analyzer.h"

// The `analyze` subcommand's CLI11 wiring, shared by `efawatch` (which runs it itself) and
// `efawatch-rpc` (which has every command).
namespace efawatch::cli {

// The subcommand's values: CLI11 writes into them while parsing and the callback reads them
// afterwards, so they live in main() until the parse returns.
struct AnalyzeCommand {
  std::vector<std::string> files;
  std::string format = "text";
  unsigned threads = 0;
  std::string instance_type;  // NCCL Inspector files: busbw against this type's network
  std::unique_ptr<nccl::Analyzer> analyzer;  // kept until exit (cli/analyze.h)
};

// The `--format text|json` option every command has.
void AddFormatOption(CLI::App* command, std::string& format);

void AddAnalyzeCommand(CLI::App& app, AnalyzeCommand& cmd, int& exit_code);

// Parses `argv` with `app`, whose callbacks run the chosen command and set `exit_code`, and
// returns main()'s value: the help for --help, 2 with one line on a usage error, else
// `exit_code`. Where `analyze` ran, the process exits here instead (std::exit runs no
// destructor of main's locals, so the analyzer's memory goes with the process instead of being
// freed object by object).
int ParseAndRun(CLI::App& app, int argc, char** argv, AnalyzeCommand& analyze,
                const int& exit_code);

}  // namespace efawatch::cli
