// SPDX-License-Identifier: Apache-2.0
// A real responder and real probes over libfabric providers on 127.0.0.1, in one process (and a
// second process for the SIGKILL case). Bounds are generous: CI machines are small and shared,
// so the assertions are about correctness and boundedness, not speed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "probes/fabric/endpoint.h"
#include "probes/fabric/message.h"
#include "probes/fabric/probe.h"
#include "probes/fabric/responder.h"
#include "probes/fabric/tools/raw_peer.h"

namespace efawatch::fabric {
namespace {

using std::chrono::milliseconds;

// libfabric's shm provider names its regions /dev/shm/<pid>:<n>:<m>. One left by a SIGKILLed
// process whose pid this process now has makes fi_enable fail with EBUSY (seen twice in repeated
// runs); at start this process has made none, so any such file is stale.
const bool kStaleShmRegionsRemoved = [] {
  const std::string prefix = std::to_string(getpid()) + ":";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) std::filesystem::remove(e.path(), ec);
  }
  return true;
}();

struct Provider {
  const char* name;
  const char* interface;
  // shm in libfabric 1.17 segfaults (pthread_spin_lock in the peer's unmapped region) when a peer
  // endpoint in the same process closes while we still send to it; across processes the region
  // outlives the peer. The vanishing-peer tests skip it.
  bool peer_can_vanish_in_process = true;
};

std::string Name(const testing::TestParamInfo<Provider>& p) { return p.param.name; }

class FabricProbeTest : public testing::TestWithParam<Provider> {
 protected:
  EndpointOptions Fabric() const {
    EndpointOptions o;
    o.providers = {GetParam().name};
    o.interface = GetParam().interface;
    return o;
  }

  std::unique_ptr<Responder> StartResponder(bool wait_fd = true) {
    ResponderOptions o;
    o.endpoint = Fabric();
    o.wait_fd = wait_fd;
    auto r = Responder::Create(o);
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return nullptr;
    }
    return *std::move(r);
  }

  PingOptions PingTo(const std::string& peer) const {
    PingOptions o;
    o.endpoint = Fabric();
    o.peer = peer;
    o.count = 200;
    o.message_bytes = 256;
    o.message_timeout = milliseconds(1000);
    o.deadline = milliseconds(20000);
    return o;
  }
};

TEST_P(FabricProbeTest, ReportsWhatWasSelected) {
  auto r = StartResponder();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->info().requested, GetParam().name);
  EXPECT_NE(r->info().provider.find(GetParam().name), std::string::npos) << r->info().provider;
  EXPECT_FALSE(r->info().fabric.empty());
  EXPECT_FALSE(r->info().domain.empty());
  EXPECT_FALSE(r->address().empty());
  EXPECT_FALSE(r->printable_address().empty());
  EXPECT_GE(r->info().api_version, FI_VERSION(1, 17));
}

TEST_P(FabricProbeTest, PingSucceedsWithSaneRtt) {
  auto r = StartResponder();
  ASSERT_NE(r, nullptr);
  auto res = Ping(PingTo(r->address()));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->end, ProbeEnd::kCompleted) << res->last_error;
  EXPECT_EQ(res->sent, 200u);
  EXPECT_EQ(res->received, 200u);
  EXPECT_EQ(res->lost, 0u);
  EXPECT_EQ(res->errors, 0u);
  EXPECT_EQ(res->loss_ratio, 0);
  EXPECT_EQ(res->rtt.count, 200u);
  EXPECT_GT(res->rtt.min_us, 0);
  EXPECT_LE(res->rtt.min_us, res->rtt.median_us);
  EXPECT_LE(res->rtt.median_us, res->rtt.p90_us);
  EXPECT_LE(res->rtt.p90_us, res->rtt.p99_us);
  EXPECT_LE(res->rtt.p99_us, res->rtt.max_us);
  EXPECT_LT(res->rtt.median_us, 100000) << "a loopback RTT median above 100 ms is broken";
  EXPECT_EQ(res->message_bytes, 256u);
  EXPECT_GE(r->counters().pings, 210u);  // warm-up included
}

TEST_P(FabricProbeTest, BandwidthUniAndBidirectional) {
  auto r = StartResponder();
  ASSERT_NE(r, nullptr);
  for (bool bidi : {false, true}) {
    BandwidthOptions o;
    o.endpoint = Fabric();
    o.peer = r->address();
    o.sizes = {4096, 1 << 20};
    o.bidirectional = bidi;
    o.duration_per_size = milliseconds(100);
    auto res = Bandwidth(o);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_EQ(res->end, ProbeEnd::kCompleted) << res->last_error;
    ASSERT_EQ(res->points.size(), 2u);
    EXPECT_GT(res->window, 0u);
    for (const BandwidthPoint& p : res->points) {
      EXPECT_GT(p.messages, 0u);
      EXPECT_EQ(p.bytes, p.messages * p.message_bytes) << "every delivered message is whole";
      EXPECT_GT(p.seconds, 0.09);
      EXPECT_GT(p.gbytes_per_second, 0.0005) << "below 0.5 MB/s on loopback is broken";
      EXPECT_LT(p.gbytes_per_second, 1000);
    }
  }
  EXPECT_GT(r->counters().bw_bytes, 0u);
  EXPECT_EQ(r->counters().garbage, 0u);
}

// RMA writes into the responder's sink where the provider has FI_RMA (tcp;ofi_rxm does); a clean
// FAILED_PRECONDITION where it does not.
TEST_P(FabricProbeTest, RmaWriteBandwidthWhereTheProviderHasRma) {
  auto r = StartResponder();
  ASSERT_NE(r, nullptr);
  BandwidthOptions o;
  o.endpoint = Fabric();
  o.peer = r->address();
  o.sizes = {4096, 1 << 20};
  o.rma = true;
  o.duration_per_size = milliseconds(100);
  auto res = Bandwidth(o);
  if (!r->info().rma) {
    EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition) << res.status();
    return;
  }
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_TRUE(res->rma);
  EXPECT_EQ(res->end, ProbeEnd::kCompleted) << res->last_error;
  EXPECT_EQ(res->errors, 0u) << res->last_error;
  ASSERT_EQ(res->points.size(), 2u);
  for (const BandwidthPoint& p : res->points) {
    EXPECT_GT(p.messages, 0u);
    EXPECT_EQ(p.bytes, p.messages * p.message_bytes);
    EXPECT_GT(p.gbytes_per_second, 0.0005) << "below 0.5 MB/s on loopback is broken";
  }
  const ResponderCounters c = r->counters();
  EXPECT_EQ(c.rma_hellos, 1u);
  EXPECT_EQ(c.bw_messages, 0u) << "writes are one-sided: no message reaches the responder";
  EXPECT_EQ(c.garbage, 0u);
  EXPECT_EQ(c.recv_errors, 0u);
}

TEST_P(FabricProbeTest, RmaIsRefusedWhenTheResponderOffersNoSink) {
  ResponderOptions ro;
  ro.endpoint = Fabric();
  ro.rma_sink = false;
  auto r = Responder::Create(ro);
  ASSERT_TRUE(r.ok()) << r.status();
  BandwidthOptions o;
  o.endpoint = Fabric();
  o.peer = (*r)->address();
  o.sizes = {4096};
  o.rma = true;
  o.duration_per_size = milliseconds(50);
  o.deadline = milliseconds(20000);
  auto res = Bandwidth(o);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition) << res.status();
  EXPECT_THAT(std::string(res.status().message()), testing::HasSubstr("RMA"));
}

TEST_P(FabricProbeTest, StoppedResponderGivesTimeoutWithinDeadline) {
  if (!GetParam().peer_can_vanish_in_process) {
    GTEST_SKIP() << GetParam().name << " crashes when an in-process peer closes (libfabric 1.17)";
  }
  auto r = StartResponder();
  ASSERT_NE(r, nullptr);
  PingOptions o = PingTo(r->address());
  o.count = 1000000;
  o.message_timeout = milliseconds(200);
  o.deadline = milliseconds(3000);
  absl::StatusOr<PingResult> res;
  std::jthread prober([&] { res = Ping(o); });
  // Stop once it has answered for a while (a loaded CI machine may take long to get there).
  for (int i = 0; i < 3000 && r->counters().pings < 30; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_GE(r->counters().pings, 30u) << "the probe never got going";
  r.reset();  // Closes the endpoint: the peer vanishes mid-probe.
  const auto t0 = std::chrono::steady_clock::now();
  prober.join();
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_NE(res->end, ProbeEnd::kCompleted);
  EXPECT_GT(res->lost + res->errors, 0u);
  EXPECT_GT(res->received, 0u) << "it did answer before it stopped";
  EXPECT_LT(res->elapsed, milliseconds(4000));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(4000));
}

TEST_P(FabricProbeTest, DeadPeerGivesCleanTimeoutForBothProbes) {
  if (!GetParam().peer_can_vanish_in_process) {
    GTEST_SKIP() << GetParam().name << " crashes when an in-process peer closes (libfabric 1.17)";
  }
  std::string dead;
  {
    auto r = StartResponder();
    ASSERT_NE(r, nullptr);
    dead = r->address();
  }
  PingOptions po = PingTo(dead);
  po.count = 10;
  po.warmup = 0;
  po.message_timeout = milliseconds(100);
  po.deadline = milliseconds(2000);
  auto ping = Ping(po);
  ASSERT_TRUE(ping.ok()) << ping.status();
  EXPECT_EQ(ping->received, 0u);
  EXPECT_EQ(ping->lost + ping->errors, 10u);
  EXPECT_EQ(ping->loss_ratio, 1.0);
  EXPECT_NE(ping->end, ProbeEnd::kCompleted);
  EXPECT_LT(ping->elapsed, milliseconds(3000));

  BandwidthOptions bo;
  bo.endpoint = Fabric();
  bo.peer = dead;
  bo.stall_timeout = milliseconds(500);
  bo.deadline = milliseconds(2000);
  auto bw = Bandwidth(bo);
  ASSERT_TRUE(bw.ok()) << bw.status();
  EXPECT_TRUE(bw->points.empty());
  EXPECT_NE(bw->end, ProbeEnd::kCompleted);
  EXPECT_LT(bw->elapsed, milliseconds(3000));
}

TEST_P(FabricProbeTest, StopTokenCancelsAProbeInFlight) {
  // The prober's endpoint closes while the responder may still be replying to it: shm in
  // libfabric 1.17 crashed the responder here (1 run in 8 of --repeat until-fail).
  if (!GetParam().peer_can_vanish_in_process) {
    GTEST_SKIP() << GetParam().name << " crashes when an in-process peer closes (libfabric 1.17)";
  }
  auto r = StartResponder();
  ASSERT_NE(r, nullptr);
  PingOptions o = PingTo(r->address());
  o.count = 1000000;  // seconds of round trips on any provider: still running when stopped
  o.deadline = milliseconds(60000);
  std::stop_source stop;
  absl::StatusOr<PingResult> res;
  std::jthread prober([&] { res = Ping(o, stop.get_token()); });
  // Stopped once the responder has answered: the probe is surely under way, however long its
  // endpoint took to open (a fixed sleep raced a dead peer's fast failures).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (r->counters().pings == 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_GT(r->counters().pings, 0u) << "the probe never reached the responder";
  const auto t0 = std::chrono::steady_clock::now();
  stop.request_stop();
  prober.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(3000));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->end, ProbeEnd::kCancelled);
}

TEST_P(FabricProbeTest, GarbageIsCountedAndResponderKeepsServing) {
  auto r = StartResponder();
  ASSERT_NE(r, nullptr);
  auto ep = Endpoint::Create(Fabric());
  ASSERT_TRUE(ep.ok()) << ep.status();
  auto peer = (*ep)->Resolve(r->address());
  ASSERT_TRUE(peer.ok()) << peer.status();
  AlignedBuffer junk(512);
  for (size_t i = 0; i < junk.size(); ++i) junk.data()[i] = std::byte(i * 7);
  auto desc = (*ep)->Register(junk.span());
  ASSERT_TRUE(desc.ok());
  fi_context2 ctx[3];
  Completion c[4];
  int sent = 0;
  const auto until = std::chrono::steady_clock::now() + milliseconds(5000);
  while (sent < 3 && std::chrono::steady_clock::now() < until) {
    if ((*ep)->PostSend(junk.data(), 100 + sent, *desc, *peer, &ctx[sent]) == 0) ++sent;
    (*ep)->Poll(c);
  }
  while (r->counters().garbage < 3 && std::chrono::steady_clock::now() < until) {
    (*ep)->Poll(c);
    std::this_thread::sleep_for(milliseconds(1));
  }
  EXPECT_EQ(r->counters().garbage, 3u);
  PingOptions o = PingTo(r->address());
  o.count = 20;
  auto res = Ping(o);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->received, 20u);
}

TEST_P(FabricProbeTest, ForgedSenderGetsNoAnswerAtTheClaimedAddress) {
  auto checked = StartResponder();
  auto victim = StartResponder();
  ASSERT_NE(checked, nullptr);
  ASSERT_NE(victim, nullptr);
  if (std::string(GetParam().name) == "shm") {
    EXPECT_FALSE(checked->info().source) << "shm's FI_SOURCE is not to be trusted in 1.17";
    GTEST_SKIP() << "shm answers claims unchecked (docs/security.md); it reaches this host only";
  }
  ASSERT_TRUE(checked->info().source) << GetParam().name << " did not grant FI_SOURCE";
  auto peer = tools::RawPeer::Create(Fabric(), checked->address());
  ASSERT_TRUE(peer.ok()) << peer.status();
  tools::RawPeer& forger = **peer;
  auto send = [&](MessageType type, const std::string& sender, uint64_t seq) {
    MessageHeader h;
    h.type = type;
    h.seq = seq;
    h.session = 7;
    h.sender = sender;
    ASSERT_TRUE(forger.Send(h).ok());
  };
  const milliseconds wait(5000);
  // Unknown to the responder: dropped unanswered, whatever the claim.
  for (uint64_t i = 0; i < 5; ++i) send(MessageType::kPing, victim->address(), i);
  forger.PollUntil([&] { return checked->counters().unverified >= 5; }, wait);
  EXPECT_EQ(checked->counters().unverified, 5u);
  // Known (a true hello was learned from, then answered), but claiming the victim: spoofed.
  for (uint64_t i = 0; forger.arrived().empty() && i < 20; ++i) {
    send(MessageType::kHello, forger.address(), i);
    forger.PollUntil([&] { return !forger.arrived().empty(); }, milliseconds(50) * (i + 1));
  }
  ASSERT_EQ(forger.arrived(), std::vector<MessageType>{MessageType::kHelloAck});
  for (uint64_t i = 0; i < 5; ++i) send(MessageType::kPing, victim->address(), i);
  forger.PollUntil([&] { return checked->counters().spoofed >= 5; }, wait);
  EXPECT_EQ(checked->counters().spoofed, 5u);
  // A true ping from the same endpoint is answered; nothing ever reached the victim.
  send(MessageType::kPing, forger.address(), 99);
  forger.PollUntil([&] { return forger.arrived().size() >= 2; }, wait);
  EXPECT_EQ(forger.arrived().back(), MessageType::kPong);
  EXPECT_EQ(forger.garbage(), 0u);
  EXPECT_EQ(checked->counters().pings, 1u);
  EXPECT_EQ(victim->counters().received, 0u);
}

TEST_P(FabricProbeTest, BadPeerAddressIsInvalidArgument) {
  PingOptions o = PingTo("abc");
  auto res = Ping(o);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument) << res.status();
  o.peer.clear();
  EXPECT_EQ(Ping(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(FabricProbeTest, AddressVectorStaysBounded) {
  EndpointOptions small = Fabric();
  small.av_capacity = 2;
  auto ep = Endpoint::Create(small);
  ASSERT_TRUE(ep.ok()) << ep.status();
  std::vector<std::unique_ptr<Endpoint>> others;
  for (int i = 0; i < 4; ++i) {
    auto o = Endpoint::Create(Fabric());
    ASSERT_TRUE(o.ok()) << o.status();
    ASSERT_TRUE((*ep)->Resolve((*o)->address()).ok());
    others.push_back(*std::move(o));
  }
  EXPECT_EQ((*ep)->peers(), 2u);
  // The evicted first peer can come back.
  EXPECT_TRUE((*ep)->Resolve(others[0]->address()).ok());
  EXPECT_EQ((*ep)->peers(), 2u);
}

// The share of a core this process used over 3 s after a short ping, once the responder's
// post-traffic spin window (50 ms) has passed.
double IdleCpuShareAfterPing(const PingOptions& ping) {
  auto res = Ping(ping);
  EXPECT_TRUE(res.ok()) << res.status();
  if (res.ok()) {
    EXPECT_EQ(res->received, ping.count) << res->last_error;
  }
  std::this_thread::sleep_for(milliseconds(200));
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(milliseconds(3000));
  getrusage(RUSAGE_SELF, &after);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto secs = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  const double cpu =
      secs(after.ru_utime) - secs(before.ru_utime) + secs(after.ru_stime) - secs(before.ru_stime);
  return cpu / wall;
}

TEST_P(FabricProbeTest, IdleResponderUsesAlmostNoCpu) {
  // Both idle modes: blocking on the CQ's wait fd (the default) and sleeping between polls.
  for (const bool wait_fd : {false, true}) {
    auto r = StartResponder(wait_fd);
    ASSERT_NE(r, nullptr);
    PingOptions o = PingTo(r->address());
    o.count = 10;
    const double share = IdleCpuShareAfterPing(o);
    RecordProperty(wait_fd ? "idle_cpu_share_wait_fd" : "idle_cpu_share", absl::StrCat(share));
    std::printf("idle responder (%s, wait object %s): %.3f%% of a core\n", GetParam().name,
                r->info().wait_object.c_str(), 100 * share);
    // The target is < 0.5%; 5% catches a spinning loop (which shows as ~100%) without failing
    // on a noisy machine.
    EXPECT_LT(share, 0.05) << "wait_fd " << wait_fd;
    if (!wait_fd) {
      EXPECT_EQ(r->info().wait_object, "none");
    }
    // Stop() interrupts an idle wait at once in both modes (the eventfd), not after a sleep.
    const auto t0 = std::chrono::steady_clock::now();
    r->Stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, milliseconds(500)) << "wait_fd " << wait_fd;
  }
}

INSTANTIATE_TEST_SUITE_P(Providers, FabricProbeTest,
                         testing::Values(Provider{"tcp", "lo"}, Provider{"sockets", "lo"},
                                         Provider{"shm", "", false}),
                         Name);

// The responder in another process, SIGKILLed mid-probe: the prober gets a clean result in time.
TEST(FabricProcessTest, KilledResponderProcessGivesTimeoutWithinDeadline) {
  const char* bin_dir = std::getenv("EFAWATCH_BINARY_DIR");
  ASSERT_NE(bin_dir, nullptr);
  const std::string tool = absl::StrCat(bin_dir, "/bin/efawatch-fabric-probe");
  const std::string addr_file = absl::StrCat(testing::TempDir(), "/fabric_addr_", getpid());
  const std::string answered_file = addr_file + ".answered";
  std::remove(addr_file.c_str());
  std::remove(answered_file.c_str());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(tool.c_str(), tool.c_str(), "--provider", "tcp", "--interface", "lo", "responder",
          "--address-file", addr_file.c_str(), "--answered-file", answered_file.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string hex;
  for (int i = 0; i < 100 && hex.empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    std::ifstream(addr_file) >> hex;
  }
  ASSERT_FALSE(hex.empty()) << "responder did not start";
  PingOptions o;
  o.endpoint.providers = {"tcp"};
  o.endpoint.interface = "lo";
  o.peer = absl::HexStringToBytes(hex);
  o.count = 1000000;
  o.warmup = 0;  // the first answered ping is a timed one: `received` counts it
  o.message_timeout = milliseconds(200);
  // Endpoint setup alone takes seconds under sanitizers: the deadline leaves room for it, and
  // the responder is killed once it says it has answered (not after a fixed sleep).
  o.deadline = milliseconds(12000);
  absl::StatusOr<PingResult> res;
  std::jthread prober([&] { res = Ping(o); });
  bool answered = false;
  for (int i = 0; i < 2500 && !answered; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    answered = std::ifstream(answered_file).good();
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  prober.join();
  std::remove(addr_file.c_str());
  std::remove(answered_file.c_str());
  ASSERT_TRUE(answered) << "the responder never answered";
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_GT(res->received, 0u);
  EXPECT_GT(res->lost + res->errors, 0u);
  EXPECT_NE(res->end, ProbeEnd::kCompleted);
  EXPECT_LT(res->elapsed, o.deadline + milliseconds(1000));
}

}  // namespace
}  // namespace efawatch::fabric
