// SPDX-License-Identifier: Apache-2.0
#include "daemon/agent/self_ping.h"

#include "absl/strings/str_cat.h"

namespace efawatch::agent {

using Outcome = signals::SelfPingState::Outcome;

namespace {

// Ten timed messages after two to set up the connection, each given a second, the whole within
// five: enough to tell a working path from a broken one, at a mesh round's cost.
fabric::PingOptions SelfPingOptions(const std::string& address) {
  fabric::PingOptions o;
  o.peer = address;
  o.count = 10;
  o.warmup = 2;
  o.message_timeout = std::chrono::milliseconds(1000);
  o.deadline = std::chrono::milliseconds(5000);
  o.background = true;
  return o;
}

}  // namespace

SelfPing::SelfPing(fabric::FabricService& fabric, std::chrono::milliseconds interval)
    : fabric_(fabric), interval_(interval) {
  if (fabric_.responder() == nullptr) shared_->state = {Outcome::kNoResponder, ""};
}

SelfPing::~SelfPing() { Stop(); }

void SelfPing::Start() {
  if (fabric_.responder() == nullptr || thread_.joinable()) return;
  thread_ = std::jthread([this](const std::stop_token& stop) { Run(stop); });
}

void SelfPing::Stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

signals::SelfPingState SelfPing::Latest() const {
  std::lock_guard lock(shared_->mu);
  return shared_->state;
}

void SelfPing::Run(const std::stop_token& stop) {
  const fabric::PingOptions options = SelfPingOptions(fabric_.responder()->address());
  while (!stop.stop_requested()) {
    uint64_t before = 0;
    {
      std::lock_guard lock(shared_->mu);
      before = shared_->reports;
    }
    fabric_.StartPing(options, [shared = shared_](absl::StatusOr<fabric::PingResult> r) {
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
      std::lock_guard lock(shared->mu);
      shared->state = std::move(s);
      ++shared->reports;
      shared->done_cv.notify_all();
    });
    std::unique_lock lock(shared_->mu);
    // The probe ends by its own deadline; Stop() cancels it through the fabric service's Stop.
    shared_->done_cv.wait(lock, stop, [&] { return shared_->reports != before; });
    shared_->done_cv.wait_for(lock, stop, interval_, [] { return false; });
  }
}

}  // namespace efawatch::agent
