// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/fabric_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace efawatch::fabric {

absl::StatusOr<std::unique_ptr<FabricService>> FabricService::Create(
    const FabricServiceOptions& options, const common::Clock& clock) {
  std::unique_ptr<FabricService> s(new FabricService(options, clock));
  if (options.responder) {
    ResponderOptions ro = options.responder_options;
    ro.endpoint = options.endpoint;
    auto r = Responder::Create(ro, clock);
    if (!r.ok()) return r.status();
    s->responder_ = *std::move(r);
  }
  return s;
}

FabricService::~FabricService() { Stop(); }

void FabricService::Stop() {
  std::list<std::pair<std::jthread, std::shared_ptr<std::atomic<bool>>>> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    workers.swap(workers_);
  }
  bw_free_.notify_all();
  for (auto& w : workers) w.first.request_stop();
  workers.clear();  // Joins: each probe returns promptly once its stop_token fires.
  if (responder_) responder_->Stop();
}

absl::Status FabricService::Validate(const PingOptions& o) const {
  const ProbeLimits& l = options_.limits;
  if (o.peer.empty()) return absl::InvalidArgumentError("peer fabric address is empty");
  if (o.count == 0 || o.count > l.max_count) {
    return absl::InvalidArgumentError(absl::StrCat("count must be 1..", l.max_count));
  }
  if (o.warmup > l.max_count) {
    return absl::InvalidArgumentError(absl::StrCat("warmup must be 0..", l.max_count));
  }
  if (o.message_bytes > l.max_message_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("message size must be at most ", l.max_message_bytes, " bytes"));
  }
  if (o.deadline.count() <= 0 || o.deadline > l.max_deadline) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadline must be 1..", l.max_deadline.count(), " ms"));
  }
  if (o.message_timeout.count() <= 0 || o.message_timeout > o.deadline) {
    return absl::InvalidArgumentError("message timeout must be positive and within the deadline");
  }
  return absl::OkStatus();
}

absl::Status FabricService::Validate(const BandwidthOptions& o) const {
  const ProbeLimits& l = options_.limits;
  if (o.peer.empty()) return absl::InvalidArgumentError("peer fabric address is empty");
  if (o.sizes.empty() || o.sizes.size() > l.max_sizes) {
    return absl::InvalidArgumentError(absl::StrCat("give 1..", l.max_sizes, " sizes"));
  }
  for (size_t s : o.sizes) {
    if (s == 0 || s > l.max_message_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("size ", s, " out of range 1..", l.max_message_bytes));
    }
  }
  if (o.rma && o.bidirectional) {
    return absl::InvalidArgumentError("RMA bandwidth is one-way: drop bidirectional or rma");
  }
  if (o.window == 0 || o.window > l.max_window) {
    return absl::InvalidArgumentError(absl::StrCat("window must be 1..", l.max_window));
  }
  if (o.duration_per_size.count() <= 0 || o.duration_per_size > l.max_per_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("time per size must be 1..", l.max_per_size.count(), " ms"));
  }
  if (o.deadline.count() <= 0 || o.deadline > l.max_deadline) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadline must be 1..", l.max_deadline.count(), " ms"));
  }
  return absl::OkStatus();
}

bool FabricService::Launch(std::function<void(std::stop_token)> work) {
  std::lock_guard<std::mutex> lock(mu_);
  // Reap finished workers so the list stays bounded by max_running.
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->second->load()) {
      it = workers_.erase(it);  // Joins a thread that has already returned.
    } else {
      ++it;
    }
  }
  if (stopping_ || workers_.size() >= options_.limits.max_running) return false;
  auto finished = std::make_shared<std::atomic<bool>>(false);
  workers_.emplace_back(std::jthread([work = std::move(work), finished](std::stop_token stop) {
                          work(std::move(stop));
                          finished->store(true);
                        }),
                        finished);
  return true;
}

absl::StatusOr<std::shared_ptr<common::MemoryBudget::Lease>> FabricService::Reserve(
    uint64_t bytes, std::string_view what) const {
  if (options_.budget == nullptr) return std::make_shared<common::MemoryBudget::Lease>();
  auto lease = options_.budget->Reserve(bytes, what);
  if (!lease.ok()) return lease.status();
  // Shared: the probe's std::function must be copyable, and a lease is move-only.
  return std::make_shared<common::MemoryBudget::Lease>(*std::move(lease));
}

namespace {

// A probe stops when the service stops (its thread's token) or its caller gives up (`cancel`):
// one source the probe polls, fed by both.
class ProbeStop {
 public:
  ProbeStop(const std::stop_token& thread, const std::stop_token& cancel)
      : on_thread_(thread, Request{&source_}), on_cancel_(cancel, Request{&source_}) {}
  std::stop_token token() const { return source_.get_token(); }

 private:
  struct Request {
    std::stop_source* source;
    void operator()() const { source->request_stop(); }
  };
  std::stop_source source_;
  std::stop_callback<Request> on_thread_;
  std::stop_callback<Request> on_cancel_;
};

}  // namespace

void FabricService::StartPing(PingOptions o, PingDone done, std::stop_token cancel) {
  if (absl::Status s = Validate(o); !s.ok()) return done(s);
  auto lease = Reserve(PingMemoryBytes(o), "ping");
  if (!lease.ok()) return done(lease.status());
  o.endpoint = options_.endpoint;
  auto shared_done = std::make_shared<PingDone>(std::move(done));
  const bool started = Launch([this, o, shared_done, lease = *lease,
                               cancel = std::move(cancel)](const std::stop_token& stop) {
    const ProbeStop probe_stop(stop, cancel);
    absl::StatusOr<PingResult> r = Ping(o, probe_stop.token(), clock_);
    *lease = {};  // Released before the caller hears of the end: it may ask again at once.
    if (r.ok()) {
      Record(r->peer_address, &*r, nullptr, r->end != ProbeEnd::kCompleted);
      Notify();
    }
    (*shared_done)(std::move(r));
  });
  if (!started) {
    (*shared_done)(absl::ResourceExhaustedError(
        absl::StrCat("too many fabric probes running (limit ", options_.limits.max_running, ")")));
  }
}

void FabricService::StartBandwidth(BandwidthOptions o, BandwidthDone done, std::stop_token cancel) {
  if (absl::Status s = Validate(o); !s.ok()) return done(s);
  auto lease = Reserve(BandwidthMemoryBytes(o), "bandwidth probe");
  if (!lease.ok()) return done(lease.status());
  o.endpoint = options_.endpoint;
  auto shared_done = std::make_shared<BandwidthDone>(std::move(done));
  const bool started = Launch([this, o, shared_done, lease = *lease,
                               cancel = std::move(cancel)](const std::stop_token& stop) {
    const ProbeStop probe_stop(stop, cancel);
    const auto start = clock_.Now();
    {
      // One bandwidth probe per NIC: two at once would each measure half the link. The condition
      // variable waits on the real steady clock whatever clock_ is, so it gets the deadline as a
      // duration: a time point of a fake clock would mean nothing to it.
      std::unique_lock<std::mutex> lock(mu_);
      const bool got = bw_free_.wait_for(lock, probe_stop.token(), o.deadline,
                                         [&] { return !bw_busy_ || stopping_; });
      if (!got || stopping_) {
        lock.unlock();
        *lease = {};
        (*shared_done)(
            cancel.stop_requested()
                ? absl::CancelledError("cancelled while waiting for the NIC")
                : absl::ResourceExhaustedError(
                      "another bandwidth probe is running on this NIC and did not finish within "
                      "the deadline"));
        return;
      }
      bw_busy_ = true;
    }
    BandwidthOptions left = o;
    left.deadline =
        std::chrono::duration_cast<std::chrono::milliseconds>(o.deadline - (clock_.Now() - start));
    absl::StatusOr<BandwidthResult> r = Bandwidth(left, probe_stop.token(), clock_);
    *lease = {};
    {
      std::lock_guard<std::mutex> lock(mu_);
      bw_busy_ = false;
    }
    bw_free_.notify_one();
    if (r.ok()) {
      Record(r->peer_address, nullptr, &*r, r->end != ProbeEnd::kCompleted);
      Notify();
    }
    (*shared_done)(std::move(r));
  });
  if (!started) {
    (*shared_done)(absl::ResourceExhaustedError(
        absl::StrCat("too many fabric probes running (limit ", options_.limits.max_running, ")")));
  }
}

void FabricService::Record(const std::string& peer, const PingResult* ping,
                           const BandwidthResult* bw, bool failed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!peers_.contains(peer) && peers_.size() >= options_.max_peers) {
    // Drop the least recently probed peer: its series disappear with it, so cardinality stays
    // bounded however many peers come and go.
    auto oldest = std::min_element(peers_.begin(), peers_.end(), [](const auto& a, const auto& b) {
      return a.second.last_run < b.second.last_run;
    });
    peers_.erase(oldest);
  }
  PeerProbeState& s = peers_[peer];
  s.peer = peer;
  s.last_run = clock_.WallNow();
  if (ping != nullptr) {
    s.ping = *ping;
    s.ping->rtt_us.clear();  // The summary is kept; the samples would cost up to 800 KB a peer.
    s.ping->rtt_us.shrink_to_fit();
  }
  if (bw != nullptr) {
    s.bandwidth = *bw;
    uint64_t bytes = 0;
    for (const BandwidthPoint& p : bw->points) bytes += p.bytes;
    probe_bytes_ += bytes;
  }
  if (failed) ++s.failures;
}

uint64_t FabricService::OwnTrafficBytes() const {
  uint64_t total = probe_bytes_.load();
  if (responder_) total += responder_->counters().bw_bytes;
  return total;
}

uint64_t FabricService::OwnEthernetTrafficBytes() const {
  if (responder_ == nullptr || responder_->info().provider.starts_with("efa")) return 0;
  return OwnTrafficBytes();
}

void FabricService::Notify() const {
  if (options_.on_probe_done) options_.on_probe_done();
}

std::vector<PeerProbeState> FabricService::PeerStates() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PeerProbeState> out;
  for (const auto& [peer, s] : peers_) out.push_back(s);
  return out;
}

}  // namespace efawatch::fabric
