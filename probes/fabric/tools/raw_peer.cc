// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/tools/raw_peer.h"

#include <rdma/fi_errno.h>

#include <thread>

#include "probes/fabric/fi_status.h"

namespace efawatch::fabric::tools {

absl::StatusOr<std::unique_ptr<RawPeer>> RawPeer::Create(const EndpointOptions& options,
                                                         const std::string& peer) {
  auto ep = Endpoint::Create(options);
  if (!ep.ok()) return ep.status();
  std::unique_ptr<RawPeer> p(new RawPeer());
  p->ep_ = *std::move(ep);
  auto to = p->ep_->Resolve(peer);
  if (!to.ok()) return to.status();
  p->peer_ = *to;
  for (Buffer* b : {&p->tx_, &p->rx_}) {
    auto desc = p->ep_->Register(b->buf.span());
    if (!desc.ok()) return desc.status();
    b->desc = *desc;
  }
  const ssize_t ret = p->ep_->PostRecv(p->rx_.buf.data(), kBytes, p->rx_.desc, &p->rx_.ctx);
  if (ret != 0) return FiStatus("fi_recv", ret);
  return p;
}

absl::Status RawPeer::Send(const MessageHeader& header) {
  const size_t len = EncodeHeader(header, tx_.buf.span());
  if (len == 0) return absl::InvalidArgumentError("header does not encode");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  ssize_t ret;
  while ((ret = ep_->PostSend(tx_.buf.data(), len, tx_.desc, peer_, &tx_.ctx)) == -FI_EAGAIN) {
    if (std::chrono::steady_clock::now() >= until) return FiStatus("fi_send", ret);
    PollOnce();
  }
  if (ret != 0) return FiStatus("fi_send", ret);
  sent_ = false;
  PollUntil([this] { return sent_; }, std::chrono::seconds(5));
  return sent_ ? absl::OkStatus() : absl::DeadlineExceededError("send did not complete in 5 s");
}

void RawPeer::PollUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < until) {
    if (PollOnce() <= 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

ssize_t RawPeer::PollOnce() {
  Completion c[8];
  const ssize_t n = ep_->Poll(c);
  for (ssize_t i = 0; i < n; ++i) {
    if (c[i].context == &tx_.ctx) {
      sent_ = true;
      continue;
    }
    if (auto h = DecodeHeader({rx_.buf.data(), c[i].error == 0 ? c[i].len : 0})) {
      arrived_.push_back(h->type);
    } else {
      ++garbage_;
    }
    ep_->PostRecv(rx_.buf.data(), kBytes, rx_.desc, &rx_.ctx);
  }
  return n;
}

}  // namespace efawatch::fabric::tools
