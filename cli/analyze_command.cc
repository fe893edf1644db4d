// SPDX-License-Identifier: Apache-2.0
#include "cli/analyze_command.h"

#include <cstdlib>
#include <iostream>

#include "cli/analyze.h"
#include "cli/inspector_table.h"

namespace efawatch::cli {

void AddFormatOption(CLI::App* command, std::string& format) {
  command->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
}

void AddAnalyzeCommand(CLI::App& app, AnalyzeCommand& cmd, int& exit_code) {
  auto* analyze =
      app.add_subcommand("analyze", "Analyze NCCL_DEBUG=INFO logs (plain, CRI, docker json, .gz)");
  AddFormatOption(analyze, cmd.format);
  analyze
      ->add_option("--threads", cmd.threads,
                   "parts of a large file analyzed at once (0: one per CPU for files >= 32 MiB)")
      ->check(CLI::Range(0u, 64u));
  analyze->add_option("--instance-type", cmd.instance_type,
                      "NCCL Inspector files: compare busbw with this EC2 type's network");
  analyze->add_option("files", cmd.files, "log files, - for stdin")->required();
  analyze->callback([&] {
    // NCCL Inspector files (recognised by content) get their own table; the rest are logs.
    std::vector<std::string> inspector, logs;
    for (const auto& f : cmd.files) (IsInspectorFile(f) ? inspector : logs).push_back(f);
    exit_code = 0;
    if (!inspector.empty()) {
      exit_code = RunInspectorTable(inspector, cmd.format, cmd.instance_type, std::cout, std::cerr);
    }
    if (!logs.empty() && exit_code == 0) {
      exit_code = RunAnalyze(logs, cmd.format, cmd.threads, std::cout, std::cerr, &cmd.analyzer);
    }
  });
}

int ParseAndRun(CLI::App& app, int argc, char** argv, AnalyzeCommand& analyze,
                const int& exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "efawatch: " << e.what() << "\n";
    return 2;
  }
  if (analyze.analyzer != nullptr) {
    std::cout.flush();
    std::exit(exit_code);
  }
  return exit_code;
}

}  // namespace efawatch::cli
