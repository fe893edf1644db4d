// SPDX-License-Identifier: Apache-2.0
#include "daemon/agent/self_ping.h"

#include "absl/strings/str_cat.h"
#include "probes/fabric/probe.h"

namespace efawatch::agent {

using Outcome = signals::SelfPingState::Outcome;

SelfPing::SelfPing(fabric::EndpointOptions endpoint, std::string responder_address,
                   std::chrono::milliseconds interval, const common::Clock& clock,
                   std::function<void(const signals::SelfPingState&)> on_change)
    : endpoint_(std::move(endpoint)),
      address_(std::move(responder_address)),
      interval_(interval),
      clock_(clock),
      on_change_(std::move(on_change)),
      state_{address_.empty() ? Outcome::kNoResponder : Outcome::kPending, ""} {}

SelfPing::~SelfPing() { Stop(); }

void SelfPing::Start() {
  if (address_.empty() || thread_.joinable()) return;
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void SelfPing::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

signals::SelfPingState SelfPing::Latest() const {
  std::lock_guard lock(mu_);
  return state_;
}

void SelfPing::Run(const std::stop_token& stop) {
  // Ten timed messages after two that set up the connection, each given a second, the whole
  // within five: enough to tell a working path from a broken one.
  fabric::PingOptions o;
  o.endpoint = endpoint_;
  o.peer = address_;
  o.count = 10;
  o.warmup = 2;
  o.message_timeout = std::chrono::milliseconds(1000);
  o.deadline = std::chrono::milliseconds(5000);
  o.background = true;
  while (!stop.stop_requested()) {
    const absl::StatusOr<fabric::PingResult> r = fabric::Ping(o, stop, clock_);
    signals::SelfPingState s;
    if (!r.ok()) {
      s = {Outcome::kFailed, std::string(r.status().message())};
    } else if (r->received == 0) {
      s = {Outcome::kFailed, absl::StrCat("0 of ", r->sent, " pongs",
                                          r->last_error.empty() ? "" : ": " + r->last_error)};
    } else {
      s = {Outcome::kAnswered,
           absl::StrCat(r->received, " of ", r->sent, " pongs over ", r->fabric.provider)};
    }
    if (stop.stop_requested()) break;
    if (on_change_) on_change_(s);
    std::unique_lock lock(mu_);
    state_ = std::move(s);
    wake_.wait_for(lock, stop, interval_, [] { return false; });
  }
}

}  // namespace efawatch::agent
