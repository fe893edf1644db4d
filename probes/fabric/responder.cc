// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/responder.h"

#include <rdma/fi_errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "probes/fabric/fi_status.h"
#include "probes/fabric/message.h"

namespace efawatch::fabric {

// One posted receive buffer. The fi_context2 comes first so a completion's op_context converts
// back to its Slot.
struct Responder::Slot {
  fi_context2 ctx{};
  enum class State { kReceiving, kReplying } state = State::kReceiving;
  size_t reply_len = 0;
  fi_addr_t reply_to = FI_ADDR_UNSPEC;
  void* desc = nullptr;
  std::unique_ptr<AlignedBuffer> buf;
};

absl::StatusOr<std::unique_ptr<Responder>> Responder::Create(const ResponderOptions& options,
                                                             const common::Clock& clock) {
  if (options.rx_depth == 0) return absl::InvalidArgumentError("responder rx_depth must be > 0");
  if (options.max_message_bytes < HeaderBytes(kMaxAddressBytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("responder max_message_bytes must be >= ", HeaderBytes(kMaxAddressBytes)));
  }
  std::unique_ptr<Responder> r(new Responder());
  r->options_ = options;
  r->clock_ = &clock;
  r->options_.endpoint.blocking_wait = options.wait_fd;
  r->options_.endpoint.rma = options.rma_sink;
  r->options_.endpoint.source = options.verify_source;
  auto ep = Endpoint::Create(r->options_.endpoint);
  if (!ep.ok()) return ep.status();
  r->endpoint_ = *std::move(ep);
  r->options_.max_message_bytes =
      std::min(r->options_.max_message_bytes, r->endpoint_->info().max_msg_size);
  r->printable_address_ = r->endpoint_->Printable(r->endpoint_->address());
  r->sessions_.resize(std::max<size_t>(options.max_sessions, 1));
  for (size_t i = 0; i < options.rx_depth; ++i) {
    auto slot = std::make_unique<Slot>();
    // Not zeroed: a slot only ever sends back what it received.
    slot->buf = std::make_unique<AlignedBuffer>(r->options_.max_message_bytes, /*zero=*/false);
    auto desc = r->endpoint_->Register(slot->buf->span());
    if (!desc.ok()) return desc.status();
    slot->desc = *desc;
    r->slots_.push_back(std::move(slot));
  }
  r->stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (r->stop_fd_ < 0) return absl::InternalError("eventfd failed");
  for (auto& slot : r->slots_) {
    const ssize_t ret =
        r->endpoint_->PostRecv(slot->buf->data(), slot->buf->size(), slot->desc, &slot->ctx);
    if (ret != 0) return FiStatus("fi_recv", ret);
  }
  Responder* self = r.get();
  r->thread_ = std::jthread([self](const std::stop_token& stop) { self->Run(stop); });
  return r;
}

Responder::~Responder() {
  Stop();
  if (stop_fd_ >= 0) close(stop_fd_);
}

void Responder::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
}

ResponderCounters Responder::counters() const {
  ResponderCounters c;
  c.received = received_.load(std::memory_order_relaxed);
  c.pings = pings_.load(std::memory_order_relaxed);
  c.bw_messages = bw_messages_.load(std::memory_order_relaxed);
  c.bw_bytes = bw_bytes_.load(std::memory_order_relaxed);
  c.garbage = garbage_.load(std::memory_order_relaxed);
  c.unresolvable = unresolvable_.load(std::memory_order_relaxed);
  c.recv_errors = recv_errors_.load(std::memory_order_relaxed);
  c.send_errors = send_errors_.load(std::memory_order_relaxed);
  c.wakeups = wakeups_.load(std::memory_order_relaxed);
  c.rma_hellos = rma_hellos_.load(std::memory_order_relaxed);
  c.unverified = unverified_.load(std::memory_order_relaxed);
  c.spoofed = spoofed_.load(std::memory_order_relaxed);
  return c;
}

absl::Status Responder::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void Responder::Run(const std::stop_token& stop) {
  // The eventfd lets Stop() interrupt a blocking poll(2) at once instead of after its timeout.
  std::stop_callback wake(stop, [fd = stop_fd_] {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd, &one, sizeof(one));
  });
  Completion done[16];
  auto last_traffic = clock_->Now() - std::chrono::hours(1);
  std::chrono::steady_clock::duration window = options_.spin_min;
  while (!stop.stop_requested()) {
    const bool posts_pending = !FlushPending();
    const ssize_t n = endpoint_->Poll(done);
    if (n < 0) {
      std::lock_guard<std::mutex> lock(mu_);
      status_ = FiStatus("fi_cq_read", n);
      return;
    }
    for (ssize_t i = 0; i < n; ++i) {
      Slot& slot = *reinterpret_cast<Slot*>(static_cast<fi_context2*>(done[i].context));
      if (slot.state == Slot::State::kReplying) {
        if (done[i].error != 0) send_errors_.fetch_add(1, std::memory_order_relaxed);
        Post(slot);
      } else if (done[i].error != 0) {
        recv_errors_.fetch_add(1, std::memory_order_relaxed);
        Post(slot);
      } else {
        Handle(slot, done[i].len, done[i].source);
      }
    }
    const auto now = clock_->Now();
    if (n > 0) {
      // Within a burst the window follows the gap between messages; after a wait (a gap longer
      // than the window) a new burst starts from the smallest window.
      const auto gap = now - last_traffic;
      window = gap < window ? std::clamp<std::chrono::steady_clock::duration>(
                                  2 * gap, options_.spin_min, options_.spin_after_traffic)
                            : std::chrono::steady_clock::duration(options_.spin_min);
      last_traffic = now;
      continue;
    }
    // A background prober sleeps between its pings: with a wait fd, block at once.
    const bool spin = !(no_spin_ && endpoint_->has_wait_fd());
    if (posts_pending || (spin && now - last_traffic < window)) continue;
    // Idle: block until the CQ signals, Stop() writes the eventfd, or five seconds pass (the
    // timeout only bounds how stale a missed wake-up can get; once a second was the idle
    // agent's largest wake-up source of its own). Without a wait object, sleep a
    // tenth of the idle time so far, 1 to 20 ms: a quiet responder wakes ~50 times a second
    // (well under 0.5% of a core) and a new probe's first message waits at most 20 ms, which
    // its warm-up absorbs.
    auto idle_sleep = std::chrono::milliseconds(5000);
    if (!endpoint_->has_wait_fd()) {
      idle_sleep = std::clamp(
          std::chrono::duration_cast<std::chrono::milliseconds>((now - last_traffic) / 10),
          std::chrono::milliseconds(1), std::chrono::milliseconds(20));
    }
    endpoint_->Wait(idle_sleep, stop_fd_);
    uint64_t drained;
    [[maybe_unused]] ssize_t r = read(stop_fd_, &drained, sizeof(drained));
    wakeups_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Responder::Post(Slot& slot) {
  slot.state = Slot::State::kReceiving;
  const ssize_t ret = endpoint_->PostRecv(slot.buf->data(), slot.buf->size(), slot.desc, &slot.ctx);
  if (ret == -FI_EAGAIN) {
    pending_.push_back(&slot);  // Retried by FlushPending after the next progress call.
  } else if (ret != 0) {
    // The slot is lost for good; rx depth shrinks by one and the counter shows it.
    recv_errors_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::optional<fi_addr_t> Responder::Verify(fi_addr_t source, const std::string& claimed) {
  if (!endpoint_->info().source) {
    auto dest = endpoint_->Resolve(claimed);
    if (dest.ok()) return *dest;
    unresolvable_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  if (source == FI_ADDR_NOTAVAIL || source == FI_ADDR_UNSPEC) {
    // Learn the claim (this sends nothing), so that a sender telling the truth is named at its
    // next message; answer nothing now, since nothing says the claim is true.
    (endpoint_->Resolve(claimed).ok() ? unverified_ : unresolvable_)
        .fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const std::optional<fi_addr_t> known = endpoint_->Find(claimed);
  if (!known || *known != source) {
    spoofed_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  return source;
}

void Responder::Reply(Slot& slot, size_t len, fi_addr_t to) {
  // A small reply (a 64-byte pong) goes out with fi_inject, as fi_pingpong sends: the provider
  // copies it at once, so the buffer is posted again right away and no send completion has to be
  // reaped before the next ping. The cost of the round trip is then the provider's, not ours.
  if (len <= endpoint_->info().inject_size &&
      endpoint_->PostInject(slot.buf->data(), len, to) == 0) {
    Post(slot);
    return;
  }
  slot.state = Slot::State::kReplying;
  slot.reply_len = len;
  slot.reply_to = to;
  pending_.push_back(&slot);
  FlushPending();
}

bool Responder::FlushPending() {
  size_t done = 0;
  for (; done < pending_.size(); ++done) {
    Slot& slot = *pending_[done];
    const bool reply = slot.state == Slot::State::kReplying;
    const ssize_t ret =
        reply ? endpoint_->PostSend(slot.buf->data(), slot.reply_len, slot.desc, slot.reply_to,
                                    &slot.ctx)
              : endpoint_->PostRecv(slot.buf->data(), slot.buf->size(), slot.desc, &slot.ctx);
    if (ret == -FI_EAGAIN) break;
    if (ret != 0 && reply) {
      send_errors_.fetch_add(1, std::memory_order_relaxed);
      // Post() may append to pending_ only on -FI_EAGAIN, after the range we erase below.
      Post(slot);
    } else if (ret != 0) {
      recv_errors_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(done));
  return pending_.empty();
}

RemoteRegion Responder::RmaSink() {
  if (rma_sink_ != nullptr) return rma_region_;
  if (!options_.rma_sink || !endpoint_->info().rma) return RemoteRegion{};
  // Not zeroed and never read: what peers write here is only counted by them.
  auto sink = std::make_unique<AlignedBuffer>(options_.max_message_bytes, /*zero=*/false);
  auto region = endpoint_->RegisterRemoteWrite(sink->span());
  if (!region.ok()) {
    // Answered as "no sink"; the prober reports FAILED_PRECONDITION. Asked again next time.
    recv_errors_.fetch_add(1, std::memory_order_relaxed);
    return RemoteRegion{};
  }
  rma_sink_ = std::move(sink);
  rma_region_ = *region;
  return rma_region_;
}

void Responder::Handle(Slot& slot, size_t len, fi_addr_t source) {
  received_.fetch_add(1, std::memory_order_relaxed);
  std::span<std::byte> msg(slot.buf->data(), std::min(len, slot.buf->size()));
  const std::optional<MessageHeader> h = DecodeHeader(msg);
  if (!h) return Discard(slot);
  const std::optional<fi_addr_t> to = Verify(source, h->sender);
  if (!to) return Post(slot);
  // The last message decides: a background ping lets the loop block after answering.
  no_spin_ = h->type == MessageType::kPing && (h->value & kNoSpinFlag) != 0;
  switch (h->type) {
    case MessageType::kPing:
      pings_.fetch_add(1, std::memory_order_relaxed);
      RewriteType(msg, MessageType::kPong, h->value);
      Reply(slot, msg.size(), *to);
      return;
    case MessageType::kBwData:
      return HandleBwData(slot, msg, *h, *to);
    case MessageType::kRmaHello:
      return HandleRmaHello(slot, *h, *to);
    case MessageType::kBwDone:
    case MessageType::kHello:
      return Acknowledge(slot, *h, *to);
    default:
      // Answers (kPong, kBwEcho, acks) never come to a responder; count them as garbage.
      return Discard(slot);
  }
}

void Responder::Discard(Slot& slot) {
  garbage_.fetch_add(1, std::memory_order_relaxed);
  Post(slot);
}

Responder::Session* Responder::FindSession(uint64_t id) {
  auto it = std::find_if(sessions_.begin(), sessions_.end(),
                         [&](const Session& s) { return s.id == id; });
  return it == sessions_.end() ? nullptr : &*it;
}

void Responder::HandleBwData(Slot& slot, std::span<std::byte> msg, const MessageHeader& h,
                             fi_addr_t to) {
  bw_messages_.fetch_add(1, std::memory_order_relaxed);
  bw_bytes_.fetch_add(msg.size(), std::memory_order_relaxed);
  Session* session = FindSession(h.session);
  if (session == nullptr) {
    // A new session takes the oldest entry's place.
    session = &sessions_[next_session_];
    next_session_ = (next_session_ + 1) % sessions_.size();
    *session = Session{h.session, 0, 0};
  }
  session->messages++;
  session->bytes += msg.size();
  if ((h.value & kEchoFlag) != 0) {
    RewriteType(msg, MessageType::kBwEcho, h.value);
    Reply(slot, msg.size(), to);
  } else {
    Post(slot);
  }
}

void Responder::HandleRmaHello(Slot& slot, const MessageHeader& h, fi_addr_t to) {
  rma_hellos_.fetch_add(1, std::memory_order_relaxed);
  MessageHeader ack;
  ack.type = MessageType::kRmaInfo;
  ack.session = h.session;
  ack.sender = endpoint_->address();
  const size_t n = EncodeHeader(ack, slot.buf->span());
  if (n == 0 || !EncodeRegion(RmaSink(), slot.buf->span().subspan(n))) return Discard(slot);
  Reply(slot, n + kRegionBytes, to);
}

void Responder::Acknowledge(Slot& slot, const MessageHeader& h, fi_addr_t to) {
  MessageHeader ack;
  ack.session = h.session;
  ack.sender = endpoint_->address();
  if (h.type == MessageType::kHello) {
    ack.type = MessageType::kHelloAck;
    ack.seq = slots_.size();
    ack.value = options_.max_message_bytes;
  } else {
    const Session* session = FindSession(h.session);
    ack.type = MessageType::kBwDoneAck;
    ack.seq = session == nullptr ? 0 : session->messages;
    ack.value = session == nullptr ? 0 : session->bytes;
  }
  const size_t n = EncodeHeader(ack, slot.buf->span());
  if (n == 0) return Discard(slot);
  Reply(slot, n, to);
}

}  // namespace efawatch::fabric
