// efawatch-fabric-probe: runs the fabric responder or one probe and prints JSON on stdout.
// A test and bench driver (tests/netns, bench/fabric.sh), not part of the agent.
//
//   efawatch-fabric-probe responder --provider tcp --interface lo [--address-file F]
//   efawatch-fabric-probe ping --peer HEX [--count N] [--size S] ...
//   efawatch-fabric-probe bandwidth --peer HEX [--sizes 4096,1048576] [--bidirectional|--rma] ...
//
// The responder prints one JSON line with its address once it serves, then runs until SIGINT or
// SIGTERM and prints its counters.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "probes/fabric/probe.h"
#include "probes/fabric/responder.h"

namespace {

using efawatch::fabric::FabricInfo;
using nlohmann::json;

json FabricJson(const FabricInfo& f) {
  return {{"requested", f.requested},
          {"provider", f.provider},
          {"fabric", f.fabric},
          {"domain", f.domain},
          {"api_version", absl::StrCat(FI_MAJOR(f.api_version), ".", FI_MINOR(f.api_version))},
          {"rma", f.rma},
          {"mr_local", f.mr_local},
          {"manual_progress", f.manual_progress},
          {"max_msg_size", f.max_msg_size},
          {"inject_size", f.inject_size},
          {"wait_object", f.wait_object}};
}

int Fail(const absl::Status& s) {
  std::cout << json{{"error", std::string(s.message())},
                    {"code", absl::StatusCodeToString(s.code())}}
            << std::endl;
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"efawatch fabric probe driver"};
  app.require_subcommand(1);
  std::vector<std::string> providers = {"tcp"};
  std::string interface;
  app.add_option("--provider", providers, "providers in order (repeat or comma-separate)")
      ->delimiter(',');
  app.add_option("--interface", interface, "interface or domain name, e.g. lo");

  auto* responder = app.add_subcommand("responder", "serve until SIGINT/SIGTERM");
  std::string address_file;
  size_t rx_depth = 8;
  responder->add_option("--address-file", address_file, "write the hex address here");
  responder->add_option("--rx-depth", rx_depth, "posted receives");
  efawatch::fabric::ResponderOptions ro;
  responder->add_option("--max-message-bytes", ro.max_message_bytes,
                        "largest message (and RMA sink) in bytes, header included");
  bool no_rma_sink = false;
  responder->add_flag("--no-rma-sink", no_rma_sink, "offer no sink for RMA writes");
  bool sleep_idle = false;
  responder->add_flag("--sleep-idle", sleep_idle, "sleep between idle polls, not on the CQ's fd");

  std::string peer_hex;
  auto* ping = app.add_subcommand("ping", "ping a responder");
  efawatch::fabric::PingOptions po;
  int64_t timeout_ms = 1000, deadline_ms = 10000;
  bool samples = false;
  ping->add_option("--peer", peer_hex, "responder address (hex)")->required();
  ping->add_option("--count", po.count);
  ping->add_option("--warmup", po.warmup);
  ping->add_option("--size", po.message_bytes);
  ping->add_option("--timeout-ms", timeout_ms, "per message");
  ping->add_option("--deadline-ms", deadline_ms);
  ping->add_flag("--samples", samples, "print every RTT");

  auto* bw = app.add_subcommand("bandwidth", "bandwidth sweep to a responder");
  efawatch::fabric::BandwidthOptions bo;
  int64_t per_size_ms = 200, stall_ms = 2000, bw_deadline_ms = 30000;
  bw->add_option("--peer", peer_hex, "responder address (hex)")->required();
  bw->add_option("--sizes", bo.sizes)->delimiter(',');
  bw->add_flag("--bidirectional", bo.bidirectional);
  bw->add_flag("--rma", bo.rma, "fi_write into the responder's sink (needs FI_RMA)");
  bw->add_option("--window", bo.window);
  bw->add_option("--ms-per-size", per_size_ms);
  bw->add_option("--stall-ms", stall_ms);
  bw->add_option("--deadline-ms", bw_deadline_ms);
  CLI11_PARSE(app, argc, argv);

  efawatch::fabric::EndpointOptions eo;
  eo.providers = providers;
  eo.interface = interface;

  if (responder->parsed()) {
    // Block the signals before the responder thread starts so only sigwait sees them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    ro.endpoint = eo;
    ro.rx_depth = rx_depth;
    ro.rma_sink = !no_rma_sink;
    ro.wait_fd = !sleep_idle;
    auto r = efawatch::fabric::Responder::Create(ro);
    if (!r.ok()) return Fail(r.status());
    const std::string hex = absl::BytesToHexString((*r)->address());
    if (!address_file.empty()) {
      std::ofstream(address_file + ".tmp") << hex << "\n";
      std::rename((address_file + ".tmp").c_str(), address_file.c_str());
    }
    std::cout << json{{"address", hex},
                      {"printable", (*r)->printable_address()},
                      {"fabric", FabricJson((*r)->info())}}
              << std::endl;
    int sig = 0;
    sigwait(&set, &sig);
    (*r)->Stop();
    const auto c = (*r)->counters();
    std::cout << json{{"received", c.received},       {"pings", c.pings},
                      {"bw_messages", c.bw_messages}, {"bw_bytes", c.bw_bytes},
                      {"garbage", c.garbage},         {"send_errors", c.send_errors},
                      {"recv_errors", c.recv_errors}, {"wakeups", c.wakeups},
                      {"rma_hellos", c.rma_hellos}}
              << std::endl;
    return 0;
  }

  std::string peer;
  if (peer_hex.size() % 2 != 0 ||
      peer_hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return Fail(absl::InvalidArgumentError("--peer is not a hex string"));
  }
  peer = absl::HexStringToBytes(peer_hex);
  if (ping->parsed()) {
    po.endpoint = eo;
    po.peer = peer;
    po.message_timeout = std::chrono::milliseconds(timeout_ms);
    po.deadline = std::chrono::milliseconds(deadline_ms);
    auto res = efawatch::fabric::Ping(po);
    if (!res.ok()) return Fail(res.status());
    const auto& p = *res;
    json out = {{"fabric", FabricJson(p.fabric)},
                {"local", p.local_address},
                {"peer", p.peer_address},
                {"message_bytes", p.message_bytes},
                {"sent", p.sent},
                {"received", p.received},
                {"lost", p.lost},
                {"errors", p.errors},
                {"late", p.late},
                {"loss_ratio", p.loss_ratio},
                {"end", efawatch::fabric::ProbeEndName(p.end)},
                {"last_error", p.last_error},
                {"elapsed_s", std::chrono::duration<double>(p.elapsed).count()},
                {"loop_s", std::chrono::duration<double>(p.timed_loop).count()},
                {"rtt_us",
                 {{"min", p.rtt.min_us},
                  {"median", p.rtt.median_us},
                  {"p90", p.rtt.p90_us},
                  {"p99", p.rtt.p99_us},
                  {"max", p.rtt.max_us},
                  {"mean", p.rtt.mean_us}}}};
    if (samples) out["samples_us"] = p.rtt_us;
    std::cout << out.dump() << std::endl;
    return 0;
  }
  bo.endpoint = eo;
  bo.peer = peer;
  bo.duration_per_size = std::chrono::milliseconds(per_size_ms);
  bo.stall_timeout = std::chrono::milliseconds(stall_ms);
  bo.deadline = std::chrono::milliseconds(bw_deadline_ms);
  auto res = efawatch::fabric::Bandwidth(bo);
  if (!res.ok()) return Fail(res.status());
  json points = json::array();
  for (const auto& p : res->points) {
    points.push_back({{"bytes_per_message", p.message_bytes},
                      {"messages", p.messages},
                      {"bytes", p.bytes},
                      {"seconds", p.seconds},
                      {"gbytes_per_second", p.gbytes_per_second}});
  }
  std::cout << json{{"fabric", FabricJson(res->fabric)},
                    {"local", res->local_address},
                    {"peer", res->peer_address},
                    {"bidirectional", res->bidirectional},
                    {"rma", res->rma},
                    {"window", res->window},
                    {"points", points},
                    {"errors", res->errors},
                    {"end", efawatch::fabric::ProbeEndName(res->end)},
                    {"last_error", res->last_error},
                    {"elapsed_s", std::chrono::duration<double>(res->elapsed).count()}}
                   .dump()
            << std::endl;
  return 0;
}
