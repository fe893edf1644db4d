#include <rdma/fi_errno.h>

#include <algorithm>
#include <optional>

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
// Sleep granularity after that: the resolution of RTTs above 2 ms (lossy or throttled links).
constexpr auto kSleepStep = std::chrono::microseconds(100);

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

absl::StatusOr<PingResult> Pinger::Run(const std::string& peer, const PingOptions& options,
                                       const std::stop_token& stop, const common::Clock& clock) {
  const auto start = clock.Now();
  const auto deadline = start + options.deadline;
  if (options.count == 0) return absl::InvalidArgumentError("ping count must be > 0");
  internal::ProbeLink& link = link_;
  Endpoint& ep = *link.ep;
  auto peer_addr = ep.Resolve(peer);
  if (!peer_addr.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("peer address not valid for provider ",
                                                   ep.info().provider, ": ",
                                                   std::string(peer_addr.status().message())));
  }
  link.peer = *peer_addr;

  PingResult r;
  r.fabric = ep.info();
  r.local_address = ep.Printable(ep.address());
  r.peer_address = ep.Printable(peer);
  r.message_bytes = message_bytes_;

  const uint64_t session = internal::NewSession();
  MessageHeader header;
  header.type = MessageType::kPing;
  header.session = session;
  header.sender = ep.address();

  uint64_t awaited = 0;
  bool got = false;
  bool failed = false;
  Completion done[16];
  // Drains completions; returns how many, or a negative FI_E* code when the CQ broke.
  auto pump = [&]() -> ssize_t {
    const ssize_t n = ep.Poll(done);
    for (ssize_t i = 0; i < n; ++i) {
      Op* op = OpOf(done[i].context);
      if (op->send) {
        op->busy = false;
        if (done[i].error != 0) {
          r.last_error = ep.last_error();
          if (op->seq == awaited) failed = true;
        }
        continue;
      }
      if (done[i].error == 0) {
        std::span<const std::byte> msg(link.buffers[op->index]->data(), done[i].len);
        const auto h = DecodeHeader(msg);
        if (h && h->type == MessageType::kPong && h->session == session) {
          if (h->seq == awaited) {
            got = true;
          } else if (h->seq < awaited && h->seq >= options.warmup) {
            ++r.late;
          }
        }
      }
      // Reposting can only fail with -FI_EAGAIN here (the queue had room for it a moment ago);
      // a failed repost shrinks the pool, and the loss shows as lost pongs.
      ep.PostRecv(link.buffers[op->index]->data(), r.message_bytes, link.descs[op->index],
                  &op->ctx);
    }
    return n;
  };

  // Room for every sample, touched before the first send: growing the vector inside the loop
  // copied it and faulted in fresh pages between two pings (1.3 to 1.7 ms at the 16384th message
  // here, inside the timed loop).
  r.rtt_us.assign(options.count, 0.0);
  const bool inject = r.message_bytes <= ep.info().inject_size;
  const uint32_t total = options.warmup + options.count;
  uint32_t attempted_timed = 0;
  std::optional<std::chrono::steady_clock::time_point> loop_start;
  auto loop_end = start;
  for (uint32_t i = 0; i < total; ++i) {
    if (stop.stop_requested()) {
      r.end = ProbeEnd::kCancelled;
      break;
    }
    if (clock.Now() >= deadline) {
      r.end = ProbeEnd::kDeadlineExceeded;
      break;
    }
    const bool timed = i >= options.warmup;
    awaited = i;
    got = false;
    failed = false;

    Op* slot = nullptr;
    while (slot == nullptr && clock.Now() < deadline && !stop.stop_requested()) {
      for (Op& t : tx_) {
        if (!t.busy) {
          slot = &t;
          break;
        }
      }
      if (slot == nullptr && pump() == 0) ep.Wait(std::chrono::milliseconds(1), -1);
    }
    if (slot == nullptr) continue;  // The loop head reports the deadline or the cancel.

    header.seq = i;
    std::byte* buf = link.buffers[slot->index]->data();
    EncodeHeader(header, {buf, r.message_bytes});
    slot->busy = true;
    slot->seq = i;
    const auto t0 = clock.Now();
    if (timed && !loop_start) loop_start = t0;
    const auto msg_deadline = std::min(t0 + options.message_timeout, deadline);
    ssize_t ret;
    // Small pings go out with fi_inject, like fi_pingpong's: no send completion to reap between
    // pongs. A failed inject is silent, and shows as a lost pong.
    while ((ret = inject ? ep.PostInject(buf, r.message_bytes, link.peer)
                         : ep.PostSend(buf, r.message_bytes, link.descs[slot->index], link.peer,
                                       &slot->ctx)) == -FI_EAGAIN) {
      if (pump() < 0 || clock.Now() >= msg_deadline || stop.stop_requested()) break;
    }
    if (inject && ret == 0) slot->busy = false;  // The provider copied it; no completion comes.
    if (timed) ++attempted_timed;
    if (ret != 0) {
      slot->busy = false;
      if (ret != -FI_EAGAIN) r.last_error = std::string(FiStatus("fi_send", ret).message());
      if (timed) (ret == -FI_EAGAIN ? ++r.lost : ++r.errors);
      continue;
    }

    auto now = t0;
    while (!got && !failed && now < msg_deadline && !stop.stop_requested()) {
      const ssize_t n = pump();
      if (n < 0) return FiStatus("fi_cq_read", n);
      now = clock.Now();
      if (n == 0 && now - t0 > kSpinBeforeSleep) {
        ep.Wait(std::min(std::chrono::duration_cast<std::chrono::microseconds>(msg_deadline - now),
                         kSleepStep),
                -1);
        now = clock.Now();
      }
    }
    if (!timed) continue;
    loop_end = now;
    if (got) {
      r.rtt_us[r.received++] = std::chrono::duration<double, std::micro>(now - t0).count();
    } else if (failed) {
      ++r.errors;
    } else if (!stop.stop_requested()) {
      ++r.lost;
    }
  }

  r.rtt_us.resize(r.received);
  r.sent = attempted_timed;
  if (r.end == ProbeEnd::kDeadlineExceeded) r.lost += options.count - attempted_timed;
  if (r.end == ProbeEnd::kCompleted && r.received == 0) r.end = ProbeEnd::kPeerTimedOut;
  r.loss_ratio = static_cast<double>(r.lost + r.errors) / options.count;
  r.rtt = Summarize(r.rtt_us);
  if (loop_start) r.timed_loop = loop_end - *loop_start;
  r.elapsed = clock.Now() - start;
  return r;
}

}  // namespace efawatch::fabric
