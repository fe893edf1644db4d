// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "probes/fabric/endpoint.h"
#include "probes/fabric/message.h"

namespace efawatch::fabric::tools {

/// An endpoint driven by hand toward one responder: sends whatever header it is given (a forged
/// sender included) and keeps the types of the messages that come back. For the security tests
/// and `efawatch-fabric-probe forge`; probes never send a header they did not build themselves.
/// One send buffer and one posted receive of 4 KiB: headers only.
class RawPeer {
 public:
  static absl::StatusOr<std::unique_ptr<RawPeer>> Create(const EndpointOptions& options,
                                                         const std::string& peer);
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  /// Sends one message of `header` alone and polls until its send completes (at most 5 s).
  absl::Status Send(const MessageHeader& header);
  /// Polls until `done()` holds or `timeout` passes, keeping what arrives.
  void PollUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout);
  void PollFor(std::chrono::milliseconds d) {
    PollUntil([] { return false; }, d);
  }

  /// Types of the probe messages that arrived so far, in order.
  const std::vector<MessageType>& arrived() const { return arrived_; }
  /// Messages that arrived but were no probe message.
  size_t garbage() const { return garbage_; }
  const std::string& address() const { return ep_->address(); }

 private:
  static constexpr size_t kBytes = 4096;
  struct Buffer {
    fi_context2 ctx{};
    AlignedBuffer buf{kBytes};
    void* desc = nullptr;
  };
  RawPeer() = default;
  // One poll of the CQ; returns the completions read.
  ssize_t PollOnce();

  Buffer tx_, rx_;
  std::unique_ptr<Endpoint> ep_;  // Declared after the buffers: it closes first.
  fi_addr_t peer_ = FI_ADDR_UNSPEC;
  bool sent_ = false;
  std::vector<MessageType> arrived_;
  size_t garbage_ = 0;
};

}  // namespace efawatch::fabric::tools
