// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "probes/fabric/endpoint.h"
#include "probes/fabric/message.h"

namespace efawatch::fabric {

struct ResponderOptions {
  /// The fabric to serve on; its `blocking_wait` is replaced by `wait_fd` below.
  EndpointOptions endpoint;
  /// Receives kept posted. Each holds one message of `max_message_bytes`, so memory is bounded
  /// by rx_depth * max_message_bytes (default 8 x (8 MiB + 4 KiB), about 64 MiB of address space,
  /// resident only as far as traffic has touched it). Probers keep at most this many messages in
  /// flight towards us (they learn it from kHelloAck).
  size_t rx_depth = 8;
  /// Largest message accepted, header included; larger ones arrive truncated and count as errors.
  size_t max_message_bytes = (8u << 20) + 4096;
  /// After the last completion keep polling a while before blocking: traffic comes in bursts,
  /// and a wake-up costs tens of µs on tcp and milliseconds on providers whose wait object is
  /// signalled by a progress thread (sockets) or that have none (shm): a window longer than
  /// the gap between a probe's messages keeps it from paying the wake-up on every message.
  /// The window follows the traffic: 8x the last gap between messages of a burst, at least
  /// `spin_min`, at most `spin_after_traffic`; the first message after a wait opens the
  /// smallest. A mesh round (a few back-to-back pings per peer, then silence for 15 s) so costs
  /// about a millisecond of spinning per peer instead of the whole cap (measured before: 50 ms
  /// per peer per round, ~3% of a core per agent at the mesh defaults).
  std::chrono::microseconds spin_after_traffic{50000};
  std::chrono::microseconds spin_min{200};
  /// When idle, block on the completion queue's wait fd where the provider has one (instant
  /// wake-up, and the provider's sockets wake it too) instead of sleeping between polls (1 to
  /// 20 ms, growing with idle time, as on providers that offer no fd). The fd is not free: on
  /// tcp;ofi_rxm the provider then signals and polls a wait set on every completion, which cost
  /// about 1 to 2 us of per-message median RTT here (bench/fabric.sh with --sleep-idle on its
  /// responder against without). It stays on because sleeping costs more elsewhere, measured on
  /// tcp: an idle responder takes ~0.35% of a core instead of ~0.02%, and RMA writes into the
  /// sink, which raise no completion here, move only when it polls: 1 MiB writes fell from
  /// ~3.5 GB/s to under 0.1 GB/s on a manual-progress provider.
  bool wait_fd = true;
  /// Bandwidth sessions whose byte counts are kept (oldest overwritten).
  size_t max_sessions = 64;
  /// Offer a sink for RMA-write bandwidth probes when the provider has FI_RMA: one buffer of
  /// max_message_bytes, registered for remote writes only, allocated on the first kRmaHello (an
  /// agent that is never RMA-probed pays nothing for it) and never read as data. Off: kRmaInfo
  /// says "no sink" and RMA probes are refused.
  bool rma_sink = true;
  /// Answer only the sender libfabric says a message came from (FI_SOURCE), and only when it is
  /// the one the message's header claims; see Responder. Off (or a provider without FI_SOURCE,
  /// FabricInfo::source false): answer the claimed address, as a plain echo server would.
  bool verify_source = true;
};

/// Counters since start. Plain values; read with Responder::counters().
struct ResponderCounters {
  uint64_t received = 0;      ///< Messages received (any kind).
  uint64_t pings = 0;         ///< kPing echoed.
  uint64_t bw_messages = 0;   ///< kBwData received.
  uint64_t bw_bytes = 0;      ///< Bytes of kBwData received.
  uint64_t garbage = 0;       ///< Not a probe message (bad magic, version, type or address).
  uint64_t unresolvable = 0;  ///< Sender address the address vector rejected.
  uint64_t recv_errors = 0;   ///< Error completions of receives (e.g. truncation).
  uint64_t send_errors = 0;   ///< Error completions of replies (peer went away).
  uint64_t wakeups = 0;       ///< Times the loop returned from an idle wait (sleep or fd).
  uint64_t rma_hellos = 0;    ///< kRmaHello answered (with a sink or without).
  uint64_t unverified = 0;    ///< Dropped: from a sender not (yet) in the address vector.
  uint64_t spoofed = 0;       ///< Dropped: the real sender differs from the claimed one.
};

/// The always-on side of every fabric probe: echoes kPing as kPong, sinks (or echoes) bandwidth
/// traffic, answers kHello and kBwDone. One per agent and NIC.
///
/// Threading: Create() starts one std::jthread that alone uses the endpoint. It spins only while
/// completions keep arriving and otherwise blocks on the CQ's wait object (fi_trywait + poll(2)),
/// or sleeps between polls where there is none or `wait_fd` is off, so an idle responder costs
/// about nothing. All public methods are thread-safe. The destructor stops and joins the thread.
///
/// Senders are checked, so the responder cannot be made to send to an address that did not
/// send to it (a reflector): every message claims its sender's address, and with FI_SOURCE
/// libfabric names the sender it really came from: on tcp;ofi_rxm the peer is keyed by the
/// connection's IP address (from the socket) and the port it announced. A message is answered
/// only at that real sender, and only when the claim names the same one; a mismatch is dropped
/// (`spoofed`). A sender not yet in the address vector cannot be named, so its message is dropped
/// too (`unverified`) after the claimed address is inserted: when the claim is true, the
/// sender's next message is attributed to it and answered, which is why probers resend their
/// first message (internal::kFirstResend). Inserting an address sends nothing.
///
/// Memory is bounded: rx_depth buffers, a fixed-size session table and an address vector of
/// EndpointOptions::av_capacity peers (least recently used evicted). A reply reuses the buffer
/// it answers, which is posted again when the reply's send completes.
class Responder {
 public:
  /// `clock` times the spin after traffic and the idle sleeps; it must outlive the Responder. A
  /// clock that stands still (a test's) keeps the loop spinning once traffic came: answers stay
  /// right, but a core stays busy.
  static absl::StatusOr<std::unique_ptr<Responder>> Create(
      const ResponderOptions& options, const common::Clock& clock = common::SystemClock::Get());
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

  /// Stops the thread and waits for it (prompt: it wakes through an eventfd). Idempotent.
  void Stop();

  const FabricInfo& info() const { return endpoint_->info(); }
  /// Raw fabric address; what peers pass to Ping/Bandwidth.
  const std::string& address() const { return endpoint_->address(); }
  const std::string& printable_address() const { return printable_address_; }
  ResponderCounters counters() const;
  /// OK while serving; the error that stopped the loop otherwise (e.g. the CQ failed).
  absl::Status status() const;

 private:
  struct Slot;
  Responder() = default;
  void Run(const std::stop_token& stop);
  void Post(Slot& slot);
  // Answers one received message; every path reposts the slot, at once or after the reply.
  void Handle(Slot& slot, size_t len, fi_addr_t source);
  // Where answers to a message from `source` claiming `claimed` may go; nullopt (counted) when
  // nowhere. See the class comment.
  std::optional<fi_addr_t> Verify(fi_addr_t source, const std::string& claimed);
  // Counts a message that is not for us and reposts its slot.
  void Discard(Slot& slot);
  // kBwData: counts it in its session and echoes it when asked to.
  void HandleBwData(Slot& slot, std::span<std::byte> msg, const MessageHeader& h, fi_addr_t to);
  // kRmaHello: answers kRmaInfo with the RMA sink (or "no sink").
  void HandleRmaHello(Slot& slot, const MessageHeader& h, fi_addr_t to);
  // kHello (our depth and largest message) and kBwDone (the session's counts).
  void Acknowledge(Slot& slot, const MessageHeader& h, fi_addr_t to);
  void Reply(Slot& slot, size_t len, fi_addr_t to);
  bool FlushPending();
  RemoteRegion RmaSink();

  ResponderOptions options_;
  const common::Clock* clock_ = nullptr;
  std::string printable_address_;
  int stop_fd_ = -1;

  // Buffers are declared before the endpoint so the endpoint (with its posted receives) closes
  // first.
  std::vector<std::unique_ptr<Slot>> slots_;
  struct Session {
    uint64_t id = 0;
    uint64_t messages = 0;
    uint64_t bytes = 0;
  };
  std::vector<Session> sessions_;
  Session* FindSession(uint64_t id);  // null when not kept
  size_t next_session_ = 0;
  std::vector<Slot*> pending_;  // Posts that got -FI_EAGAIN, retried after progress.
  bool no_spin_ = false;        // The last message was a background ping (kNoSpinFlag).
  // The RMA sink (null until first asked for). Peers write into it; nothing here reads it.
  std::unique_ptr<AlignedBuffer> rma_sink_;
  RemoteRegion rma_region_;
  std::unique_ptr<Endpoint> endpoint_;

  std::atomic<uint64_t> received_{0}, pings_{0}, bw_messages_{0}, bw_bytes_{0}, garbage_{0},
      unresolvable_{0}, recv_errors_{0}, send_errors_{0}, wakeups_{0}, rma_hellos_{0},
      unverified_{0}, spoofed_{0};
  mutable std::mutex mu_;
  absl::Status status_;  // Guarded by mu_.
  std::jthread thread_;
};

}  // namespace efawatch::fabric
