// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "probes/collective/ops.h"
#include "probes/fabric/endpoint.h"

namespace efawatch::collective {

/// The host backend's rank: ring collectives on host memory (float32 sum) over one libfabric
/// RDM endpoint, sending to rank+1 and receiving from rank-1, one chunk per step as in NCCL's ring
/// algorithms: all_reduce = reduce-scatter then all-gather, 2(n-1) steps; all_gather and
/// reduce_scatter, n-1 steps each. Every message carries a sequence number, so a message from
/// another step or session is an error rather than wrong data.
///
/// Not thread-safe (one Endpoint); used by one participant thread.
class HostRing {
 public:
  /// Opens the endpoint and registers buffers for sizes up to `max_size` bytes.
  /// Waits for operations left posted by a failed exchange before the endpoint closes: closing
  /// an ofi_rxm endpoint with a rendezvous still in flight crashes libfabric 1.17.
  ~HostRing();

  static absl::StatusOr<std::unique_ptr<HostRing>> Open(const fabric::EndpointOptions& endpoint,
                                                        uint64_t max_size, uint32_t nranks,
                                                        uint64_t session_tag);
  const std::string& address() const { return ep_->address(); }
  const fabric::FabricInfo& info() const { return ep_->info(); }

  /// Resolves the neighbours among every rank's address.
  absl::Status Connect(const std::vector<std::string>& addresses, uint32_t rank);

  /// Runs `warmup` untimed and `iters` timed iterations of `op` on `size` bytes, then checks the
  /// data of the last one. Returns an error when a neighbour stops answering by `deadline`, or
  /// when `stop` is requested (abort).
  absl::StatusOr<SizeTiming> Run(const OpInfo& op, uint64_t size, uint32_t warmup, uint32_t iters,
                                 const std::stop_token& stop,
                                 std::chrono::steady_clock::time_point deadline);

 private:
  HostRing() = default;
  void Fill(const OpInfo& op, uint64_t elements);
  uint64_t Check(const OpInfo& op, uint64_t elements) const;
  absl::Status Iteration(const OpInfo& op, uint64_t elements, const std::stop_token& stop,
                         std::chrono::steady_clock::time_point deadline);
  // Sends `send` (n floats) to the right and receives as many from the left; the received
  // floats are in recv_payload() afterwards.
  absl::Status Exchange(const float* send, uint64_t n_send, uint64_t n_recv,
                        const std::stop_token& stop,
                        std::chrono::steady_clock::time_point deadline);
  // One exchange's progress across its polls.
  struct Progress {
    bool posted = false;
    bool sent = false;
    bool received = false;
    size_t got_len = 0;
  };
  // Polls until the send of `send_len` bytes and the receive posted by Exchange have completed;
  // sets `*got_len` to the bytes received.
  absl::Status Await(size_t send_len, const std::stop_token& stop,
                     std::chrono::steady_clock::time_point deadline, size_t* got_len);
  // Posts the send; -FI_EAGAIN leaves it unposted for the next poll.
  absl::Status TryPostSend(size_t len, Progress* p);
  // Notes the exchange's completions in `done`; an error completion fails the exchange.
  absl::Status Reap(std::span<const fabric::Completion> done, Progress* p);
  // DEADLINE_EXCEEDED naming the neighbour we waited for.
  absl::Status NeighbourLate(bool received) const;
  // Between empty polls: spins (yielding) for a while after the last completion, then sleeps.
  void Idle(std::chrono::steady_clock::duration since_completion);
  // Checks that the received message is the one step `seq` expects, `n_recv` floats long.
  absl::Status CheckReceived(uint64_t seq, uint64_t n_recv, size_t got_len) const;
  const float* recv_payload() const;
  // Chunk c's [begin, end) in elements of a buffer of `elements`.
  std::pair<uint64_t, uint64_t> Chunk(uint64_t elements, uint32_t c) const;

  uint32_t rank_ = 0;
  uint32_t nranks_ = 1;
  uint64_t tag_ = 0;
  uint64_t seq_ = 0;
  fi_addr_t right_ = FI_ADDR_UNSPEC;
  std::unique_ptr<fabric::AlignedBuffer> data_, send_, recv_;
  void* send_desc_ = nullptr;
  void* recv_desc_ = nullptr;
  fi_context2 rctx_{}, sctx_{};  // the operations of the current exchange
  bool recv_pending_ = false, send_pending_ = false;
  std::unique_ptr<fabric::Endpoint> ep_;  // last: closes before the buffers it points into
};

}  // namespace efawatch::collective
