// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/host_ring.h"

#include <rdma/fi_errno.h>

#include <cstring>
#include <span>
#include <thread>

#include "absl/strings/str_cat.h"

namespace efawatch::collective {
namespace {

struct Header {
  uint64_t tag;
  uint64_t seq;
  uint64_t elements;
};
constexpr size_t kHeader = sizeof(Header);

// Spin this long for a completion before sleeping between polls: bandwidth wants spinning,
// while a rank waiting for a slow neighbour should not burn a core for the whole deadline.
constexpr auto kSpin = std::chrono::milliseconds(5);
constexpr auto kSleep = std::chrono::microseconds(200);
// How long a failed ring waits for its leftover operations before closing its endpoint.
constexpr auto kDrainTimeout = std::chrono::seconds(2);

float AllReduceInput(uint32_t rank, uint64_t i) {
  return static_cast<float>((rank + 1) * ((i % 7) + 1));
}
float GatherValue(uint32_t chunk, uint64_t j) {
  return static_cast<float>(chunk * 10 + (j % 3) + 1);
}

}  // namespace

HostRing::~HostRing() {
  if (!ep_ || (!recv_pending_ && !send_pending_)) return;
  if (recv_pending_) ep_->Cancel(&rctx_);
  if (send_pending_) ep_->Cancel(&sctx_);
  // A dead peer's connection fails its operations within moments; a live one that also gave up
  // closes its endpoint, which fails them too.
  const auto until = std::chrono::steady_clock::now() + kDrainTimeout;
  fabric::Completion done[8];
  while ((recv_pending_ || send_pending_) && std::chrono::steady_clock::now() < until) {
    const ssize_t n = ep_->Poll(done);
    if (n < 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (done[i].context == &rctx_) recv_pending_ = false;
      if (done[i].context == &sctx_) send_pending_ = false;
    }
    if (n == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (recv_pending_ || send_pending_) {
    // Closing now could crash the agent; leaking one endpoint of a failed probe cannot.
    (void)ep_.release();
    (void)data_.release();
    (void)send_.release();
    (void)recv_.release();
  }
}

absl::StatusOr<std::unique_ptr<HostRing>> HostRing::Open(const fabric::EndpointOptions& endpoint,
                                                         uint64_t max_size, uint32_t nranks,
                                                         uint64_t session_tag) {
  if (nranks == 0) return absl::InvalidArgumentError("nranks must be > 0");
  auto ring = std::unique_ptr<HostRing>(new HostRing());
  ring->nranks_ = nranks;
  ring->tag_ = session_tag;
  fabric::EndpointOptions o = endpoint;
  o.blocking_wait = false;
  auto ep = fabric::Endpoint::Create(o);
  if (!ep.ok()) return ep.status();
  ring->ep_ = *std::move(ep);
  // The largest message is the largest chunk: all_gather and reduce_scatter chunks are S/n, an
  // all_reduce chunk is ceil(S/4/n) floats.
  const uint64_t chunk_bytes = (max_size / 4 / nranks + 1) * 4;
  if (kHeader + chunk_bytes > ring->ep_->info().max_msg_size) {
    return absl::InvalidArgumentError(absl::StrCat("chunk of ", chunk_bytes,
                                                   " bytes exceeds the provider's max_msg_size ",
                                                   ring->ep_->info().max_msg_size));
  }
  ring->data_ = std::make_unique<fabric::AlignedBuffer>(max_size + 4);
  ring->send_ = std::make_unique<fabric::AlignedBuffer>(kHeader + chunk_bytes);
  ring->recv_ = std::make_unique<fabric::AlignedBuffer>(kHeader + chunk_bytes, /*zero=*/false);
  auto sd = ring->ep_->Register(ring->send_->span());
  if (!sd.ok()) return sd.status();
  auto rd = ring->ep_->Register(ring->recv_->span());
  if (!rd.ok()) return rd.status();
  ring->send_desc_ = *sd;
  ring->recv_desc_ = *rd;
  return ring;
}

absl::Status HostRing::Connect(const std::vector<std::string>& addresses, uint32_t rank) {
  if (addresses.size() != nranks_ || rank >= nranks_) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, " of ", addresses.size(), " addresses, expected ", nranks_));
  }
  rank_ = rank;
  auto right = ep_->Resolve(addresses[(rank + 1) % nranks_]);
  if (!right.ok()) return right.status();
  right_ = *right;
  // The left neighbour's address must be in the AV too, or its messages cannot be attributed on
  // providers with FI_SOURCE semantics.
  auto left = ep_->Resolve(addresses[(rank + nranks_ - 1) % nranks_]);
  return left.ok() ? absl::OkStatus() : left.status();
}

std::pair<uint64_t, uint64_t> HostRing::Chunk(uint64_t elements, uint32_t c) const {
  const uint64_t per = (elements + nranks_ - 1) / nranks_;
  const uint64_t begin = std::min<uint64_t>(elements, per * c);
  return {begin, std::min<uint64_t>(elements, begin + per)};
}

const float* HostRing::recv_payload() const {
  return reinterpret_cast<const float*>(recv_->data() + kHeader);
}

absl::Status HostRing::Exchange(const float* send, uint64_t n_send, uint64_t n_recv,
                                const std::stop_token& stop,
                                std::chrono::steady_clock::time_point deadline) {
  const uint64_t seq = ++seq_;
  // Members, not locals: a provider owns an operation's context until it completes or the
  // endpoint closes, which after an error return is later than this frame.
  rctx_ = {};
  sctx_ = {};
  const ssize_t ret = ep_->PostRecv(recv_->data(), kHeader + n_recv * 4, recv_desc_, &rctx_);
  if (ret != 0) return absl::AbortedError(absl::StrCat("fi_recv: ", fi_strerror(-ret)));
  recv_pending_ = true;
  Header h{tag_, seq, n_send};
  std::memcpy(send_->data(), &h, kHeader);
  if (n_send > 0) std::memcpy(send_->data() + kHeader, send, n_send * 4);
  size_t got_len = 0;
  if (auto st = Await(kHeader + n_send * 4, stop, deadline, &got_len); !st.ok()) return st;
  return CheckReceived(seq, n_recv, got_len);
}

absl::Status HostRing::Await(size_t send_len, const std::stop_token& stop,
                             std::chrono::steady_clock::time_point deadline, size_t* got_len) {
  Progress p;
  fabric::Completion done[8];
  auto last = std::chrono::steady_clock::now();
  while (!p.sent || !p.received) {
    if (!p.posted) {
      if (auto st = TryPostSend(send_len, &p); !st.ok()) return st;
    }
    const ssize_t n = ep_->Poll(done);
    if (n < 0) return absl::AbortedError(absl::StrCat("fi_cq_read: ", fi_strerror(-n)));
    const auto now = std::chrono::steady_clock::now();
    if (auto st = Reap({done, static_cast<size_t>(n)}, &p); !st.ok()) return st;
    if (n > 0) last = now;
    if (stop.stop_requested()) return absl::AbortedError("aborted");
    if (now >= deadline) return NeighbourLate(p.received);
    if (n == 0) Idle(now - last);
  }
  *got_len = p.got_len;
  return absl::OkStatus();
}

absl::Status HostRing::TryPostSend(size_t len, Progress* p) {
  const ssize_t ret = ep_->PostSend(send_->data(), len, send_desc_, right_, &sctx_);
  if (ret == 0) {
    p->posted = true;
    send_pending_ = true;
  } else if (ret != -FI_EAGAIN) {
    return absl::AbortedError(absl::StrCat("fi_send: ", fi_strerror(-ret)));
  }
  return absl::OkStatus();
}

absl::Status HostRing::Reap(std::span<const fabric::Completion> done, Progress* p) {
  for (const fabric::Completion& c : done) {
    if (c.error != 0) {
      if (c.context == &sctx_) send_pending_ = false;
      if (c.context == &rctx_) recv_pending_ = false;
      // ABORTED, not UNAVAILABLE: the coordinator blames an agent it cannot reach at all
      // (UNAVAILABLE) before the ranks that merely lost it as a neighbour.
      return absl::AbortedError(
          absl::StrCat("rank ", rank_, ": a ring neighbour failed: ", ep_->last_error()));
    }
    if (c.context == &sctx_) {
      p->sent = true;
      send_pending_ = false;
    }
    if (c.context == &rctx_) {
      p->received = true;
      recv_pending_ = false;
      p->got_len = c.len;
    }
  }
  return absl::OkStatus();
}

absl::Status HostRing::NeighbourLate(bool received) const {
  return absl::DeadlineExceededError(
      absl::StrCat("rank ", rank_, ": ", received ? "rank " : "no data from rank ",
                   received ? std::to_string((rank_ + 1) % nranks_) + " did not take our data"
                            : std::to_string((rank_ + nranks_ - 1) % nranks_),
                   " by the deadline"));
}

void HostRing::Idle(std::chrono::steady_clock::duration since_completion) {
  // Ranks of one host share its cores: yield while spinning so the neighbour we wait for can run.
  if (since_completion > kSpin) {
    ep_->Wait(kSleep, -1);
  } else {
    std::this_thread::yield();
  }
}

absl::Status HostRing::CheckReceived(uint64_t seq, uint64_t n_recv, size_t got_len) const {
  Header in{};
  if (got_len < kHeader) return absl::DataLossError("short ring message");
  std::memcpy(&in, recv_->data(), kHeader);
  if (in.tag != tag_ || in.seq != seq || in.elements != n_recv || got_len != kHeader + n_recv * 4) {
    return absl::DataLossError(absl::StrCat("rank ", rank_, ": ring message out of step (seq ",
                                            in.seq, ", expected ", seq, ")"));
  }
  return absl::OkStatus();
}

void HostRing::Fill(const OpInfo& op, uint64_t elements) {
  float* d = reinterpret_cast<float*>(data_->data());
  if (op.op == Op::kAllGather) {
    const auto [b, e] = Chunk(elements, rank_);
    for (uint64_t i = b; i < e; ++i) d[i] = GatherValue(rank_, i - b);
  } else {
    for (uint64_t i = 0; i < elements; ++i) d[i] = AllReduceInput(rank_, i);
  }
}

uint64_t HostRing::Check(const OpInfo& op, uint64_t elements) const {
  const float* d = reinterpret_cast<const float*>(data_->data());
  const float ranks_sum = static_cast<float>(nranks_) * static_cast<float>(nranks_ + 1) / 2;
  uint64_t wrong = 0;
  switch (op.op) {
    case Op::kAllReduce:
      for (uint64_t i = 0; i < elements; ++i) wrong += d[i] != ranks_sum * ((i % 7) + 1);
      break;
    case Op::kAllGather:
      for (uint32_t c = 0; c < nranks_; ++c) {
        const auto [b, e] = Chunk(elements, c);
        for (uint64_t i = b; i < e; ++i) wrong += d[i] != GatherValue(c, i - b);
      }
      break;
    case Op::kReduceScatter: {
      const auto [b, e] = Chunk(elements, rank_);
      for (uint64_t i = b; i < e; ++i) wrong += d[i] != ranks_sum * ((i % 7) + 1);
      break;
    }
    default:
      break;
  }
  return wrong;
}

absl::Status HostRing::Iteration(const OpInfo& op, uint64_t elements, const std::stop_token& stop,
                                 std::chrono::steady_clock::time_point deadline) {
  float* d = reinterpret_cast<float*>(data_->data());
  const uint32_t n = nranks_;
  auto mod = [n](int64_t x) { return static_cast<uint32_t>(((x % n) + n) % n); };
  const int64_t r = rank_;
  // Reduce-scatter: after n-1 steps rank r holds the sum of chunk (r + shift) mod n.
  if (op.op == Op::kAllReduce || op.op == Op::kReduceScatter) {
    const int64_t shift = op.op == Op::kReduceScatter ? -1 : 0;
    for (uint32_t s = 0; s + 1 < n; ++s) {
      const auto [sb, se] = Chunk(elements, mod(r - s + shift));
      const auto [rb, re] = Chunk(elements, mod(r - s - 1 + shift));
      if (auto st = Exchange(d + sb, se - sb, re - rb, stop, deadline); !st.ok()) return st;
      const float* in = recv_payload();
      for (uint64_t i = 0; i < re - rb; ++i) d[rb + i] += in[i];
    }
  }
  // All-gather: pass the owned chunks around the ring. After the all-reduce's reduce-scatter,
  // rank r owns chunk r+1; in a plain all_gather it owns chunk r.
  if (op.op == Op::kAllReduce || op.op == Op::kAllGather) {
    const int64_t owned = op.op == Op::kAllReduce ? r + 1 : r;
    for (uint32_t s = 0; s + 1 < n; ++s) {
      const auto [sb, se] = Chunk(elements, mod(owned - s));
      const auto [rb, re] = Chunk(elements, mod(owned - s - 1));
      if (auto st = Exchange(d + sb, se - sb, re - rb, stop, deadline); !st.ok()) return st;
      std::memcpy(d + rb, recv_payload(), (re - rb) * 4);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SizeTiming> HostRing::Run(const OpInfo& op, uint64_t size, uint32_t warmup,
                                         uint32_t iters, const std::stop_token& stop,
                                         std::chrono::steady_clock::time_point deadline) {
  if (!op.host) {
    return absl::InvalidArgumentError(
        absl::StrCat("the host backend does not run ", std::string(op.name)));
  }
  if (size + 4 > data_->size()) return absl::InvalidArgumentError("size above the joined maximum");
  const uint64_t elements = size / 4;
  std::chrono::nanoseconds timed{0};
  for (uint32_t i = 0; i < warmup + iters; ++i) {
    Fill(op, elements);  // in place: every iteration starts from the inputs (not timed)
    const auto t0 = std::chrono::steady_clock::now();
    if (auto st = Iteration(op, elements, stop, deadline); !st.ok()) return st;
    if (i >= warmup) timed += std::chrono::steady_clock::now() - t0;
  }
  SizeTiming t;
  t.size = size;
  t.time_us = std::chrono::duration<double, std::micro>(timed).count() / std::max(1u, iters);
  t.wrong = Check(op, elements);
  return t;
}

}  // namespace efawatch::collective
