// SPDX-License-Identifier: Apache-2.0
#include "daemon/rpc/connection_gate.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "lib/common/listen_address.h"
#include "spdlog/spdlog.h"

namespace efawatch::rpc {
namespace {

// Per direction, while relaying: a gRPC message of the agent's API is a few hundred bytes, and
// one read of 16 KiB keeps a bulk transfer moving at loopback speed.
constexpr size_t kBufferBytes = 16 << 10;
constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;
// Epoll tags of connections: (id << 1) | side, ids from 1, so never 0 or 1.
constexpr int kClient = 0;
constexpr int kServer = 1;

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// A non-blocking connection to the abstract unix socket `name`; -1 when it cannot be made now.
int ConnectBackend(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(addr.sun_path) - 1);
  std::memcpy(addr.sun_path + 1, name.data(), n);  // sun_path[0] = 0: abstract
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

// One relayed connection: the client's socket and the server's, and per direction the bytes
// read from one side and not yet written to the other.
struct ConnectionGate::Pipe {
  std::array<int, 2> fd{-1, -1};
  std::array<std::unique_ptr<char[]>, 2> buf;  // buf[s]: read from fd[s], for fd[1 - s]
  std::array<size_t, 2> begin{0, 0}, end{0, 0};
  std::array<bool, 2> eof{false, false};
  std::array<uint32_t, 2> events{0, 0};  // registered with epoll

  size_t Pending(int s) const { return end[s] - begin[s]; }
  ~Pipe() {
    for (const int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
};

ConnectionGate::ConnectionGate(ConnectionGateOptions options, const common::Clock& clock)
    : options_(std::move(options)),
      clock_(clock),
      table_(options_.limits),
      tokens_(options_.server_connect_burst),
      refilled_(clock.Now()) {}

absl::StatusOr<std::unique_ptr<ConnectionGate>> ConnectionGate::Create(
    ConnectionGateOptions options, const common::Clock& clock) {
  auto address = common::ParseListenAddress(options.listen);
  if (!address.ok()) return address.status();
  std::unique_ptr<ConnectionGate> g(new ConnectionGate(std::move(options), clock));
  auto listener = common::Listen(*address, /*v6_only=*/false);
  if (!listener.ok()) {
    return absl::UnavailableError(
        absl::StrCat("grpc listen ", g->options_.listen, ": ", listener.status().message()));
  }
  g->listen_fd_ = listener->fd;
  g->port_ = listener->port;
  g->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  g->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (g->epoll_fd_ < 0 || g->wake_fd_ < 0) return Errno("grpc gate epoll");
  epoll_event ev{.events = EPOLLIN, .data = {.u64 = kListenTag}};
  ::epoll_ctl(g->epoll_fd_, EPOLL_CTL_ADD, g->listen_fd_, &ev);
  ev.data.u64 = kWakeTag;
  ::epoll_ctl(g->epoll_fd_, EPOLL_CTL_ADD, g->wake_fd_, &ev);
  g->loop_ = std::jthread([self = g.get()](const std::stop_token& stop) { self->Run(stop); });
  return g;
}

ConnectionGate::~ConnectionGate() {
  if (loop_.joinable()) {
    loop_.request_stop();
    const uint64_t one = 1;
    (void)::write(wake_fd_, &one, sizeof(one));
    loop_.join();
  }
  pipes_.clear();
  for (const int fd : {listen_fd_, epoll_fd_, wake_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void ConnectionGate::Run(const std::stop_token& stop) {
  std::array<epoll_event, 64> events;
  while (!stop.stop_requested()) {
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), WaitMs());
    if (n < 0 && errno != EINTR) {
      spdlog::error("grpc gate: epoll_wait: {}", std::strerror(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[static_cast<size_t>(i)].data.u64;
      if (tag == kListenTag) {
        Accept();
      } else if (tag != kWakeTag) {
        Relay(tag >> 1, static_cast<int>(tag & 1));
      }
    }
    ServeWaiting();
  }
}

int ConnectionGate::WaitMs() const {
  if (waiting_.empty() || tokens_ >= 1) return waiting_.empty() ? -1 : 0;
  const double secs = (1 - tokens_) / options_.server_connects_per_second;
  return std::max(1, static_cast<int>(secs * 1000) + 1);
}

void ConnectionGate::ServeWaiting() {
  const auto now = clock_.Now();
  tokens_ = std::min(options_.server_connect_burst,
                     tokens_ + std::chrono::duration<double>(now - refilled_).count() *
                                   options_.server_connects_per_second);
  refilled_ = now;
  while (tokens_ >= 1 && !waiting_.empty()) {
    const uint64_t id = waiting_.back();
    waiting_.pop_back();
    const auto it = pipes_.find(id);
    if (it == pipes_.end()) continue;  // displaced or closed while it waited
    tokens_ -= 1;
    Pipe& p = *it->second;
    p.fd[kServer] = ConnectBackend(options_.backend);
    if (p.fd[kServer] < 0) {
      counters_.refused.fetch_add(1, std::memory_order_relaxed);
      Close(id);
      continue;
    }
    for (int s : {kClient, kServer}) {
      epoll_event ev{.events = EPOLLIN, .data = {.u64 = (id << 1) | static_cast<uint64_t>(s)}};
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, p.fd[s], &ev);
      p.events[s] = EPOLLIN;
    }
  }
  // Ids of clients displaced while they waited are dropped here, not searched for on eviction.
  if (waiting_.size() > 4 * options_.limits.total) {
    std::erase_if(waiting_, [this](uint64_t id) { return !pipes_.contains(id); });
  }
}

void ConnectionGate::Accept() {
  while (true) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // EAGAIN: none left. EMFILE/ENFILE: the connection stays queued until one closes.
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        spdlog::debug("grpc gate: accept: {}", std::strerror(errno));
      }
      return;
    }
    const uint64_t id = next_id_++;
    const auto a =
        table_.Admit(id, common::PeerAddress(reinterpret_cast<sockaddr*>(&peer)), clock_.Now());
    if (a.evicted) {
      pipes_.erase(*a.evicted);
      counters_.evicted.fetch_add(1, std::memory_order_relaxed);
    }
    // Every connection is waiting (never busy) in the gate's table, so one is always admitted.
    auto p = std::make_unique<Pipe>();
    p->fd = {fd, -1};
    epoll_event ev{.events = EPOLLIN, .data = {.u64 = id << 1}};
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    p->events[kClient] = EPOLLIN;
    pipes_[id] = std::move(p);
    counters_.accepted.fetch_add(1, std::memory_order_relaxed);
    open_.store(pipes_.size(), std::memory_order_relaxed);
  }
}

void ConnectionGate::Relay(uint64_t id, int side) {
  const auto it = pipes_.find(id);
  if (it == pipes_.end()) return;  // closed earlier in this batch of events
  Pipe& p = *it->second;
  table_.Waiting(id, clock_.Now());  // traffic: idle no longer
  if (p.fd[kServer] < 0) {
    // The server is reached once the client speaks (a connection that only waits costs gRPC
    // nothing), and at the rate ServeWaiting allows: until then the client is not watched (its
    // bytes wait in the socket).
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, p.fd[kClient], nullptr);
    p.events[kClient] = 0;
    waiting_.push_back(id);
    return;
  }
  // Read what this side sent, then write whatever is pending either way.
  if (!p.eof[side] && p.Pending(side) == 0) {
    if (!p.buf[side]) p.buf[side] = std::make_unique<char[]>(kBufferBytes);
    const ssize_t n = ::read(p.fd[side], p.buf[side].get(), kBufferBytes);
    if (n > 0) {
      p.begin[side] = 0;
      p.end[side] = static_cast<size_t>(n);
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      p.eof[side] = true;
    }
  }
  for (int s : {kClient, kServer}) {
    while (p.Pending(s) > 0) {
      const ssize_t n =
          ::send(p.fd[1 - s], p.buf[s].get() + p.begin[s], p.Pending(s), MSG_NOSIGNAL);
      if (n > 0) {
        p.begin[s] += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      p.eof[1 - s] = true;  // the other side is gone
      p.begin[s] = p.end[s];
    }
    if (p.Pending(s) == 0) p.buf[s].reset();  // an idle connection holds no buffer
  }
  // HTTP/2 never half-closes: once either side ends and what it sent is delivered, both go.
  if ((p.eof[kClient] && p.Pending(kClient) == 0) || (p.eof[kServer] && p.Pending(kServer) == 0)) {
    Close(id);
    return;
  }
  Watch(id, p);
}

void ConnectionGate::Watch(uint64_t id, Pipe& p) {
  // Read a side only when what it sent before is delivered (the buffer bounds memory); watch
  // for room to write where bytes wait.
  for (int s : {kClient, kServer}) {
    uint32_t want = 0;
    if (!p.eof[s] && p.Pending(s) == 0) want |= EPOLLIN;
    if (p.Pending(1 - s) > 0) want |= EPOLLOUT;
    if (want == p.events[s]) continue;
    epoll_event ev{.events = want, .data = {.u64 = (id << 1) | static_cast<uint64_t>(s)}};
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, p.fd[s], &ev);
    p.events[s] = want;
  }
}

void ConnectionGate::Close(uint64_t id) {
  table_.Closed(id);
  pipes_.erase(id);  // closing a descriptor also removes it from the epoll set
  open_.store(pipes_.size(), std::memory_order_relaxed);
}

}  // namespace efawatch::rpc
