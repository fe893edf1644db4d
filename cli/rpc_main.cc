// SPDX-License-Identifier: Apache-2.0
// efawatch-rpc: every command of the command-line client, the ones that call an agent over gRPC
// among them. `efawatch` (cli/main.cc) runs `analyze` itself and hands all else to this binary
// with the same arguments. Each subcommand lives in its own file; this one only wires them to
// CLI11.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/agent_doctor.h"
#include "cli/analyze_command.h"
#include "cli/doctor.h"
#include "cli/exec_beside.h"
#include "cli/fabric.h"
#include "cli/node_conditions.h"
#include "cli/status.h"
#include "cli/version_line.h"

namespace {

void AddConnectionFlags(CLI::App* cmd, efawatch::cli::AgentConnection& conn,
                        bool agent_required = true) {
  auto* agent =
      cmd->add_option("--agent", conn.address, "Agent gRPC address host:port or unix:/path");
  // EFAWATCH_AGENT: the default DaemonSet sets it to its unix socket, so `kubectl exec ...
  // efawatch status` needs no flag. Where --agent is optional, leaving it out means something
  // else (doctor: check this machine), so the environment does not fill it there.
  if (agent_required) agent->required()->envname("EFAWATCH_AGENT");
  // Operators set the environment once (docs/security.md) instead of typing four paths a call.
  cmd->add_option("--tls-ca", conn.tls_ca, "PEM CA to verify the agent")
      ->envname("EFAWATCH_TLS_CA");
  cmd->add_option("--tls-cert", conn.tls_cert, "PEM client certificate (mutual TLS)")
      ->envname("EFAWATCH_TLS_CERT");
  cmd->add_option("--tls-key", conn.tls_key, "PEM client key (mutual TLS)")
      ->envname("EFAWATCH_TLS_KEY");
  cmd->add_option("--tls-server-name", conn.tls_server_name, "Name expected in the agent cert")
      ->envname("EFAWATCH_TLS_SERVER_NAME");
  cmd->add_option_function<int>(
         "--timeout-ms", [&conn](int ms) { conn.timeout = std::chrono::milliseconds(ms); },
         "Give up after this long (default 5000)")
      ->check(CLI::Range(1, 600000));
}

// A subcommand's values. CLI11 writes into them while parsing and the subcommand's callback
// reads them afterwards, so they live in main() until the parse returns.
struct AgentCommand {
  efawatch::cli::AgentConnection conn;
  std::string format = "text";
};
template <typename Args>
struct ProbeCommand : AgentCommand {
  Args args;
};
std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq != std::string_view::npos) env[std::string(kv.substr(0, eq))] = kv.substr(eq + 1);
  }
  return env;
}

void AddDoctorCommand(CLI::App& app, efawatch::cli::DoctorArgs& args,
                      efawatch::cli::AgentConnection& conn, int& exit_code) {
  auto* doctor = app.add_subcommand(
      "doctor",
      "Check this node, an image (--root), a process (--pid) or an agent's node (--agent) for "
      "EFA and NCCL");
  doctor->add_option("--root", args.root, "a mounted image or node filesystem");
  doctor->add_option("--pid", args.pid, "a running process (from the host: needs root)");
  efawatch::cli::AddFormatOption(doctor, args.format);
  AddConnectionFlags(doctor, conn, /*agent_required=*/false);
  doctor->callback([&] {
    exit_code = conn.address.empty()
                    ? efawatch::cli::RunDoctor(args, Environment(), std::cout, std::cerr)
                    : efawatch::cli::RunAgentDoctor(conn, args.format, std::cout, std::cerr);
  });
}

void AddVersionCommand(CLI::App& app) {
  auto* version = app.add_subcommand("version", "Print the version");
  version->callback([] { std::cout << efawatch::cli::VersionLine() << "\n"; });
}

void AddNodeConditionsCommand(CLI::App& app, efawatch::cli::NodeConditionsArgs& args,
                              int& exit_code) {
  auto* cmd = app.add_subcommand("node-conditions",
                                 "List the nodes carrying the agent's NodeConditions (EfaHealthy, "
                                 "FabricReachable, FabricReady); "
                                 "--clear removes them (uninstall, docs/deploy.md)");
  cmd->add_flag("--clear", args.clear, "Remove them (a strategic merge patch of nodes/status)");
  cmd->add_option("--node", args.node, "Only this node (default: every node)");
  cmd->add_option("--api-server", args.api.api_server,
                  "https://host:port (default: the in-cluster service)");
  cmd->add_option("--token-file", args.api.token_file, "Bearer token (default: service account)");
  cmd->add_option("--ca-file", args.api.ca_file, "API server CA (default: service account)");
  cmd->callback([&] { exit_code = efawatch::cli::RunNodeConditions(args, std::cout, std::cerr); });
}

void AddStatusCommand(CLI::App& app, AgentCommand& cmd, int& exit_code) {
  auto* status = app.add_subcommand("status", "Show an agent's node health");
  AddConnectionFlags(status, cmd.conn);
  efawatch::cli::AddFormatOption(status, cmd.format);
  status->callback(
      [&] { exit_code = efawatch::cli::RunStatus(cmd.conn, cmd.format, std::cout, std::cerr); });
}

void AddPingCommand(CLI::App& app, ProbeCommand<efawatch::cli::PingArgs>& cmd, int& exit_code) {
  auto* ping = app.add_subcommand("ping", "Ping another agent over the fabric, from --agent");
  AddConnectionFlags(ping, cmd.conn);
  ping->add_option("--peer", cmd.args.peer, "The other agent's gRPC address host:port")->required();
  ping->add_option("--count", cmd.args.count, "Messages (default 100)");
  ping->add_option("--size", cmd.args.size, "Bytes per message (default 64)");
  ping->add_option("--deadline-ms", cmd.args.deadline_ms, "Whole probe (default 10000)");
  ping->add_option("--message-timeout-ms", cmd.args.timeout_ms, "Per message (default 1000)");
  efawatch::cli::AddFormatOption(ping, cmd.format);
  ping->callback([&] {
    exit_code = efawatch::cli::RunPing(cmd.conn, cmd.args, cmd.format, std::cout, std::cerr);
  });
}

void AddBandwidthCommand(CLI::App& app, ProbeCommand<efawatch::cli::BandwidthArgs>& cmd,
                         int& exit_code) {
  auto* bw = app.add_subcommand("bandwidth", "Bandwidth to another agent over the fabric");
  AddConnectionFlags(bw, cmd.conn);
  bw->add_option("--peer", cmd.args.peer, "The other agent's gRPC address host:port")->required();
  bw->add_option("--sizes", cmd.args.sizes, "Message sizes, comma-separated (default 4K..8M)")
      ->delimiter(',');
  bw->add_flag("--bidirectional", cmd.args.bidirectional, "The peer echoes every message");
  bw->add_flag("--rma", cmd.args.rma,
               "RMA writes (fi_write) into the peer's sink; needs FI_RMA on both agents");
  bw->add_option("--window", cmd.args.window, "Messages in flight (default 16)");
  bw->add_option("--ms-per-size", cmd.args.ms_per_size, "Time per size (default 200)");
  bw->add_option("--deadline-ms", cmd.args.deadline_ms, "Whole probe (default 30000)");
  efawatch::cli::AddFormatOption(bw, cmd.format);
  bw->callback([&] {
    exit_code = efawatch::cli::RunBandwidth(cmd.conn, cmd.args, cmd.format, std::cout, std::cerr);
  });
}

void AddCollectiveCommand(CLI::App& app, ProbeCommand<efawatch::cli::CollectiveArgs>& cmd,
                          int& exit_code) {
  auto* coll = app.add_subcommand(
      "collective",
      "Collective bandwidth across agents (nccl-tests-like table), coordinated by "
      "--agent (default: the first of --agents)");
  AddConnectionFlags(coll, cmd.conn, /*agent_required=*/false);
  coll->add_option("--agents", cmd.args.agents, "Participants' gRPC addresses, comma-separated")
      ->delimiter(',')
      ->required();
  coll->add_option("--op", cmd.args.op, "all_reduce, all_gather, reduce_scatter or broadcast");
  coll->add_option("--sizes", cmd.args.sizes, "MIN:MAX[:FACTOR] or a list (default 1M:16M:4)");
  coll->add_option("--backend", cmd.args.backend, "host or nccl (default host)")
      ->check(CLI::IsMember({"host", "nccl"}));
  coll->add_option("--warmup", cmd.args.warmup, "Untimed iterations per size (default 2)");
  coll->add_option("--iters", cmd.args.iters, "Timed iterations per size (default 10)");
  coll->add_option("--deadline-ms", cmd.args.deadline_ms, "Whole probe (default 60000)");
  efawatch::cli::AddFormatOption(coll, cmd.format);
  coll->callback([&] {
    exit_code = efawatch::cli::RunCollective(cmd.conn, cmd.args, cmd.format, std::cout, std::cerr);
  });
}

}  // namespace

int main(int argc, char** argv) {
  // `efawatch admission` execs efawatch-admission itself; reached here when efawatch-rpc is
  // started directly.
  if (argc >= 2 && std::string_view(argv[1]) == "admission") {
    return efawatch::cli::ExecBeside(argv, "efawatch-admission",
                                     "install it beside efawatch-rpc (docs/admission.md)");
  }
  CLI::App app{"efawatch: is this GPU node really on the fast fabric?"};
  app.require_subcommand(1);
  int exit_code = 0;
  AgentCommand status;
  ProbeCommand<efawatch::cli::PingArgs> ping;
  ProbeCommand<efawatch::cli::BandwidthArgs> bandwidth;
  ProbeCommand<efawatch::cli::CollectiveArgs> collective;
  efawatch::cli::AnalyzeCommand analyze;
  efawatch::cli::DoctorArgs doctor;
  efawatch::cli::AgentConnection doctor_agent;
  efawatch::cli::NodeConditionsArgs node_conditions;
  // `efawatch --version` as every other tool answers it; `efawatch version` stays.
  app.set_version_flag("--version", efawatch::cli::VersionLine());
  AddVersionCommand(app);
  AddNodeConditionsCommand(app, node_conditions, exit_code);
  AddStatusCommand(app, status, exit_code);
  AddPingCommand(app, ping, exit_code);
  AddBandwidthCommand(app, bandwidth, exit_code);
  AddCollectiveCommand(app, collective, exit_code);
  efawatch::cli::AddAnalyzeCommand(app, analyze, exit_code);
  AddDoctorCommand(app, doctor, doctor_agent, exit_code);
  // Listed for --help only: main() hands it to efawatch-admission before parsing.
  app.add_subcommand("admission",
                     "Serve the validating admission webhook that warns about (or denies) pods "
                     "whose settings keep NCCL off EFA (efawatch-admission; docs/admission.md)")
      ->prefix_command();

  return efawatch::cli::ParseAndRun(app, argc, argv, analyze, exit_code);
}
