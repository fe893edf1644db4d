// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "lib/common/probe_end.h"
#include "probes/fabric/endpoint.h"
#include "probes/fabric/stats.h"

namespace efawatch::fabric {

using common::ProbeEnd;
using common::ProbeEndName;

struct PingOptions {
  EndpointOptions endpoint;
  std::string peer;           ///< The responder's raw fabric address.
  uint32_t count = 100;       ///< Timed messages.
  uint32_t warmup = 10;       ///< Untimed messages first (connection setup, caches).
  size_t message_bytes = 64;  ///< Whole message, header included; raised to the header size.
  std::chrono::milliseconds message_timeout{1000};  ///< A pong later than this is lost.
  std::chrono::milliseconds deadline{10000};        ///< Whole probe, setup included.
  /// A background probe (the ping mesh): polls for each pong only briefly before sleeping
  /// between polls, and asks the responder not to keep polling after it answers. RTTs then
  /// include a wake-up on each side (tens of µs on tcp) and above ~100 µs are measured in
  /// sleep steps; the CPU of a mesh round falls to a fraction. On-demand pings (false) poll
  /// throughout, as fi_pingpong does.
  bool background = false;

  bool operator==(const PingOptions&) const = default;
};

struct PingResult {
  FabricInfo fabric;
  std::string local_address;   ///< Printable.
  std::string peer_address;    ///< Printable.
  size_t message_bytes = 0;    ///< What was really sent (after raising to the header size).
  uint32_t sent = 0;           ///< Timed messages sent.
  uint32_t received = 0;       ///< Pongs back within message_timeout.
  uint32_t lost = 0;           ///< Timed out, plus messages the deadline left unsent.
  uint32_t errors = 0;         ///< Sends that completed with an error.
  uint32_t late = 0;           ///< Pongs that came after their timeout (already counted lost).
  double loss_ratio = 0;       ///< (lost + errors) / count.
  RttSummary rtt;              ///< Of the received timed messages, monotonic clock.
  std::vector<double> rtt_us;  ///< Per received message, in send order.
  ProbeEnd end = ProbeEnd::kCompleted;
  std::string last_error;  ///< Text of the last error completion, if any.
  std::chrono::nanoseconds elapsed{0};
  /// Wall time of the timed loop: from the first timed send to the end of the last timed
  /// message's wait, everything between messages included. timed_loop / sent is the mean round
  /// trip as fi_pingpong computes it (its loop time / iterations, printed halved as usec/xfer),
  /// without the connection setup that the warm-up absorbs.
  std::chrono::nanoseconds timed_loop{0};

  bool operator==(const PingResult&) const = default;
};

/// Sends `count` pings (after `warmup`) to a Responder one at a time and times each round trip.
/// Opens its own endpoint for the run and closes it afterwards (keeps QP use short on EFA).
/// Returns an error only for what makes the probe impossible (no provider, a peer address the
/// provider rejects, bad options); a dead peer is a result with loss and `end` set, returned
/// within `deadline`. Busy-polls while waiting for a pong (that is what the RTT is for), backing
/// off to 100 µs sleeps once a pong is 2 ms late.
absl::StatusOr<PingResult> Ping(const PingOptions& options, const std::stop_token& stop = {},
                                const common::Clock& clock = common::SystemClock::Get());

/// The most memory Ping(options) allocates for its buffers (kTxSlots + kRxSlots messages), known
/// before anything is allocated so that a memory budget can refuse the request first.
uint64_t PingMemoryBytes(const PingOptions& options);

/// 4 KiB, 16 KiB, ... 4 MiB, 8 MiB.
std::vector<size_t> DefaultBandwidthSizes();

struct BandwidthOptions {
  EndpointOptions endpoint;
  std::string peer;                                     ///< The responder's raw fabric address.
  std::vector<size_t> sizes = DefaultBandwidthSizes();  ///< Message sizes, header included.
  bool bidirectional = false;  ///< The responder echoes every message back.
  /// One-sided: fi_write into the responder's RMA sink instead of sends into its receives. Needs
  /// FI_RMA on both sides (FAILED_PRECONDITION otherwise); not with `bidirectional`.
  bool rma = false;
  uint32_t window = 16;  ///< Messages in flight; capped by the responder's rx depth.
  std::chrono::milliseconds duration_per_size{200};  ///< Timed sending per size.
  std::chrono::milliseconds stall_timeout{2000};     ///< No completion for this long: dead peer.
  std::chrono::milliseconds deadline{30000};         ///< Whole probe, setup included.

  bool operator==(const BandwidthOptions&) const = default;
};

struct BandwidthPoint {
  size_t message_bytes = 0;
  uint64_t messages = 0;  ///< Delivered (acknowledged by the responder, plus echoes received).
  uint64_t bytes = 0;     ///< Delivered bytes, both directions when bidirectional.
  double seconds = 0;     ///< From the first timed send to the responder's final count.
  double gbytes_per_second = 0;  ///< bytes / seconds / 1e9 (decimal GB, like fabtests' MB).

  bool operator==(const BandwidthPoint&) const = default;
};

struct BandwidthResult {
  FabricInfo fabric;
  std::string local_address;
  std::string peer_address;
  bool bidirectional = false;
  bool rma = false;                    ///< Measured with RMA writes.
  uint32_t window = 0;                 ///< Effective window.
  std::vector<BandwidthPoint> points;  ///< One per size completed.
  uint32_t errors = 0;
  ProbeEnd end = ProbeEnd::kCompleted;
  std::string last_error;
  std::chrono::nanoseconds elapsed{0};

  bool operator==(const BandwidthResult&) const = default;
};

/// OK when `fabric` can do RMA writes; FAILED_PRECONDITION naming the provider otherwise.
absl::Status RequireRma(const FabricInfo& fabric);

/// Streams messages of each size to a Responder with `window` in flight, for duration_per_size,
/// then asks the responder how many bytes it got. With `rma` it first asks for the responder's
/// sink, then counts the writes that completed here (RMA is one-sided: the responder sees none),
/// and a kBwDone round trip after them closes the timed span. Same error/timeout contract as
/// Ping; FAILED_PRECONDITION when RMA is asked for and this provider or the responder lacks it.
absl::StatusOr<BandwidthResult> Bandwidth(const BandwidthOptions& options,
                                          std::stop_token stop = {},
                                          const common::Clock& clock = common::SystemClock::Get());

/// The most memory Bandwidth(options) allocates for its buffers: one send buffer of the largest
/// size, a control buffer, and window + 4 receive buffers of the largest size when bidirectional
/// (4 control-sized ones otherwise). Known before anything is allocated.
uint64_t BandwidthMemoryBytes(const BandwidthOptions& options);

}  // namespace efawatch::fabric
