// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/plain_http_transport.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "daemon/export/request_head.h"
#include "spdlog/spdlog.h"

namespace efawatch::exporter {
namespace {

// The epoll data of the listening socket and of the wake-up eventfd; connections use their ids,
// which start at 1 and never reach these.
constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = ~uint64_t{0};

// Connections accepted per turn of the loop (Accept says why).
constexpr int kAcceptBatch = 16;

// What one connection may have read ahead of the request being answered: a client pipelining
// more than this waits until the answer is sent (TCP's window holds the rest).
constexpr size_t kMaxBuffered = 64 * 1024;

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Status";
  }
}

// The bytes of an answer: status line, fields, and the body unless the request was HEAD (whose
// Content-Length still says what a GET would get, RFC 9110 9.3.2).
std::string Serialize(const HttpResponse& r, bool head_only, bool close_after, int minor) {
  std::string out = absl::StrCat("HTTP/1.1 ", r.status, " ", Reason(r.status),
                                 "\r\nContent-Type: ", r.content_type,
                                 "\r\nContent-Length: ", r.body.size(), "\r\n");
  for (const auto& [name, value] : r.headers) absl::StrAppend(&out, name, ": ", value, "\r\n");
  if (close_after) {
    out += "Connection: close\r\n";
  } else if (minor == 0) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
  if (!head_only) out += r.body;
  return out;
}

}  // namespace

struct PlainHttpTransport::Conn {
  enum class Phase { kHead, kBody, kHandling, kWriting };
  int fd = -1;
  uint64_t id = 0;
  Phase phase = Phase::kHead;
  std::string in;          // read, not yet consumed
  std::string out;         // to send
  size_t sent = 0;         // of out
  bool peer_done = false;  // the client sent its last byte (end of stream)
  RequestHead head;
  uint64_t body_left = 0;
  bool drop_body = false;    // read the body and forget it
  bool refuse_body = false;  // the body is over the bound: 413 once it is read
  std::string body;
  bool close_after = false;
  std::chrono::steady_clock::time_point stalled_since{};  // out waits on the client
};

PlainHttpTransport::PlainHttpTransport(Options options, Hooks hooks, const common::Clock& clock)
    : options_(std::move(options)), hooks_(std::move(hooks)), clock_(clock) {}

absl::StatusOr<std::unique_ptr<PlainHttpTransport>> PlainHttpTransport::Start(
    Options options, Hooks hooks, const common::Clock& clock) {
  std::unique_ptr<PlainHttpTransport> t(
      new PlainHttpTransport(std::move(options), std::move(hooks), clock));
  // An IPv6 address serves IPv6 only, as libmicrohttpd's HTTPS listener does.
  auto listener = common::Listen(t->options_.address, /*v6_only=*/true);
  if (!listener.ok()) return listener.status();
  t->listen_fd_ = listener->fd;
  t->port_ = listener->port;
  const auto fail = [&](const char* what) {
    return absl::UnavailableError(absl::StrCat("cannot ", what, " (", std::strerror(errno), ")"));
  };
  t->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  t->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (t->epoll_fd_ < 0 || t->wake_fd_ < 0) return fail("create an epoll set");
  // Edge-triggered: the loop accepts and reads until EAGAIN, and reads again itself when it
  // resumes a connection it had stopped reading.
  epoll_event ev{.events = EPOLLIN | EPOLLET, .data = {.u64 = kListenId}};
  epoll_event wake{.events = EPOLLIN, .data = {.u64 = kWakeId}};
  if (::epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->listen_fd_, &ev) != 0 ||
      ::epoll_ctl(t->epoll_fd_, EPOLL_CTL_ADD, t->wake_fd_, &wake) != 0) {
    return fail("watch the socket");
  }
  for (unsigned i = 0; i < std::max(1u, t->options_.threads); ++i) {
    t->workers_.emplace_back([self = t.get()](const std::stop_token& stop) { self->Work(stop); });
  }
  t->loop_ = std::jthread([self = t.get()](const std::stop_token& stop) { self->Loop(stop); });
  return t;
}

PlainHttpTransport::~PlainHttpTransport() {
  if (loop_.joinable()) {
    loop_.request_stop();
    Wake();
    loop_.join();
  }
  for (auto& w : workers_) w.request_stop();
  workers_.clear();  // joins: no handler runs past here
  std::vector<uint64_t> ids;
  for (const auto& [id, c] : conns_) ids.push_back(id);
  for (const uint64_t id : ids) Close(id);
  for (const int fd : {listen_fd_, epoll_fd_, wake_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void PlainHttpTransport::Wake() const {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

int PlainHttpTransport::NextTimeoutMs() const {
  if (!resume_.empty() || accept_pending_) return 0;
  // No timer while every answer is sent: an idle server sleeps until a socket wakes it.
  if (writers_.empty()) return -1;
  auto first = std::chrono::steady_clock::time_point::max();
  for (const uint64_t id : writers_) {
    const auto it = conns_.find(id);
    if (it != conns_.end()) first = std::min(first, it->second->stalled_since);
  }
  if (first == std::chrono::steady_clock::time_point::max()) return -1;
  const auto left = first + options_.write_deadline - clock_.Now();
  return static_cast<int>(
      std::clamp<int64_t>(std::chrono::ceil<std::chrono::milliseconds>(left).count(), 0,
                          options_.write_deadline.count()));
}

void PlainHttpTransport::Loop(const std::stop_token& stop) {
  std::array<epoll_event, 64> events{};
  while (!stop.stop_requested()) {
    const int n =
        ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), NextTimeoutMs());
    if (n < 0 && errno != EINTR) {
      spdlog::error("metrics http: epoll_wait: {}", std::strerror(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kListenId) {
        Accept();
      } else if (id == kWakeId) {
        uint64_t count = 0;
        (void)!::read(wake_fd_, &count, sizeof(count));
        TakeDone();
      } else {
        OnEvent(id, events[i].events);
      }
    }
    CutStalledWriters();
    if (accept_pending_) Accept();
    // Connections whose answer went out: their next request, each once per turn so that one
    // pipelining client cannot hold the loop.
    std::vector<uint64_t> resume;
    resume.swap(resume_);
    for (const uint64_t id : resume) {
      if (auto it = conns_.find(id); it != conns_.end()) Read(*it->second);
    }
  }
}

void PlainHttpTransport::Accept() {
  // A few at a time: the connections the table cuts to admit these close on the loop's next
  // turn, and only then does the backstop below see room (taking a burst of 500 at once would
  // close the last ones at the backstop instead of letting them take an idle one's place).
  accept_pending_ = false;
  for (int taken = 0;; ++taken) {
    if (taken == kAcceptBatch) {
      accept_pending_ = true;
      return;
    }
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // EAGAIN: all taken. EMFILE and the like: the rest wait in the backlog for the next
      // connection's wake-up, when descriptors may have been freed.
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        spdlog::warn("metrics http: accept: {}", std::strerror(errno));
      }
      return;
    }
    if (conns_.size() >= options_.max_connections) {
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->id = next_id_++;
    epoll_event ev{.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data = {.u64 = c->id}};
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      continue;
    }
    const uint64_t id = c->id;
    conns_.emplace(id, std::move(c));
    hooks_.started(id, fd, common::PeerAddress(reinterpret_cast<sockaddr*>(&peer)));
    // Bytes may have come with the connection; edge-triggered epoll reports only later ones.
    if (auto it = conns_.find(id); it != conns_.end()) Read(*it->second);
  }
}

void PlainHttpTransport::OnEvent(uint64_t id, uint32_t events) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if ((events & EPOLLOUT) != 0 && !c.out.empty()) {
    Write(c);
    if (!conns_.contains(id)) return;
  }
  if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) Read(c);
}

void PlainHttpTransport::Read(Conn& c) {
  const uint64_t id = c.id;
  char buf[16 * 1024];
  while (true) {
    bool drained = false;  // the socket has nothing more for now
    while (!c.peer_done) {
      // A head is read to one byte past its bound (then 431), so a waiting connection holds at
      // most that; a body being read, or requests read ahead, up to kMaxBuffered.
      const size_t limit =
          c.phase == Conn::Phase::kHead ? options_.max_head_bytes + 1 : kMaxBuffered;
      if (c.in.size() >= limit) break;
      const ssize_t n = ::recv(c.fd, buf, std::min(sizeof(buf), limit - c.in.size()), 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        drained = true;
        break;
      }
      if (n < 0) {  // a reset, or the guard's shutdown
        Close(id);
        return;
      }
      // End of stream. A client that half-closes after its request still gets the answer.
      c.peer_done = true;
    }
    Process(c);
    if (!conns_.contains(id)) return;
    if (c.peer_done) {
      if (c.phase == Conn::Phase::kHead && c.out.empty()) Close(id);  // nothing in progress
      return;
    }
    // Stop when the socket is drained, or while an answer is being made or sent: reading
    // resumes once it is sent (Write). A body being read and dropped goes on.
    if (drained || c.phase != Conn::Phase::kBody) return;
  }
}

void PlainHttpTransport::Process(Conn& c) {
  const uint64_t id = c.id;
  while (conns_.contains(id)) {
    if (c.phase == Conn::Phase::kHead) {
      if (c.in.empty()) return;
      HeadParse p = ParseRequestHead(c.in, options_.max_head_bytes);
      if (p.outcome == HeadParse::Outcome::kIncomplete) return;
      if (p.outcome == HeadParse::Outcome::kBad) {
        c.in.clear();
        Respond(c, HttpResponse::Text(p.status, p.why + "\n"), false, true);
        return;
      }
      c.head = std::move(p.head);
      c.in.erase(0, c.head.size);
      c.close_after = !c.head.keep_alive || c.peer_done;
      const bool has_body = c.head.transfer_encoding || c.head.content_length.value_or(0) > 0;
      if (auto early = hooks_.precheck(c.head.method, c.head.path)) {
        // Refused before its body is read: the connection cannot be reused (the body would be
        // read as the next request), so it closes after the answer.
        Respond(c, *early, c.head.method == "HEAD", c.close_after || has_body);
        return;
      }
      const bool post = options_.post_paths.contains(c.head.path);
      if (c.head.transfer_encoding) {
        Respond(c, HttpResponse::Text(post ? 411 : 400, "a body needs a Content-Length\n"), false,
                true);
        return;
      }
      if (post && !c.head.content_length) {
        Respond(c, HttpResponse::Text(411, "a body needs a Content-Length\n"), false, true);
        return;
      }
      const uint64_t length = c.head.content_length.value_or(0);
      const uint64_t bound = options_.max_body_bytes;
      if (post && length > 16 * bound) {
        // Not worth reading to drop: answered at once, and the connection closes.
        hooks_.too_large();
        Respond(c, HttpResponse::Text(413, "request body too large\n"), false, true);
        return;
      }
      c.body_left = length;
      c.drop_body = !post || length > bound;
      c.refuse_body = post && length > bound;
      c.body.clear();
      if (c.head.expect_continue && length > 0) {
        c.out += "HTTP/1.1 100 Continue\r\n\r\n";
        Write(c);
        if (!conns_.contains(id)) return;
      }
      c.phase = Conn::Phase::kBody;
    }
    if (c.phase == Conn::Phase::kBody) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(c.body_left, c.in.size()));
      if (!c.drop_body) c.body.append(c.in, 0, take);
      c.in.erase(0, take);
      c.body_left -= take;
      if (c.body_left > 0) {
        if (c.peer_done) Close(id);  // the body will never be whole
        return;
      }
      if (c.refuse_body) {
        hooks_.too_large();
        Respond(c, HttpResponse::Text(413, "request body too large\n"), false, c.close_after);
        return;
      }
      // Busy only once the body is in: a client trickling a body stays a waiting one, which
      // the request deadline cuts.
      hooks_.busy(id);
      c.phase = Conn::Phase::kHandling;
      HttpRequest req;
      req.method = c.head.method;
      req.path = c.head.path;
      req.body = std::move(c.body);
      req.authorization = c.head.authorization;
      {
        std::lock_guard lock(mu_);
        jobs_.push_back(
            {id, std::move(req), c.head.method == "HEAD", c.close_after, c.head.minor_version});
      }
      jobs_cv_.notify_one();
      return;
    }
    return;  // handling or writing: the next request waits for this answer
  }
}

void PlainHttpTransport::Work(const std::stop_token& stop) {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mu_);
      if (!jobs_cv_.wait(lock, stop, [&] { return !jobs_.empty(); })) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    const HttpResponse r = hooks_.handle(job.request);
    Done d{job.id, Serialize(r, job.head_only, job.close_after, job.minor_version),
           job.close_after};
    {
      std::lock_guard lock(mu_);
      done_.push_back(std::move(d));
    }
    Wake();
  }
}

void PlainHttpTransport::TakeDone() {
  std::vector<Done> done;
  {
    std::lock_guard lock(mu_);
    done.swap(done_);
  }
  for (Done& d : done) {
    auto it = conns_.find(d.id);
    if (it == conns_.end()) continue;  // the client went while its request was handled
    Conn& c = *it->second;
    c.out += d.bytes;
    c.close_after = d.close_after || c.peer_done;
    c.phase = Conn::Phase::kWriting;
    Write(c);
  }
}

void PlainHttpTransport::Respond(Conn& c, const HttpResponse& r, bool head_only, bool close_after) {
  hooks_.busy(c.id);
  c.close_after = close_after;
  c.out += Serialize(r, head_only, close_after, c.head.minor_version);
  c.phase = Conn::Phase::kWriting;
  Write(c);
}

void PlainHttpTransport::Write(Conn& c) {
  const uint64_t id = c.id;
  while (c.sent < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      c.stalled_since = clock_.Now();  // progress: the deadline counts from here
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!writers_.contains(id)) c.stalled_since = clock_.Now();
      writers_.insert(id);
      return;
    }
    Close(id);
    return;
  }
  writers_.erase(id);
  c.out.clear();
  c.sent = 0;
  if (c.phase != Conn::Phase::kWriting) return;  // a 100 Continue: the body comes next
  if (c.close_after || c.peer_done) {
    Close(id);
    return;
  }
  c.phase = Conn::Phase::kHead;
  hooks_.answered(id);
  // A request read ahead (pipelined), or bytes left unread while this one was answered: read on
  // the loop's next turn, not from here (a client pipelining thousands of requests answered at
  // once would otherwise nest a call per request).
  resume_.push_back(id);
}

void PlainHttpTransport::CutStalledWriters() {
  if (writers_.empty()) return;
  const auto now = clock_.Now();
  std::vector<uint64_t> cut;
  for (const uint64_t id : writers_) {
    const auto it = conns_.find(id);
    if (it != conns_.end() && now - it->second->stalled_since >= options_.write_deadline) {
      cut.push_back(id);
    }
  }
  for (const uint64_t id : cut) Close(id);
}

void PlainHttpTransport::Close(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->fd, nullptr);
  ::close(it->second->fd);
  conns_.erase(it);
  writers_.erase(id);
  hooks_.closed(id);
}

}  // namespace efawatch::exporter
