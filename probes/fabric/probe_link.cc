// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/probe_link.h"

#include <random>

#include "absl/strings/str_cat.h"

namespace efawatch::fabric::internal {

absl::StatusOr<size_t> ProbeLink::AddBuffer(size_t bytes) {
  buffers.push_back(std::make_unique<AlignedBuffer>(bytes));
  auto desc = ep->Register(buffers.back()->span());
  if (!desc.ok()) return desc.status();
  descs.push_back(*desc);
  return buffers.size() - 1;
}

absl::StatusOr<std::unique_ptr<ProbeLink>> OpenLink(const EndpointOptions& options,
                                                    const std::string& peer) {
  if (peer.empty()) return absl::InvalidArgumentError("peer fabric address is empty");
  EndpointOptions o = options;
  o.blocking_wait = false;
  auto ep = Endpoint::Create(o);
  if (!ep.ok()) return ep.status();
  auto link = std::make_unique<ProbeLink>();
  link->ep = *std::move(ep);
  auto addr = link->ep->Resolve(peer);
  if (!addr.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("peer address not valid for provider ",
                                                   link->ep->info().provider, ": ",
                                                   std::string(addr.status().message())));
  }
  link->peer = *addr;
  link->peer_printable = link->ep->Printable(peer);
  return link;
}

uint64_t NewSession() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t s = 0;
  while (s == 0) s = rng();
  return s;
}

}  // namespace efawatch::fabric::internal
