// SPDX-License-Identifier: Apache-2.0
// HttpServer over plain HTTP (PlainHttpTransport), on real sockets on 127.0.0.1: what each kind of
// request gets, keep-alive and pipelining, bodies and their bounds, and clients that stop reading.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "daemon/export/http_server.h"

namespace efawatch::exporter {
namespace {

using namespace std::chrono_literals;

// One client connection with a receive timeout on every read.
class Client {
 public:
  // rcvbuf: a small receive buffer, set before connecting (so the window scale matches it).
  explicit Client(int port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  void Send(const std::string& s) const {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
  void ShutdownWrite() const { ::shutdown(fd_, SHUT_WR); }
  // Reads until `stop` returns true on what was read, the end of stream, or `limit` passes.
  template <typename Stop>
  std::string ReadUntil(Stop stop, std::chrono::milliseconds limit = 5000ms) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!stop(buf_) && !eof_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left <= 0ms) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char b[65536];
      const ssize_t n = ::recv(fd_, b, sizeof(b), 0);
      if (n <= 0) {
        eof_ = true;
      } else {
        buf_.append(b, static_cast<size_t>(n));
      }
    }
    return buf_;
  }
  // The next whole answer (head and Content-Length body), consumed from what was read.
  std::string NextAnswer(bool head_only = false) {
    std::string answer;
    ReadUntil([&](const std::string& b) {
      const size_t end = b.find("\r\n\r\n");
      if (end == std::string::npos) return false;
      size_t length = 0;
      if (const size_t at = b.find("Content-Length: "); at != std::string::npos && at < end) {
        length = std::stoul(b.substr(at + 16));
      }
      if (head_only || b.starts_with("HTTP/1.1 100")) length = 0;
      if (b.size() < end + 4 + length) return false;
      answer = b.substr(0, end + 4 + length);
      return true;
    });
    buf_.erase(0, answer.size());
    return answer;
  }
  // Whether the server ended the stream within `wait` (what it sent before is read and kept).
  bool ClosedByServer(std::chrono::milliseconds wait = 3000ms) {
    ReadUntil([](const std::string&) { return false; }, wait);
    return eof_;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string buf_;
};

int StatusOf(const std::string& answer) {
  return answer.size() >= 12 ? std::stoi(answer.substr(9, 3)) : 0;
}

// On a new connection: the status of the answer to `request`, and whether the server then ended
// the connection.
std::pair<int, bool> AnswerAndClose(int port, const std::string& request) {
  Client c(port);
  c.Send(request);
  const int status = StatusOf(c.NextAnswer());
  return {status, c.ClosedByServer()};
}

std::string BodyOf(const std::string& answer) {
  const size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? "" : answer.substr(end + 4);
}

class PlainHttpTest : public ::testing::Test {
 protected:
  void Serve(HttpServerOptions o = {}) {
    o.listen = "127.0.0.1:0";
    o.post_paths = {"/review"};
    if (o.max_body_bytes == 64 * 1024) o.max_body_bytes = 1000;
    auto s = HttpServer::Create(
        std::move(o),
        {{"/metrics",
          [](const HttpRequest& r) {
            return HttpResponse::Text(200, "up 1 " + r.method + " " + r.authorization + "\n");
          }},
         {"/big",
          [](const HttpRequest&) { return HttpResponse::Text(200, std::string(8 << 20, 'x')); }},
         {"/throws", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("boom"); }},
         {"/review", [this](const HttpRequest& r) {
            ++reviews_;
            return HttpResponse::Text(
                200, "got " + std::to_string(r.body.size()) + ": " + r.body.substr(0, 16));
          }}});
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    ASSERT_FALSE(server_->tls());
  }
  int port() const { return server_->port(); }

  std::atomic<int> reviews_{0};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(PlainHttpTest, AnswersGetHeadAndRefusesOtherPathsAndMethods) {
  Serve();
  Client c(port());
  ASSERT_TRUE(c.connected());
  c.Send("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n");
  std::string a = c.NextAnswer();
  EXPECT_EQ(StatusOf(a), 200) << a;
  EXPECT_EQ(BodyOf(a), "up 1 GET Bearer t\n");
  c.Send("HEAD /metrics HTTP/1.1\r\n\r\n");
  a = c.NextAnswer(/*head_only=*/true);
  EXPECT_EQ(StatusOf(a), 200) << a;
  EXPECT_NE(a.find("Content-Length: 11\r\n"), std::string::npos) << "the body's length: " << a;
  EXPECT_EQ(BodyOf(a), "");
  c.Send("GET /nothing HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(c.NextAnswer()), 404);
  c.Send("DELETE /metrics HTTP/1.1\r\n\r\n");
  a = c.NextAnswer();
  EXPECT_EQ(StatusOf(a), 405);
  EXPECT_NE(a.find("Allow: GET, HEAD\r\n"), std::string::npos) << a;
  c.Send("GET /review HTTP/1.1\r\n\r\n");
  a = c.NextAnswer();
  EXPECT_EQ(StatusOf(a), 405);
  EXPECT_NE(a.find("Allow: POST\r\n"), std::string::npos) << a;
  c.Send("GET /throws HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(c.NextAnswer()), 500);
  c.Send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(c.NextAnswer()), 200) << "all of it on one kept-alive connection";
}

TEST_F(PlainHttpTest, AnswersPipelinedRequestsInOrderWithoutNesting) {
  Serve();
  Client c(port());
  ASSERT_TRUE(c.connected());
  // Thousands of requests answered at once (405 needs no handler thread) in one stream: more
  // than the transport reads ahead, so reading resumes after answers, turn by turn.
  constexpr int kRequests = 4000;
  std::string many;
  for (int i = 0; i < kRequests; ++i) many += "PUT /metrics HTTP/1.1\r\n\r\n";
  many += "GET /metrics HTTP/1.1\r\n\r\n";
  std::thread sender([&] { c.Send(many); });
  int refused = 0;
  for (int i = 0; i < kRequests; ++i) {
    if (StatusOf(c.NextAnswer()) != 405) break;
    ++refused;
  }
  sender.join();
  EXPECT_EQ(refused, kRequests);
  const std::string last = c.NextAnswer();
  EXPECT_EQ(StatusOf(last), 200);
  EXPECT_EQ(BodyOf(last), "up 1 GET \n");
}

TEST_F(PlainHttpTest, HttpOneZeroClosesAfterItsAnswerAndAHalfCloseStillGetsIt) {
  Serve();
  Client old(port());
  old.Send("GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(StatusOf(old.NextAnswer()), 200);
  EXPECT_TRUE(old.ClosedByServer());
  Client half(port());
  half.Send("GET /metrics HTTP/1.1\r\n\r\n");
  half.ShutdownWrite();
  EXPECT_EQ(StatusOf(half.NextAnswer()), 200);
  EXPECT_TRUE(half.ClosedByServer());
}

TEST_F(PlainHttpTest, PostBodiesReachTheHandlerWithinTheBound) {
  Serve();
  Client c(port());
  const std::string body(1000, 'b');
  c.Send("POST /review HTTP/1.1\r\nContent-Length: 1000\r\n\r\n" + body.substr(0, 400));
  std::this_thread::sleep_for(50ms);  // the body in two pieces
  c.Send(body.substr(400));
  std::string a = c.NextAnswer();
  EXPECT_EQ(StatusOf(a), 200) << a;
  EXPECT_EQ(BodyOf(a), "got 1000: bbbbbbbbbbbbbbbb");
  // Expect: 100-continue gets its interim answer before the body is sent.
  c.Send("POST /review HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(StatusOf(c.NextAnswer()), 100);
  c.Send("abc");
  a = c.NextAnswer();
  EXPECT_EQ(BodyOf(a), "got 3: abc");
  EXPECT_EQ(reviews_.load(), 2);
}

TEST_F(PlainHttpTest, BodiesOverTheBoundGet413AndTheHandlerNeverSeesThem) {
  Serve();
  Client c(port());
  // Over the bound: read and dropped, then 413, and the connection serves on.
  c.Send("POST /review HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'z'));
  EXPECT_EQ(StatusOf(c.NextAnswer()), 413);
  c.Send("POST /review HTTP/1.1\r\nContent-Length: 2\r\n\r\nok");
  EXPECT_EQ(BodyOf(c.NextAnswer()), "got 2: ok");
  // Over 16 times the bound: refused at once, and closed.
  EXPECT_EQ(AnswerAndClose(port(), "POST /review HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"),
            std::pair(413, true));
  // Without a length, or chunked: 411, closed.
  EXPECT_EQ(AnswerAndClose(port(), "POST /review HTTP/1.1\r\n\r\n"), std::pair(411, true));
  EXPECT_EQ(
      AnswerAndClose(port(),
                     "POST /review HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0"
                     "\r\n\r\n"),
      std::pair(411, true));
  EXPECT_EQ(server_->counters().too_large.load(), 2u);
  EXPECT_EQ(reviews_.load(), 1);
}

TEST_F(PlainHttpTest, ARefusedRequestWithABodyClosesAndABadHeadGets400) {
  Serve();
  // The body would otherwise be read as the next request.
  EXPECT_EQ(AnswerAndClose(port(),
                           "PUT /metrics HTTP/1.1\r\nContent-Length: 26\r\n\r\nGET /metrics "
                           "HTTP/1.1\r\n\r\n"),
            std::pair(405, true));
  EXPECT_EQ(AnswerAndClose(port(), "GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n"),
            std::pair(400, true));
  EXPECT_EQ(AnswerAndClose(port(), "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(20000, 'a')),
            std::pair(431, true));
  EXPECT_EQ(AnswerAndClose(port(), "GET /metrics HTTP/2.0\r\n\r\n"), std::pair(505, true));
}

TEST_F(PlainHttpTest, AClientThatReadsNothingOfItsAnswerIsCutAndOthersAreServed) {
  HttpServerOptions o;
  o.limits.request_deadline = 1000ms;
  Serve(o);
  Client stuck(port(), /*rcvbuf=*/4096);
  stuck.Send("GET /big HTTP/1.1\r\n\r\n");  // 8 MiB it never reads (until the end)
  std::this_thread::sleep_for(300ms);
  Client other(port());
  other.Send("GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(other.NextAnswer()), 200) << "served while the stuck answer waits";
  std::this_thread::sleep_for(2500ms);
  // Cut: what it reads now ends well short of the 8 MiB answer.
  const std::string got = stuck.ReadUntil([](const std::string&) { return false; }, 10000ms);
  EXPECT_TRUE(stuck.ClosedByServer(0ms)) << got.size() << " bytes read, and no end";
  EXPECT_LT(got.size(), size_t{8} << 20);
}

TEST_F(PlainHttpTest, ABodyTrickledForeverIsCutAtTheRequestDeadline) {
  HttpServerOptions o;
  o.limits.request_deadline = 1000ms;
  Serve(o);
  Client c(port());
  c.Send("POST /review HTTP/1.1\r\nContent-Length: 900\r\n\r\n");
  const auto start = std::chrono::steady_clock::now();
  bool closed = false;
  while (!closed && std::chrono::steady_clock::now() - start < 6s) {
    c.Send("x");
    closed = c.ClosedByServer(300ms);
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_GE(server_->counters().timed_out.load(), 1u);
  EXPECT_EQ(reviews_.load(), 0);
}

TEST(PlainHttpServerTest, AnAddressInUseIsUnavailableNamingIt) {
  HttpServerOptions o;
  o.listen = "127.0.0.1:0";
  auto first = HttpServer::Create(o, {});
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string listen = "127.0.0.1:" + std::to_string((*first)->port());
  o.listen = listen;
  auto second = HttpServer::Create(o, {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(listen), std::string::npos) << second.status();
}

}  // namespace
}  // namespace efawatch::exporter
