// SPDX-License-Identifier: Apache-2.0
#include <rdma/fi_errno.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "probes/fabric/fi_status.h"
#include "probes/fabric/message.h"
#include "probes/fabric/probe.h"
#include "probes/fabric/probe_link.h"

namespace efawatch::fabric {
namespace {

using internal::Op;
using internal::OpOf;

constexpr size_t kControlBytes = 4096;  // Holds any header (kMaxAddressBytes + 32).
constexpr auto kSpinBeforeSleep = std::chrono::milliseconds(2);

// Runs one bandwidth probe. Holds the per-run state that the completion handler updates, so the
// phases below read as the protocol: hello, then per size a warm-up window, a timed stream and a
// kBwDone / kBwDoneAck exchange.
class BandwidthRun {
 public:
  BandwidthRun(const BandwidthOptions& options, std::stop_token stop, const common::Clock& clock)
      : options_(options), stop_(std::move(stop)), clock_(clock) {}

  absl::StatusOr<BandwidthResult> Run();

 private:
  enum class Wait { kOk, kStalled, kDeadline, kCancelled, kBroken };

  ssize_t Pump();
  std::optional<Wait> Step();
  // Polls until `done()` holds, the peer stalls, the deadline passes or the stop token fires.
  template <typename Pred>
  Wait PumpUntil(Pred done);
  // Sends a control message and waits for the matching answer of `answer` type (a kHello is sent
  // again while none comes).
  Wait Control(MessageType type, MessageType answer);
  // Posts one control message (after the previous one's send completed).
  Wait SendControl(const MessageHeader& h);
  // Streams messages of `size` bytes in `session` for `duration`, or exactly `messages` when
  // duration is zero (warm-up). Returns when everything sent has completed (and echoed).
  Wait Stream(size_t size, uint64_t session, std::chrono::nanoseconds duration, uint64_t messages);
  void End(Wait w);

  // The phases of Run(), in order. Each returns early on the first error, as Run() does.
  absl::Status Validate() const;
  // Opens the endpoint and fills in the result's description of it.
  absl::Status Open();
  // The largest message of the sweep (at least `header`), or an error beyond max_msg_size.
  absl::StatusOr<size_t> LargestMessage(size_t header) const;
  // Allocates the data, control and receive buffers and posts the receives.
  absl::Status SetUpBuffers(size_t max_size);
  // kHello (and kRmaHello with RMA); sets the window and the responder's largest message.
  Wait Hello(uint64_t* peer_max);
  // Measures every size the responder accepts; stops at the first failed wait.
  Wait Sweep(size_t header, uint64_t peer_max);
  // Warm-up, timed stream and kBwDone exchange of one size; appends its point on success.
  Wait Measure(size_t size);
  // Sets `end` from `w` and the elapsed time; returns the result.
  BandwidthResult Finish(Wait w, std::chrono::steady_clock::time_point start);

  const BandwidthOptions& options_;
  std::stop_token stop_;
  const common::Clock& clock_;
  std::chrono::steady_clock::time_point deadline_;
  std::unique_ptr<internal::ProbeLink> link_;
  Endpoint* ep_ = nullptr;
  BandwidthResult r_;

  size_t rx_bytes_ = 0;
  std::vector<Op> rx_;
  std::vector<Op> tx_;  // Data sends; all share buffer data_index_.
  std::vector<Op*> free_tx_;
  Op control_tx_;
  size_t data_index_ = 0;

  uint64_t session_ = 0;  // Session whose echoes count.
  uint64_t tx_outstanding_ = 0;
  uint64_t echo_outstanding_ = 0;
  uint64_t echo_messages_ = 0;
  uint64_t echo_bytes_ = 0;
  std::optional<MessageHeader> answer_;
  std::optional<RemoteRegion> region_;  // The responder's RMA sink, from kRmaInfo.
  uint64_t written_ = 0;                // RMA writes completed without error.
  MessageType awaited_answer_ = MessageType::kHelloAck;
  uint64_t awaited_session_ = 0;
  std::chrono::steady_clock::time_point last_completion_;
  bool broken_ = false;
};

ssize_t BandwidthRun::Pump() {
  Completion done[32];
  const ssize_t n = ep_->Poll(done);
  if (n < 0) {
    broken_ = true;
    r_.last_error = std::string(FiStatus("fi_cq_read", n).message());
    return n;
  }
  if (n > 0) last_completion_ = clock_.Now();
  for (ssize_t i = 0; i < n; ++i) {
    Op* op = OpOf(done[i].context);
    if (done[i].error != 0) {
      ++r_.errors;
      r_.last_error = ep_->last_error();
    }
    if (op->send) {
      op->busy = false;
      if (op != &control_tx_) {
        --tx_outstanding_;
        free_tx_.push_back(op);
        if (done[i].error == 0 && options_.rma) ++written_;
        // A failed send will never be echoed.
        if (done[i].error != 0 && options_.bidirectional && echo_outstanding_ > 0) {
          --echo_outstanding_;
        }
      }
      continue;
    }
    if (done[i].error == 0) {
      std::span<const std::byte> msg(link_->buffers[op->index]->data(), done[i].len);
      auto h = DecodeHeader(msg);
      if (h && h->type == MessageType::kBwEcho && h->session == session_) {
        if (echo_outstanding_ > 0) --echo_outstanding_;
        ++echo_messages_;
        echo_bytes_ += done[i].len;
      } else if (h && h->type == awaited_answer_ && h->session == awaited_session_) {
        if (h->type == MessageType::kRmaInfo) {
          region_ = DecodeRegion(msg.subspan(std::min(msg.size(), HeaderBytes(h->sender.size()))));
        }
        answer_ = std::move(h);
      }
    }
    ep_->PostRecv(link_->buffers[op->index]->data(), rx_bytes_, link_->descs[op->index], &op->ctx);
  }
  return n;
}

// One turn of a wait loop: progress, or the reason to stop waiting (nullopt: keep going).
std::optional<BandwidthRun::Wait> BandwidthRun::Step() {
  if (stop_.stop_requested()) return Wait::kCancelled;
  const ssize_t n = Pump();
  if (n < 0) return Wait::kBroken;
  if (n > 0) return std::nullopt;
  const auto now = clock_.Now();
  if (now >= deadline_) return Wait::kDeadline;
  if (now - last_completion_ >= options_.stall_timeout) return Wait::kStalled;
  if (now - last_completion_ > kSpinBeforeSleep) ep_->Wait(std::chrono::milliseconds(1), -1);
  return std::nullopt;
}

template <typename Pred>
BandwidthRun::Wait BandwidthRun::PumpUntil(Pred done) {
  last_completion_ = clock_.Now();
  while (!done()) {
    if (auto step = Step()) return *step;
  }
  return Wait::kOk;
}

BandwidthRun::Wait BandwidthRun::Control(MessageType type, MessageType answer) {
  MessageHeader h;
  h.type = type;
  h.session = session_;
  h.sender = ep_->address();
  answer_.reset();
  awaited_answer_ = answer;
  awaited_session_ = session_;
  if (type != MessageType::kHello) {
    if (Wait w = SendControl(h); w != Wait::kOk) return w;
    return PumpUntil([&] { return answer_.has_value(); });
  }
  // The hello is sent again until answered (see internal::kFirstResend), within one stall
  // timeout; an answer to any copy will do. Later messages come from a known address.
  const auto give_up = clock_.Now() + options_.stall_timeout;
  internal::HelloResends resends(give_up);
  while (true) {
    if (Wait w = SendControl(h); w != Wait::kOk) return w;
    const auto resend_at = resends.Next(clock_.Now());
    Wait w = PumpUntil([&] { return answer_.has_value() || clock_.Now() >= resend_at; });
    if (w != Wait::kOk || answer_.has_value()) return w;
    if (clock_.Now() >= give_up) return Wait::kStalled;
  }
}

BandwidthRun::Wait BandwidthRun::SendControl(const MessageHeader& h) {
  // The previous control send must have completed before its buffer is rewritten.
  Wait w = PumpUntil([&] { return !control_tx_.busy; });
  if (w != Wait::kOk) return w;
  std::byte* buf = link_->buffers[control_tx_.index]->data();
  const size_t len = EncodeHeader(h, {buf, kControlBytes});
  control_tx_.busy = true;
  ssize_t ret;
  bool posted = false;
  w = PumpUntil([&] {
    ret = ep_->PostSend(buf, len, link_->descs[control_tx_.index], link_->peer, &control_tx_.ctx);
    posted = ret != -FI_EAGAIN;
    return posted;
  });
  if (w != Wait::kOk) return w;
  if (ret != 0) {
    control_tx_.busy = false;
    ++r_.errors;
    r_.last_error = std::string(FiStatus("fi_send", ret).message());
    broken_ = true;
    return Wait::kBroken;
  }
  return Wait::kOk;
}

BandwidthRun::Wait BandwidthRun::Stream(size_t size, uint64_t session,
                                        std::chrono::nanoseconds duration, uint64_t messages) {
  Wait w = PumpUntil([&] { return tx_outstanding_ == 0 && echo_outstanding_ == 0; });
  if (w != Wait::kOk) return w;
  session_ = session;
  MessageHeader h;
  h.type = MessageType::kBwData;
  h.session = session;
  h.value = options_.bidirectional ? kEchoFlag : 0;
  h.sender = ep_->address();
  std::byte* buf = link_->buffers[data_index_]->data();
  EncodeHeader(h, {buf, size});

  const auto t0 = clock_.Now();
  uint64_t posted = 0;
  auto more = [&] {
    return duration.count() > 0 ? clock_.Now() - t0 < duration : posted < messages;
  };
  last_completion_ = t0;
  while (true) {
    const uint64_t in_flight = options_.bidirectional ? echo_outstanding_ : tx_outstanding_;
    bool again = false;
    if (in_flight < r_.window && !free_tx_.empty() && more()) {
      Op* op = free_tx_.back();
      // RMA writes all land on the start of the sink: the responder never reads it, and one
      // region keeps its memory bounded by the largest message.
      const ssize_t ret =
          options_.rma ? ep_->PostWrite(buf, size, link_->descs[data_index_], link_->peer,
                                        region_->address, region_->key, &op->ctx)
                       : ep_->PostSend(buf, size, link_->descs[data_index_], link_->peer, &op->ctx);
      if (ret == 0) {
        free_tx_.pop_back();
        op->busy = true;
        ++tx_outstanding_;
        if (options_.bidirectional) ++echo_outstanding_;
        ++posted;
        continue;  // Fill the window before polling.
      }
      if (ret != -FI_EAGAIN) {
        ++r_.errors;
        r_.last_error = std::string(FiStatus(options_.rma ? "fi_write" : "fi_send", ret).message());
        broken_ = true;
        return Wait::kBroken;
      }
      again = true;
    }
    if (!again && !more() && tx_outstanding_ == 0 && echo_outstanding_ == 0) return Wait::kOk;
    if (auto step = Step()) return *step;
  }
}

void BandwidthRun::End(Wait w) {
  switch (w) {
    case Wait::kStalled:
    case Wait::kBroken:
      r_.end = ProbeEnd::kPeerTimedOut;
      break;
    case Wait::kDeadline:
      r_.end = ProbeEnd::kDeadlineExceeded;
      break;
    case Wait::kCancelled:
      r_.end = ProbeEnd::kCancelled;
      break;
    case Wait::kOk:
      break;
  }
}

absl::Status BandwidthRun::Validate() const {
  if (options_.sizes.empty()) return absl::InvalidArgumentError("no bandwidth sizes given");
  if (options_.window == 0) return absl::InvalidArgumentError("bandwidth window must be > 0");
  if (options_.rma && options_.bidirectional) {
    return absl::InvalidArgumentError("RMA bandwidth is one-way: drop bidirectional or rma");
  }
  return absl::OkStatus();
}

absl::Status BandwidthRun::Open() {
  EndpointOptions endpoint = options_.endpoint;
  endpoint.rma = options_.rma;
  auto opened = internal::OpenLink(endpoint, options_.peer);
  if (!opened.ok()) return opened.status();
  link_ = *std::move(opened);
  ep_ = link_->ep.get();
  if (options_.rma) {
    if (absl::Status s = RequireRma(ep_->info()); !s.ok()) return s;
  }
  r_.fabric = ep_->info();
  r_.local_address = ep_->Printable(ep_->address());
  r_.peer_address = link_->peer_printable;
  r_.bidirectional = options_.bidirectional;
  r_.rma = options_.rma;
  return absl::OkStatus();
}

absl::StatusOr<size_t> BandwidthRun::LargestMessage(size_t header) const {
  size_t max_size = header;
  for (size_t s : options_.sizes) max_size = std::max(max_size, s);
  if (max_size > ep_->info().max_msg_size) {
    return absl::InvalidArgumentError(absl::StrCat("message size ", max_size,
                                                   " exceeds the provider's max_msg_size ",
                                                   ep_->info().max_msg_size));
  }
  return max_size;
}

absl::Status BandwidthRun::SetUpBuffers(size_t max_size) {
  // Receives take answers, and echoes when bidirectional (any receive can match any message).
  rx_bytes_ = options_.bidirectional ? std::max(max_size, kControlBytes) : kControlBytes;
  const size_t rx_count = options_.bidirectional ? options_.window + 4 : 4;
  rx_.resize(rx_count);
  tx_.resize(options_.window);
  auto data = link_->AddBuffer(max_size);
  if (!data.ok()) return data.status();
  data_index_ = *data;
  auto control = link_->AddBuffer(kControlBytes);
  if (!control.ok()) return control.status();
  control_tx_.send = true;
  control_tx_.index = *control;
  for (Op& op : tx_) {
    op.send = true;
    op.index = data_index_;
    free_tx_.push_back(&op);
  }
  for (Op& op : rx_) {
    auto idx = link_->AddBuffer(rx_bytes_);
    if (!idx.ok()) return idx.status();
    op.index = *idx;
    const ssize_t ret =
        ep_->PostRecv(link_->buffers[op.index]->data(), rx_bytes_, link_->descs[op.index], &op.ctx);
    if (ret != 0) return FiStatus("fi_recv", ret);
  }
  return absl::OkStatus();
}

BandwidthRun::Wait BandwidthRun::Hello(uint64_t* peer_max) {
  // Hello: learn the responder's receive depth and largest message, and set up the connection
  // outside the timed part.
  session_ = internal::NewSession();
  Wait w = Control(MessageType::kHello, MessageType::kHelloAck);
  if (w != Wait::kOk) return w;
  const uint64_t peer_depth = std::max<uint64_t>(answer_->seq, 1);
  *peer_max = answer_->value;
  // Writes need no posted receive at the responder, so its receive depth does not cap them.
  r_.window = options_.rma ? options_.window
                           : static_cast<uint32_t>(std::min<uint64_t>(options_.window, peer_depth));
  if (!options_.rma) return Wait::kOk;
  return Control(MessageType::kRmaHello, MessageType::kRmaInfo);
}

BandwidthRun::Wait BandwidthRun::Sweep(size_t header, uint64_t peer_max) {
  Wait w = Wait::kOk;
  for (size_t requested : options_.sizes) {
    const size_t size = std::max(requested, header);
    if (size > peer_max) {
      r_.last_error = absl::StrCat("size ", size, " skipped: responder accepts at most ", peer_max);
      continue;
    }
    w = Measure(size);
    if (w != Wait::kOk) break;
  }
  return w;
}

BandwidthRun::Wait BandwidthRun::Measure(size_t size) {
  Wait w = Stream(size, internal::NewSession(), std::chrono::nanoseconds(0), r_.window);
  if (w != Wait::kOk) return w;
  const uint64_t session = internal::NewSession();
  echo_messages_ = 0;
  echo_bytes_ = 0;
  written_ = 0;
  const auto t0 = clock_.Now();
  w = Stream(size, session, options_.duration_per_size, 0);
  if (w != Wait::kOk) return w;
  w = Control(MessageType::kBwDone, MessageType::kBwDoneAck);
  if (w != Wait::kOk) return w;
  const auto t1 = clock_.Now();
  BandwidthPoint p;
  p.message_bytes = size;
  if (options_.rma) {
    p.messages = written_;
    p.bytes = written_ * size;
  } else {
    p.messages = answer_->seq + echo_messages_;
    p.bytes = answer_->value + echo_bytes_;
  }
  p.seconds = std::chrono::duration<double>(t1 - t0).count();
  p.gbytes_per_second = p.seconds > 0 ? static_cast<double>(p.bytes) / p.seconds / 1e9 : 0;
  r_.points.push_back(p);
  return Wait::kOk;
}

BandwidthResult BandwidthRun::Finish(Wait w, std::chrono::steady_clock::time_point start) {
  End(w);
  r_.elapsed = clock_.Now() - start;
  return r_;
}

absl::StatusOr<BandwidthResult> BandwidthRun::Run() {
  const auto start = clock_.Now();
  deadline_ = start + options_.deadline;
  if (absl::Status s = Validate(); !s.ok()) return s;
  if (absl::Status s = Open(); !s.ok()) return s;
  const size_t header = HeaderBytes(ep_->address().size());
  absl::StatusOr<size_t> max_size = LargestMessage(header);
  if (!max_size.ok()) return max_size.status();
  if (absl::Status s = SetUpBuffers(*max_size); !s.ok()) return s;

  uint64_t peer_max = 0;
  const Wait w = Hello(&peer_max);
  if (w != Wait::kOk) return Finish(w, start);
  if (options_.rma) {
    if (!region_.has_value() || region_->bytes == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("responder ", r_.peer_address,
                       " offers no RMA sink (its provider has no RMA, or the sink is off)"));
    }
    peer_max = std::min<uint64_t>(peer_max, region_->bytes);
  }
  return Finish(Sweep(header, peer_max), start);
}

}  // namespace

std::vector<size_t> DefaultBandwidthSizes() {
  std::vector<size_t> sizes;
  for (size_t s = 4096; s <= (8u << 20); s *= 4) sizes.push_back(s);
  if (sizes.back() != (8u << 20)) sizes.push_back(8u << 20);
  return sizes;
}

absl::Status RequireRma(const FabricInfo& fabric) {
  if (fabric.rma) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("provider ", fabric.provider.empty() ? "(none)" : fabric.provider,
                   " has no RMA (FI_RMA); measure with messages instead (no --rma)"));
}

absl::StatusOr<BandwidthResult> Bandwidth(const BandwidthOptions& options, std::stop_token stop,
                                          const common::Clock& clock) {
  BandwidthRun run(options, std::move(stop), clock);
  return run.Run();
}

uint64_t BandwidthMemoryBytes(const BandwidthOptions& options) {
  // As BandwidthRun::SetUpBuffers sizes them.
  uint64_t max_size = kControlBytes;
  for (size_t s : options.sizes) max_size = std::max<uint64_t>(max_size, s);
  const uint64_t rx_bytes = options.bidirectional ? max_size : kControlBytes;
  const uint64_t rx_count = options.bidirectional ? uint64_t{options.window} + 4 : 4;
  return max_size + kControlBytes + rx_count * rx_bytes;
}

}  // namespace efawatch::fabric
