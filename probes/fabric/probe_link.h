// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "probes/fabric/endpoint.h"

namespace efawatch::fabric::internal {

/// One posted operation. The fi_context2 comes first so a completion's op_context converts back.
struct Op {
  fi_context2 ctx{};
  bool send = false;
  bool busy = false;
  size_t index = 0;  ///< Buffer index in ProbeLink::buffers.
  uint64_t seq = 0;  ///< What a send carried (ping).
};

inline Op* OpOf(void* context) { return reinterpret_cast<Op*>(static_cast<fi_context2*>(context)); }

/// The prober's side of a run: its own endpoint, its registered buffers and the peer. The
/// endpoint is declared last so it closes (cancelling anything still posted) before the buffers
/// it may still point into are freed.
struct ProbeLink {
  std::vector<std::unique_ptr<AlignedBuffer>> buffers;
  std::vector<void*> descs;
  std::unique_ptr<Endpoint> ep;
  fi_addr_t peer = FI_ADDR_UNSPEC;
  std::string peer_printable;

  ~ProbeLink() { ep.reset(); }
  /// Allocates and registers a buffer; returns its index.
  absl::StatusOr<size_t> AddBuffer(size_t bytes);
};

/// Opens an endpoint (no wait object: probes poll) and inserts the peer's raw address.
absl::StatusOr<std::unique_ptr<ProbeLink>> OpenLink(const EndpointOptions& options,
                                                    const std::string& peer);

/// A prober's first message to a responder is a kHello sent until answered. A responder that
/// checks senders (FI_SOURCE) drops the first message of an address it has not seen, only
/// learning the address from it, so the first answer comes to the second hello: resent after
/// kFirstResend, then twice as long each time up to kMaxResend apart.
inline constexpr std::chrono::milliseconds kFirstResend{2};
inline constexpr std::chrono::milliseconds kMaxResend{100};

/// That schedule, for both probers: Next(now) is when to send the hello again after sending
/// it at `now` (never after `give_up`), each gap twice the one before up to kMaxResend.
class HelloResends {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  explicit HelloResends(TimePoint give_up) : give_up_(give_up) {}
  TimePoint Next(TimePoint now) {
    const TimePoint at = std::min(now + gap_, give_up_);
    gap_ = std::min<std::chrono::steady_clock::duration>(2 * gap_, kMaxResend);
    return at;
  }

 private:
  TimePoint give_up_;
  std::chrono::steady_clock::duration gap_ = kFirstResend;
};

/// A random id for one probe run, so late answers of an earlier run are never counted.
uint64_t NewSession();

}  // namespace efawatch::fabric::internal
