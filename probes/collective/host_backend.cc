// SPDX-License-Identifier: Apache-2.0
#include "probes/collective/host_backend.h"

#include <algorithm>

#include "lib/common/stable_hash.h"
#include "probes/collective/host_ring.h"

namespace efawatch::collective {
namespace {

class HostBackend final : public RankBackend {
 public:
  explicit HostBackend(std::unique_ptr<HostRing> ring) : ring_(std::move(ring)) {}
  void Describe(JoinResponse* out) const override {
    out->fabric_address = ring_->address();
    out->provider = ring_->info().provider;
    out->local_ranks = 1;
  }
  absl::Status Connect(const StartRequest& start, const std::stop_token&,
                       std::chrono::steady_clock::time_point) override {
    std::vector<std::string> addresses(start.fabric_addresses.begin(),
                                       start.fabric_addresses.end());
    return ring_->Connect(addresses, start.rank);
  }
  absl::StatusOr<SizeTiming> Run(const OpInfo& op, uint64_t size, uint32_t warmup, uint32_t iters,
                                 const std::stop_token& stop,
                                 std::chrono::steady_clock::time_point deadline) override {
    return ring_->Run(op, size, warmup, iters, stop, deadline);
  }
  void Observe(RankResult* out) override { out->provider = ring_->info().provider; }

 private:
  std::unique_ptr<HostRing> ring_;
};

}  // namespace

BackendFactory HostBackendFactory(const fabric::EndpointOptions& endpoint) {
  return [endpoint](const JoinRequest& j) -> absl::StatusOr<std::unique_ptr<RankBackend>> {
    const uint64_t max_size = *std::max_element(j.sizes.begin(), j.sizes.end());
    // Every rank derives the same tag from the session id: messages of another session are
    // recognised as such.
    auto ring = HostRing::Open(endpoint, max_size, j.nranks, common::StableHash(7, j.session));
    if (!ring.ok()) return ring.status();
    return std::make_unique<HostBackend>(*std::move(ring));
  };
}

}  // namespace efawatch::collective
