// SPDX-License-Identifier: Apache-2.0
#include <rdma/fi_errno.h>

#include <algorithm>
#include <optional>
#include <span>

#include "absl/strings/str_cat.h"
#include "probes/fabric/fi_status.h"
#include "probes/fabric/message.h"
#include "probes/fabric/pinger.h"
#include "probes/fabric/probe.h"
#include "probes/fabric/probe_link.h"

namespace efawatch::fabric {
namespace {

using internal::Op;
using internal::OpOf;

// How long to spin for a pong before sleeping between polls: well above any healthy RTT, so
// timing is never disturbed by a sleep, while a dead peer costs little CPU.
constexpr auto kSpinBeforeSleep = std::chrono::milliseconds(2);
// The same for a background probe (PingOptions::background): a healthy EFA or loopback round trip
// still ends inside it; a slower one is timed in sleep steps.
constexpr auto kBackgroundSpin = std::chrono::microseconds(100);
// Sleep granularity after that: the resolution of RTTs above 2 ms (lossy or throttled links).
constexpr auto kSleepStep = std::chrono::microseconds(100);
// The sequence number of a send that carries no ping (the hello): never awaited.
constexpr uint64_t kNoSeq = ~uint64_t{0};

}  // namespace

absl::StatusOr<std::unique_ptr<Pinger>> Pinger::Create(const EndpointOptions& endpoint,
                                                       size_t message_bytes) {
  auto pinger = std::unique_ptr<Pinger>(new Pinger());
  EndpointOptions o = endpoint;
  o.blocking_wait = false;  // Pings poll: a wait object would cost a syscall per message.
  auto ep = Endpoint::Create(o);
  if (!ep.ok()) return ep.status();
  internal::ProbeLink& link = pinger->link_;
  link.ep = *std::move(ep);
  pinger->message_bytes_ = std::max(message_bytes, HeaderBytes(link.ep->address().size()));
  if (pinger->message_bytes_ > link.ep->info().max_msg_size) {
    return absl::InvalidArgumentError(absl::StrCat("message size ", pinger->message_bytes_,
                                                   " exceeds the provider's max_msg_size ",
                                                   link.ep->info().max_msg_size));
  }
  for (size_t i = 0; i < kTxSlots; ++i) {
    auto idx = link.AddBuffer(pinger->message_bytes_);
    if (!idx.ok()) return idx.status();
    pinger->tx_[i].send = true;
    pinger->tx_[i].index = *idx;
  }
  for (size_t i = 0; i < kRxSlots; ++i) {
    auto idx = link.AddBuffer(pinger->message_bytes_);
    if (!idx.ok()) return idx.status();
    pinger->rx_[i].index = *idx;
    const ssize_t ret = link.ep->PostRecv(link.buffers[*idx]->data(), pinger->message_bytes_,
                                          link.descs[*idx], &pinger->rx_[i].ctx);
    if (ret != 0) return FiStatus("fi_recv", ret);
  }
  return pinger;
}

const FabricInfo& Pinger::info() const { return link_.ep->info(); }

bool Pinger::Wedged() const {
  for (const Op& t : tx_) {
    if (!t.busy) return false;
  }
  return true;
}

absl::StatusOr<PingResult> Ping(const PingOptions& options, const std::stop_token& stop,
                                const common::Clock& clock) {
  if (options.count == 0) return absl::InvalidArgumentError("ping count must be > 0");
  if (options.peer.empty()) return absl::InvalidArgumentError("peer fabric address is empty");
  auto pinger = Pinger::Create(options.endpoint, options.message_bytes);
  if (!pinger.ok()) return pinger.status();
  return (*pinger)->Run(options.peer, options, stop, clock);
}

namespace {

// Inserts `peer` into the link's address vector and makes it the link's peer.
absl::Status ResolvePeer(internal::ProbeLink& link, const std::string& peer) {
  Endpoint& ep = *link.ep;
  auto peer_addr = ep.Resolve(peer);
  if (!peer_addr.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("peer address not valid for provider ",
                                                   ep.info().provider, ": ",
                                                   std::string(peer_addr.status().message())));
  }
  link.peer = *peer_addr;
  return absl::OkStatus();
}

// One Pinger::Run: the state the completion handler updates, so that the steps below read as the
// protocol: per message, take a send slot, send, await the pong, count it. The per-message path
// calls only non-virtual members of this class (besides the Clock and the Endpoint, as before),
// allocates nothing and adds no syscall.
class PingRun {
 public:
  PingRun(internal::ProbeLink& link, std::span<Op> tx, size_t message_bytes,
          const std::string& peer, const PingOptions& options, const std::stop_token& stop,
          const common::Clock& clock, std::chrono::steady_clock::time_point start);

  // Sends the hello, then the warm-up and timed messages. Returns 0, or the negative FI_E* code
  // when the CQ broke (the run then has no result).
  ssize_t Loop();
  // Completes the counts and the summary once Loop() is done.
  PingResult Finish();

 private:
  // Drains completions; returns how many, or a negative FI_E* code when the CQ broke.
  ssize_t Pump();
  void OnSendDone(Op& op, const Completion& c);
  // Counts a pong of this run and posts the receive again.
  void OnReceived(Op& op, const Completion& c);
  // Sends kHello until a kHelloAck of this run comes (see internal::kFirstResend), within one
  // message timeout. Returns 1 when answered, 0 when not (`r_.end` then says why), or the
  // negative FI_E* code when the CQ broke.
  ssize_t Introduce();
  // One message: slot, send, pong, count. Returns what Loop() does.
  ssize_t Message(uint32_t i);
  // A free send slot, or null when the deadline passed or the stop token fired first.
  Op* AcquireSlot();
  // Writes message `seq` into `slot`'s buffer and marks the slot in flight; returns the buffer.
  std::byte* Prepare(Op& slot, uint32_t seq);
  // Posts `len` bytes of `buf` from `slot`, retrying while the provider says -FI_EAGAIN; returns
  // the last post's result.
  ssize_t Send(Op& slot, std::byte* buf, size_t len,
               std::chrono::steady_clock::time_point msg_deadline);
  // Counts a message whose send could not be posted.
  void SendFailed(Op& slot, ssize_t ret, bool timed);
  // Polls until the awaited pong arrives, its send fails, `msg_deadline` passes or the stop token
  // fires; `*now` is the last time read. Returns what Pump() does when it fails, else 0.
  ssize_t AwaitPong(std::chrono::steady_clock::time_point t0,
                    std::chrono::steady_clock::time_point msg_deadline,
                    std::chrono::steady_clock::time_point* now);
  // Counts the outcome of timed message sent at `t0`, `now` being when its wait ended.
  void Count(std::chrono::steady_clock::time_point t0, std::chrono::steady_clock::time_point now);

  internal::ProbeLink& link_;
  Endpoint& ep_;
  std::span<Op> tx_;
  const PingOptions& options_;
  const std::stop_token& stop_;
  const common::Clock& clock_;
  const std::chrono::steady_clock::time_point start_;
  const std::chrono::steady_clock::time_point deadline_;
  const uint64_t session_;
  MessageHeader header_;
  PingResult r_;

  uint64_t awaited_ = 0;
  bool got_ = false;
  bool failed_ = false;
  bool introduced_ = false;
  uint32_t attempted_timed_ = 0;
  std::optional<std::chrono::steady_clock::time_point> loop_start_;
  std::chrono::steady_clock::time_point loop_end_;
  Completion done_[16];
};

PingRun::PingRun(internal::ProbeLink& link, std::span<Op> tx, size_t message_bytes,
                 const std::string& peer, const PingOptions& options, const std::stop_token& stop,
                 const common::Clock& clock, std::chrono::steady_clock::time_point start)
    : link_(link),
      ep_(*link.ep),
      tx_(tx),
      options_(options),
      stop_(stop),
      clock_(clock),
      start_(start),
      deadline_(start + options.deadline),
      session_(internal::NewSession()),
      loop_end_(start) {
  r_.fabric = ep_.info();
  r_.local_address = ep_.Printable(ep_.address());
  r_.peer_address = ep_.Printable(peer);
  r_.message_bytes = message_bytes;
  header_.type = MessageType::kPing;
  header_.value = options.background ? kNoSpinFlag : 0;
  header_.session = session_;
  header_.sender = ep_.address();
  // Room for every sample, touched before the first send: growing the vector inside the loop
  // copied it and faulted in fresh pages between two pings (1.3 to 1.7 ms at the 16384th message
  // here, inside the timed loop).
  r_.rtt_us.assign(options.count, 0.0);
}

ssize_t PingRun::Pump() {
  const ssize_t n = ep_.Poll(done_);
  for (ssize_t i = 0; i < n; ++i) {
    Op* op = OpOf(done_[i].context);
    if (op->send) {
      OnSendDone(*op, done_[i]);
    } else {
      OnReceived(*op, done_[i]);
    }
  }
  return n;
}

void PingRun::OnSendDone(Op& op, const Completion& c) {
  op.busy = false;
  if (c.error == 0) return;
  r_.last_error = ep_.last_error();
  if (op.seq == awaited_) failed_ = true;
}

void PingRun::OnReceived(Op& op, const Completion& c) {
  if (c.error == 0) {
    std::span<const std::byte> msg(link_.buffers[op.index]->data(), c.len);
    const auto h = DecodeHeader(msg);
    if (h && h->type == MessageType::kHelloAck && h->session == session_) {
      introduced_ = true;
    } else if (h && h->type == MessageType::kPong && h->session == session_) {
      if (h->seq == awaited_) {
        got_ = true;
      } else if (h->seq < awaited_ && h->seq >= options_.warmup) {
        ++r_.late;
      }
    }
  }
  // Reposting can only fail with -FI_EAGAIN here (the queue had room for it a moment ago);
  // a failed repost shrinks the pool, and the loss shows as lost pongs.
  ep_.PostRecv(link_.buffers[op.index]->data(), r_.message_bytes, link_.descs[op.index], &op.ctx);
}

ssize_t PingRun::Loop() {
  if (const ssize_t n = Introduce(); n <= 0) return n;
  const uint32_t total = options_.warmup + options_.count;
  for (uint32_t i = 0; i < total; ++i) {
    if (stop_.stop_requested()) {
      r_.end = ProbeEnd::kCancelled;
      break;
    }
    if (clock_.Now() >= deadline_) {
      r_.end = ProbeEnd::kDeadlineExceeded;
      break;
    }
    if (const ssize_t n = Message(i); n < 0) return n;
  }
  return 0;
}

ssize_t PingRun::Introduce() {
  MessageHeader hello;
  hello.type = MessageType::kHello;
  hello.session = session_;
  hello.sender = ep_.address();
  const auto give_up = std::min(clock_.Now() + options_.message_timeout, deadline_);
  internal::HelloResends resends(give_up);
  while (!introduced_) {
    Op* slot = clock_.Now() < give_up ? AcquireSlot() : nullptr;
    if (slot == nullptr) break;
    std::byte* buf = link_.buffers[slot->index]->data();
    const size_t len = EncodeHeader(hello, {buf, r_.message_bytes});
    slot->busy = true;
    slot->seq = kNoSeq;
    if (const ssize_t ret = Send(*slot, buf, len, give_up); ret != 0) {
      SendFailed(*slot, ret, /*timed=*/false);
      if (ret != -FI_EAGAIN) break;
    }
    const auto resend_at = resends.Next(clock_.Now());
    while (!introduced_ && clock_.Now() < resend_at && !stop_.stop_requested()) {
      const ssize_t n = Pump();
      if (n < 0) return n;
      if (n == 0) ep_.Wait(kSleepStep, -1);
    }
  }
  if (introduced_) return 1;
  // Never answered: every message of the run counts as lost, as when no pong comes.
  r_.end = stop_.stop_requested()      ? ProbeEnd::kCancelled
           : clock_.Now() >= deadline_ ? ProbeEnd::kDeadlineExceeded
                                       : ProbeEnd::kPeerTimedOut;
  if (r_.end != ProbeEnd::kCancelled) r_.lost = options_.count;
  return 0;
}

ssize_t PingRun::Message(uint32_t i) {
  const bool timed = i >= options_.warmup;
  awaited_ = i;
  got_ = false;
  failed_ = false;
  Op* slot = AcquireSlot();
  if (slot == nullptr) return 0;  // The loop head reports the deadline or the cancel.
  std::byte* buf = Prepare(*slot, i);
  const auto t0 = clock_.Now();
  if (timed && !loop_start_) loop_start_ = t0;
  const auto msg_deadline = std::min(t0 + options_.message_timeout, deadline_);
  const ssize_t ret = Send(*slot, buf, r_.message_bytes, msg_deadline);
  if (timed) ++attempted_timed_;
  if (ret != 0) {
    SendFailed(*slot, ret, timed);
    return 0;
  }
  auto now = t0;
  if (const ssize_t n = AwaitPong(t0, msg_deadline, &now); n < 0) return n;
  if (timed) Count(t0, now);
  return 0;
}

Op* PingRun::AcquireSlot() {
  while (clock_.Now() < deadline_ && !stop_.stop_requested()) {
    for (Op& t : tx_) {
      if (!t.busy) return &t;
    }
    if (Pump() == 0) ep_.Wait(std::chrono::milliseconds(1), -1);
  }
  return nullptr;
}

std::byte* PingRun::Prepare(Op& slot, uint32_t seq) {
  header_.seq = seq;
  std::byte* buf = link_.buffers[slot.index]->data();
  EncodeHeader(header_, {buf, r_.message_bytes});
  slot.busy = true;
  slot.seq = seq;
  return buf;
}

ssize_t PingRun::Send(Op& slot, std::byte* buf, size_t len,
                      std::chrono::steady_clock::time_point msg_deadline) {
  ssize_t ret;
  // Small pings go out with fi_inject, like fi_pingpong's: no send completion to reap between
  // pongs. A failed inject is silent, and shows as a lost pong.
  const bool inject = len <= ep_.info().inject_size;
  while ((ret = inject ? ep_.PostInject(buf, len, link_.peer)
                       : ep_.PostSend(buf, len, link_.descs[slot.index], link_.peer, &slot.ctx)) ==
         -FI_EAGAIN) {
    if (Pump() < 0 || clock_.Now() >= msg_deadline || stop_.stop_requested()) break;
  }
  if (inject && ret == 0) slot.busy = false;  // The provider copied it; no completion comes.
  return ret;
}

void PingRun::SendFailed(Op& slot, ssize_t ret, bool timed) {
  slot.busy = false;
  if (ret != -FI_EAGAIN) r_.last_error = std::string(FiStatus("fi_send", ret).message());
  if (timed) (ret == -FI_EAGAIN ? ++r_.lost : ++r_.errors);
}

ssize_t PingRun::AwaitPong(std::chrono::steady_clock::time_point t0,
                           std::chrono::steady_clock::time_point msg_deadline,
                           std::chrono::steady_clock::time_point* now) {
  while (!got_ && !failed_ && *now < msg_deadline && !stop_.stop_requested()) {
    const ssize_t n = Pump();
    if (n < 0) return n;
    *now = clock_.Now();
    if (n == 0 &&
        *now - t0 >
            (options_.background
                 ? std::chrono::duration_cast<std::chrono::steady_clock::duration>(kBackgroundSpin)
                 : std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       kSpinBeforeSleep))) {
      ep_.Wait(std::min(std::chrono::duration_cast<std::chrono::microseconds>(msg_deadline - *now),
                        kSleepStep),
               -1);
      *now = clock_.Now();
    }
  }
  return 0;
}

void PingRun::Count(std::chrono::steady_clock::time_point t0,
                    std::chrono::steady_clock::time_point now) {
  loop_end_ = now;
  if (got_) {
    r_.rtt_us[r_.received++] = std::chrono::duration<double, std::micro>(now - t0).count();
  } else if (failed_) {
    ++r_.errors;
  } else if (!stop_.stop_requested()) {
    ++r_.lost;
  }
}

PingResult PingRun::Finish() {
  r_.rtt_us.resize(r_.received);
  r_.sent = attempted_timed_;
  if (r_.end == ProbeEnd::kDeadlineExceeded) r_.lost += options_.count - attempted_timed_;
  if (r_.end == ProbeEnd::kCompleted && r_.received == 0) r_.end = ProbeEnd::kPeerTimedOut;
  r_.loss_ratio = static_cast<double>(r_.lost + r_.errors) / options_.count;
  r_.rtt = Summarize(r_.rtt_us);
  if (loop_start_) r_.timed_loop = loop_end_ - *loop_start_;
  r_.elapsed = clock_.Now() - start_;
  return std::move(r_);
}

}  // namespace

absl::StatusOr<PingResult> Pinger::Run(const std::string& peer, const PingOptions& options,
                                       const std::stop_token& stop, const common::Clock& clock) {
  const auto start = clock.Now();
  if (options.count == 0) return absl::InvalidArgumentError("ping count must be > 0");
  if (absl::Status st = ResolvePeer(link_, peer); !st.ok()) return st;
  PingRun run(link_, tx_, message_bytes_, peer, options, stop, clock, start);
  if (const ssize_t n = run.Loop(); n < 0) return FiStatus("fi_cq_read", n);
  return run.Finish();
}

uint64_t PingMemoryBytes(const PingOptions& options) {
  // As Pinger::Create sizes them, with the longest header any address can need.
  const uint64_t message = std::max(options.message_bytes, HeaderBytes(kMaxAddressBytes));
  return (Pinger::kTxSlots + Pinger::kRxSlots) * message;
}

}  // namespace efawatch::fabric
