// SPDX-License-Identifier: Apache-2.0
// efawatch-fabric-probe: runs the fabric responder or one probe and prints JSON on stdout.
// A test and bench driver (tests/netns, bench/fabric.sh), not part of the agent.
//
//   efawatch-fabric-probe responder --provider tcp --interface lo [--address-file F]
//                                   [--answered-file G]
//   efawatch-fabric-probe ping --peer HEX [--count N] [--size S] ...
//   efawatch-fabric-probe bandwidth --peer HEX [--sizes 4096,1048576] [--bidirectional|--rma] ...
//   efawatch-fabric-probe forge --peer HEX --claim HEX [--count N] [--introduce]
//
// `forge` plays an attacker for the security tests: it sends kPing messages whose header claims
// another sender (--claim), after introducing its own address first with --introduce, and
// reports whether anything came back to it.
//
// The responder prints one JSON line with its address once it serves, then runs until SIGINT or
// SIGTERM and prints its counters.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/escaping.h"
#include "nlohmann/json.hpp"
#include "probes/fabric/message.h"
#include "probes/fabric/probe.h"
#include "probes/fabric/responder.h"
#include "probes/fabric/tools/raw_peer.h"

namespace {

using efawatch::fabric::BandwidthResult;
using efawatch::fabric::EndpointOptions;
using efawatch::fabric::FabricInfo;
using efawatch::fabric::PingResult;
using efawatch::fabric::ResponderCounters;
using nlohmann::json;

// What the command line sets. CLI11 writes into these fields while it parses, so they live in
// main() for the whole run and the subcommands only read them afterwards.
struct Flags {
  std::vector<std::string> providers = {"tcp"};
  std::string interface;
  std::string peer_hex;  // ping and bandwidth

  std::string address_file;
  std::string answered_file;
  size_t rx_depth = 8;
  efawatch::fabric::ResponderOptions responder;
  bool no_rma_sink = false;
  bool sleep_idle = false;
  bool no_verify_source = false;

  efawatch::fabric::PingOptions ping;
  int64_t timeout_ms = 1000, deadline_ms = 10000;
  bool samples = false;

  std::string claim_hex;  // forge
  uint32_t forge_count = 10;
  bool introduce = false;
  int64_t listen_ms = 500;

  efawatch::fabric::BandwidthOptions bandwidth;
  int64_t per_size_ms = 200, stall_ms = 2000, bw_deadline_ms = 30000;
};

json FabricJson(const FabricInfo& f) {
  return {{"requested", f.requested},
          {"provider", f.provider},
          {"fabric", f.fabric},
          {"domain", f.domain},
          {"api_version", absl::StrCat(FI_MAJOR(f.api_version), ".", FI_MINOR(f.api_version))},
          {"rma", f.rma},
          {"source", f.source},
          {"mr_local", f.mr_local},
          {"manual_progress", f.manual_progress},
          {"max_msg_size", f.max_msg_size},
          {"inject_size", f.inject_size},
          {"wait_object", f.wait_object}};
}

json CountersJson(const ResponderCounters& c) {
  return {{"received", c.received},       {"pings", c.pings},     {"bw_messages", c.bw_messages},
          {"bw_bytes", c.bw_bytes},       {"garbage", c.garbage}, {"send_errors", c.send_errors},
          {"recv_errors", c.recv_errors}, {"wakeups", c.wakeups}, {"rma_hellos", c.rma_hellos},
          {"unverified", c.unverified},   {"spoofed", c.spoofed}};
}

json PingJson(const PingResult& p, bool samples) {
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
  return out;
}

json BandwidthJson(const BandwidthResult& r) {
  json points = json::array();
  for (const auto& p : r.points) {
    points.push_back({{"bytes_per_message", p.message_bytes},
                      {"messages", p.messages},
                      {"bytes", p.bytes},
                      {"seconds", p.seconds},
                      {"gbytes_per_second", p.gbytes_per_second}});
  }
  return {{"fabric", FabricJson(r.fabric)},
          {"local", r.local_address},
          {"peer", r.peer_address},
          {"bidirectional", r.bidirectional},
          {"rma", r.rma},
          {"window", r.window},
          {"points", points},
          {"errors", r.errors},
          {"end", efawatch::fabric::ProbeEndName(r.end)},
          {"last_error", r.last_error},
          {"elapsed_s", std::chrono::duration<double>(r.elapsed).count()}};
}

int Fail(const absl::Status& s) {
  std::cout << json{{"error", std::string(s.message())},
                    {"code", absl::StatusCodeToString(s.code())}}
            << std::endl;
  return 1;
}

CLI::App* AddResponderCommand(CLI::App& app, Flags& f) {
  auto* responder = app.add_subcommand("responder", "serve until SIGINT/SIGTERM");
  responder->add_option("--address-file", f.address_file, "write the hex address here");
  responder->add_option("--answered-file", f.answered_file,
                        "write this file once the first ping is answered (tests wait on it)");
  responder->add_option("--rx-depth", f.rx_depth, "posted receives");
  responder->add_option("--max-message-bytes", f.responder.max_message_bytes,
                        "largest message (and RMA sink) in bytes, header included");
  responder->add_flag("--no-rma-sink", f.no_rma_sink, "offer no sink for RMA writes");
  responder->add_flag("--sleep-idle", f.sleep_idle, "sleep between idle polls, not on the CQ's fd");
  responder->add_flag("--no-verify-source", f.no_verify_source,
                      "answer the sender a message claims, unchecked (comparisons only)");
  return responder;
}

CLI::App* AddPingCommand(CLI::App& app, Flags& f) {
  auto* ping = app.add_subcommand("ping", "ping a responder");
  ping->add_option("--peer", f.peer_hex, "responder address (hex)")->required();
  ping->add_option("--count", f.ping.count);
  ping->add_option("--warmup", f.ping.warmup);
  ping->add_option("--size", f.ping.message_bytes);
  ping->add_option("--timeout-ms", f.timeout_ms, "per message");
  ping->add_option("--deadline-ms", f.deadline_ms);
  ping->add_flag("--samples", f.samples, "print every RTT");
  return ping;
}

CLI::App* AddBandwidthCommand(CLI::App& app, Flags& f) {
  auto* bw = app.add_subcommand("bandwidth", "bandwidth sweep to a responder");
  bw->add_option("--peer", f.peer_hex, "responder address (hex)")->required();
  bw->add_option("--sizes", f.bandwidth.sizes)->delimiter(',');
  bw->add_flag("--bidirectional", f.bandwidth.bidirectional);
  bw->add_flag("--rma", f.bandwidth.rma, "fi_write into the responder's sink (needs FI_RMA)");
  bw->add_option("--window", f.bandwidth.window);
  bw->add_option("--ms-per-size", f.per_size_ms);
  bw->add_option("--stall-ms", f.stall_ms);
  bw->add_option("--deadline-ms", f.bw_deadline_ms);
  return bw;
}

CLI::App* AddForgeCommand(CLI::App& app, Flags& f) {
  auto* forge = app.add_subcommand("forge", "send pings that claim another sender (tests)");
  forge->add_option("--peer", f.peer_hex, "responder address (hex)")->required();
  forge->add_option("--claim", f.claim_hex, "sender address the pings claim (hex)")->required();
  forge->add_option("--count", f.forge_count, "forged pings to send");
  forge->add_flag("--introduce", f.introduce,
                  "first get a hello answered with this endpoint's true address");
  forge->add_option("--listen-ms", f.listen_ms, "how long to wait for anything coming back");
  return forge;
}

// Blocks SIGINT and SIGTERM in this thread, and so in every thread started after it, so that
// only sigwait() sees them. Returns the set to wait on.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Written to a temporary name and renamed, so a reader polling for the file never sees half an
// address.
void WriteAddressFile(const std::string& path, const std::string& hex) {
  std::ofstream(path + ".tmp") << hex << "\n";
  std::rename((path + ".tmp").c_str(), path.c_str());
}

int RunResponder(const Flags& f, const EndpointOptions& eo) {
  // Before the responder thread starts, so that it inherits the blocked signals.
  sigset_t set = BlockStopSignals();
  efawatch::fabric::ResponderOptions ro = f.responder;
  ro.endpoint = eo;
  ro.rx_depth = f.rx_depth;
  ro.rma_sink = !f.no_rma_sink;
  ro.wait_fd = !f.sleep_idle;
  ro.verify_source = !f.no_verify_source;
  auto r = efawatch::fabric::Responder::Create(ro);
  if (!r.ok()) return Fail(r.status());
  const std::string hex = absl::BytesToHexString((*r)->address());
  if (!f.address_file.empty()) WriteAddressFile(f.address_file, hex);
  std::cout << json{{"address", hex},
                    {"printable", (*r)->printable_address()},
                    {"fabric", FabricJson((*r)->info())}}
            << std::endl;
  // Waits for SIGINT/SIGTERM; with --answered-file, looks every 10 ms for the first answered
  // ping meanwhile, so a test can act on the probe being under way instead of sleeping.
  bool announced = f.answered_file.empty();
  const timespec step{0, 10'000'000};
  while (sigtimedwait(&set, nullptr, announced ? nullptr : &step) <= 0) {
    if (!announced && (*r)->counters().pings > 0) {
      WriteAddressFile(f.answered_file, std::to_string((*r)->counters().pings));
      announced = true;
    }
  }
  (*r)->Stop();
  std::cout << CountersJson((*r)->counters()) << std::endl;
  return 0;
}

int RunPing(const Flags& f, const EndpointOptions& eo, const std::string& peer) {
  efawatch::fabric::PingOptions po = f.ping;
  po.endpoint = eo;
  po.peer = peer;
  po.message_timeout = std::chrono::milliseconds(f.timeout_ms);
  po.deadline = std::chrono::milliseconds(f.deadline_ms);
  auto res = efawatch::fabric::Ping(po);
  if (!res.ok()) return Fail(res.status());
  std::cout << PingJson(*res, f.samples).dump() << std::endl;
  return 0;
}

int RunBandwidth(const Flags& f, const EndpointOptions& eo, const std::string& peer) {
  efawatch::fabric::BandwidthOptions bo = f.bandwidth;
  bo.endpoint = eo;
  bo.peer = peer;
  bo.duration_per_size = std::chrono::milliseconds(f.per_size_ms);
  bo.stall_timeout = std::chrono::milliseconds(f.stall_ms);
  bo.deadline = std::chrono::milliseconds(f.bw_deadline_ms);
  auto res = efawatch::fabric::Bandwidth(bo);
  if (!res.ok()) return Fail(res.status());
  std::cout << BandwidthJson(*res).dump() << std::endl;
  return 0;
}

int RunForge(const Flags& f, const EndpointOptions& eo, const std::string& peer,
             const std::string& claim) {
  using efawatch::fabric::MessageType;
  auto forger = efawatch::fabric::tools::RawPeer::Create(eo, peer);
  if (!forger.ok()) return Fail(forger.status());
  efawatch::fabric::tools::RawPeer& fg = **forger;
  auto acked = [&] {
    const auto& a = fg.arrived();
    return std::find(a.begin(), a.end(), MessageType::kHelloAck) != a.end();
  };
  efawatch::fabric::MessageHeader h;
  h.session = 42;
  if (f.introduce) {
    h.type = MessageType::kHello;
    h.sender = fg.address();
    for (int i = 0; i < 20 && !acked(); ++i) {
      if (absl::Status s = fg.Send(h); !s.ok()) return Fail(s);
      fg.PollUntil(acked, std::chrono::milliseconds(20 * (i + 1)));
    }
  }
  const bool introduced = acked();
  const size_t before = fg.arrived().size() + fg.garbage();
  h.type = MessageType::kPing;
  h.sender = claim;
  for (uint32_t i = 0; i < f.forge_count; ++i) {
    h.seq = i;
    if (absl::Status s = fg.Send(h); !s.ok()) return Fail(s);
  }
  fg.PollFor(std::chrono::milliseconds(f.listen_ms));
  std::cout << json{{"introduced", introduced},
                    {"sent", f.forge_count},
                    {"received_back", fg.arrived().size() + fg.garbage() - before}}
            << std::endl;
  return 0;
}

bool IsHex(const std::string& s) {
  return s.size() % 2 == 0 && s.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"efawatch fabric probe driver"};
  app.require_subcommand(1);
  Flags f;
  app.add_option("--provider", f.providers, "providers in order (repeat or comma-separate)")
      ->delimiter(',');
  app.add_option("--interface", f.interface, "interface or domain name, e.g. lo");
  CLI::App* responder = AddResponderCommand(app, f);
  CLI::App* ping = AddPingCommand(app, f);
  CLI::App* bandwidth = AddBandwidthCommand(app, f);
  CLI::App* forge = AddForgeCommand(app, f);
  CLI11_PARSE(app, argc, argv);

  efawatch::fabric::EndpointOptions eo;
  eo.providers = f.providers;
  eo.interface = f.interface;
  if (responder->parsed()) return RunResponder(f, eo);
  if (!IsHex(f.peer_hex)) return Fail(absl::InvalidArgumentError("--peer is not a hex string"));
  const std::string peer = absl::HexStringToBytes(f.peer_hex);
  if (ping->parsed()) return RunPing(f, eo, peer);
  if (bandwidth->parsed()) return RunBandwidth(f, eo, peer);
  if (!forge->parsed() || !IsHex(f.claim_hex)) {
    return Fail(absl::InvalidArgumentError("--claim is not a hex string"));
  }
  return RunForge(f, eo, peer, absl::HexStringToBytes(f.claim_hex));
}
