// SPDX-License-Identifier: Apache-2.0
#include "daemon/agent/probe_runner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace efawatch::agent {

template <typename Options, typename Run, typename Fail>
void ProbeRunner::Resolve(const agent::ProbeTarget& target, Options o, Run run, Fail fail) {
  if (fabric_ == nullptr) {
    return fail(
        absl::FailedPreconditionError("this agent has no fabric (no provider found at start)"));
  }
  if (target.peer_agent.empty() && target.peer_address.empty()) {
    return fail(absl::InvalidArgumentError("give peer_agent (host:port) or peer_address"));
  }
  if (absl::Status s = target.peer_address.empty()
                           ? policy_.CheckAgent(target.peer_agent)
                           : policy_.CheckFabricAddress(target.peer_address);
      !s.ok()) {
    return fail(s);
  }
  // Validate before any network work; the peer address is checked by the provider later.
  o.peer = target.peer_address.empty() ? std::string("?") : target.peer_address;
  if (absl::Status s = fabric_->Validate(o); !s.ok()) return fail(s);
  if (!target.peer_address.empty()) return run(std::move(o));
  if (lookups_.fetch_add(1) >= kMaxLookups) {
    lookups_.fetch_sub(1);
    return fail(absl::ResourceExhaustedError(
        absl::StrCat("too many peer lookups in flight (limit ", kMaxLookups, ")")));
  }
  const auto lookup_timeout = std::min(o.deadline, std::chrono::milliseconds(5000));
  lookup_.LookupAsync(
      target.peer_agent, lookup_timeout,
      [this, o = std::move(o), run, fail](absl::StatusOr<std::string> addr) mutable {
        lookups_.fetch_sub(1);
        if (!addr.ok()) return fail(addr.status());
        o.peer = *std::move(addr);
        run(std::move(o));
      });
}

void ProbeRunner::Ping(const agent::ProbeTarget& target, fabric::PingOptions o,
                       agent::AgentHandler::PingDone done) {
  auto shared = std::make_shared<agent::AgentHandler::PingDone>(std::move(done));
  Resolve(
      target, std::move(o),
      [this, shared](fabric::PingOptions opts) { fabric_->StartPing(std::move(opts), *shared); },
      [shared](absl::Status s) { (*shared)(std::move(s)); });
}

void ProbeRunner::Bandwidth(const agent::ProbeTarget& target, fabric::BandwidthOptions o,
                            agent::AgentHandler::BandwidthDone done) {
  auto shared = std::make_shared<agent::AgentHandler::BandwidthDone>(std::move(done));
  Resolve(
      target, std::move(o),
      [this, shared](fabric::BandwidthOptions opts) {
        fabric_->StartBandwidth(std::move(opts), *shared);
      },
      [shared](absl::Status s) { (*shared)(std::move(s)); });
}

}  // namespace efawatch::agent
