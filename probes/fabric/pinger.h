// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <memory>
#include <stop_token>
#include <string>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "probes/fabric/probe.h"
#include "probes/fabric/probe_link.h"

namespace efawatch::fabric {

/// A ping endpoint kept open across runs. The fleet mesh pings its peers every interval, and
/// opening an endpoint costs a fi_getinfo each time (about 0.1 s of CPU on tcp here), which an
/// always-on mesh cannot pay k times per round. Ping() is Create + one Run.
///
/// Not thread-safe (one Endpoint). Runs to different peers reuse the registered buffers and
/// receives posted once; a session id per run keeps late pongs of an earlier run from counting.
class Pinger {
 public:
  /// Sends may outlive their pong a little (providers complete them lazily) and pongs may arrive
  /// after their timeout: a few of each in flight keep one slow message from stalling the next.
  static constexpr size_t kTxSlots = 8;
  static constexpr size_t kRxSlots = 8;

  /// Opens the endpoint for messages of `message_bytes` (raised to the header size).
  static absl::StatusOr<std::unique_ptr<Pinger>> Create(const EndpointOptions& endpoint,
                                                        size_t message_bytes);

  /// One probe to `peer` (raw fabric address); `options.endpoint`, `options.peer` and
  /// `options.message_bytes` are ignored (the Pinger's own apply). Same contract as Ping().
  absl::StatusOr<PingResult> Run(const std::string& peer, const PingOptions& options,
                                 const std::stop_token& stop = {},
                                 const common::Clock& clock = common::SystemClock::Get());

  const FabricInfo& info() const;
  /// Raw address of the endpoint.
  const std::string& address() const { return link_.ep->address(); }
  /// True when every send slot is still in flight: a blackholed peer can hold sends until the
  /// provider gives up on them, so the owner should open a fresh Pinger.
  bool Wedged() const;

 private:
  Pinger() = default;

  size_t message_bytes_ = 0;
  // The Ops point into the link's buffers; the link closes its endpoint first.
  internal::Op tx_[kTxSlots];
  internal::Op rx_[kRxSlots];
  internal::ProbeLink link_;
};

}  // namespace efawatch::fabric
