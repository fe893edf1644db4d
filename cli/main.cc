// efawatch: the command-line client. Each subcommand lives in its own file; this one only wires
// them to CLI11.
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/analyze.h"
#include "cli/fabric.h"
#include "cli/status.h"
#include "efawatch/version.h"

namespace {

void AddConnectionFlags(CLI::App* cmd, efawatch::cli::AgentConnection& conn,
                        bool agent_required = true) {
  auto* agent = cmd->add_option("--agent", conn.address, "Agent gRPC address host:port");
  if (agent_required) agent->required();
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
  if (argc > 1 && std::string_view(argv[1]) == "analyze")
    efawatch::cli::ReexecWithHugePageHeap(argv);
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

  efawatch::cli::AgentConnection ping_conn;
  efawatch::cli::PingArgs ping_args;
  std::string ping_format = "text";
  auto* ping = app.add_subcommand("ping", "Ping another agent over the fabric, from --agent");
  AddConnectionFlags(ping, ping_conn);
  ping->add_option("--peer", ping_args.peer, "The other agent's gRPC address host:port")
      ->required();
  ping->add_option("--count", ping_args.count, "Messages (default 100)");
  ping->add_option("--size", ping_args.size, "Bytes per message (default 64)");
  ping->add_option("--deadline-ms", ping_args.deadline_ms, "Whole probe (default 10000)");
  ping->add_option("--message-timeout-ms", ping_args.timeout_ms, "Per message (default 1000)");
  ping->add_option("--format", ping_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  ping->callback([&] {
    exit_code = efawatch::cli::RunPing(ping_conn, ping_args, ping_format, std::cout, std::cerr);
  });

  efawatch::cli::AgentConnection bw_conn;
  efawatch::cli::BandwidthArgs bw_args;
  std::string bw_format = "text";
  auto* bw = app.add_subcommand("bandwidth", "Bandwidth to another agent over the fabric");
  AddConnectionFlags(bw, bw_conn);
  bw->add_option("--peer", bw_args.peer, "The other agent's gRPC address host:port")->required();
  bw->add_option("--sizes", bw_args.sizes, "Message sizes, comma-separated (default 4K..8M)")
      ->delimiter(',');
  bw->add_flag("--bidirectional", bw_args.bidirectional, "The peer echoes every message");
  bw->add_flag("--rma", bw_args.rma,
               "RMA writes (fi_write) into the peer's sink; needs FI_RMA on both agents");
  bw->add_option("--window", bw_args.window, "Messages in flight (default 16)");
  bw->add_option("--ms-per-size", bw_args.ms_per_size, "Time per size (default 200)");
  bw->add_option("--deadline-ms", bw_args.deadline_ms, "Whole probe (default 30000)");
  bw->add_option("--format", bw_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  bw->callback([&] {
    exit_code = efawatch::cli::RunBandwidth(bw_conn, bw_args, bw_format, std::cout, std::cerr);
  });

  efawatch::cli::AgentConnection coll_conn;
  efawatch::cli::CollectiveArgs coll_args;
  std::string coll_format = "text";
  auto* coll = app.add_subcommand(
      "collective",
      "Collective bandwidth across agents (nccl-tests-like table), coordinated by "
      "--agent (default: the first of --agents)");
  AddConnectionFlags(coll, coll_conn, /*agent_required=*/false);
  coll->add_option("--agents", coll_args.agents, "Participants' gRPC addresses, comma-separated")
      ->delimiter(',')
      ->required();
  coll->add_option("--op", coll_args.op, "all_reduce, all_gather, reduce_scatter or broadcast");
  coll->add_option("--sizes", coll_args.sizes, "MIN:MAX[:FACTOR] or a list (default 1M:16M:4)");
  coll->add_option("--backend", coll_args.backend, "host or nccl (default host)")
      ->check(CLI::IsMember({"host", "nccl"}));
  coll->add_option("--warmup", coll_args.warmup, "Untimed iterations per size (default 2)");
  coll->add_option("--iters", coll_args.iters, "Timed iterations per size (default 10)");
  coll->add_option("--deadline-ms", coll_args.deadline_ms, "Whole probe (default 60000)");
  coll->add_option("--format", coll_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  coll->callback([&] {
    exit_code =
        efawatch::cli::RunCollective(coll_conn, coll_args, coll_format, std::cout, std::cerr);
  });

  std::vector<std::string> analyze_files;
  std::string analyze_format = "text";
  auto* analyze =
      app.add_subcommand("analyze", "Analyze NCCL_DEBUG=INFO logs (plain, CRI, docker json, .gz)");
  analyze->add_option("--format", analyze_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  unsigned analyze_threads = 0;
  analyze
      ->add_option("--threads", analyze_threads,
                   "parts of a large file analyzed at once (0: one per CPU for files >= 32 MiB)")
      ->check(CLI::Range(0u, 64u));
  analyze->add_option("files", analyze_files, "log files, - for stdin")->required();
  analyze->callback([&] {
    exit_code = efawatch::cli::RunAnalyze(analyze_files, analyze_format, analyze_threads, std::cout,
                                          std::cerr);
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
