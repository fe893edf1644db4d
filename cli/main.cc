// efawatch: the command-line client. Each subcommand lives in its own file; this one only wires
// them to CLI11.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/status.h"
#include "efawatch/version.h"

namespace {

void AddConnectionFlags(CLI::App* cmd, efawatch::cli::AgentConnection& conn) {
  cmd->add_option("--agent", conn.address, "Agent gRPC address host:port")->required();
  cmd->add_option("--tls-ca", conn.tls_ca, "PEM CA to verify the agent");
  cmd->add_option("--tls-cert", conn.tls_cert, "PEM client certificate (mutual TLS)");
  cmd->add_option("--tls-key", conn.tls_key, "PEM client key (mutual TLS)");
  cmd->add_option("--tls-server-name", conn.tls_server_name, "Name expected in the agent cert");
  cmd->add_option_function<int>(
         "--timeout-ms", [&conn](int ms) { conn.timeout = std::chrono::milliseconds(ms); },
         "Give up after this long (default 5000)")
      ->check(CLI::Range(1, 600000));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"efawatch: is this GPU node really on the fast fabric?"};
  app.require_subcommand(1);
  int exit_code = 0;

  auto* version = app.add_subcommand("version", "Print the version");
  version->callback([] {
    std::cout << "efawatch " << EFAWATCH_VERSION << " (" << EFAWATCH_REVISION << ")"
              << (std::string(EFAWATCH_NCCL_VERSION).empty() ? ", NCCL probe not built"
                                                             : ", NCCL " EFAWATCH_NCCL_VERSION)
              << "\n";
  });

  efawatch::cli::AgentConnection status_conn;
  std::string status_format = "text";
  auto* status = app.add_subcommand("status", "Show an agent's node health");
  AddConnectionFlags(status, status_conn);
  status->add_option("--format", status_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  status->callback([&] {
    exit_code = efawatch::cli::RunStatus(status_conn, status_format, std::cout, std::cerr);
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "efawatch: " << e.what() << "\n";
    return 2;
  }
  return exit_code;
}
