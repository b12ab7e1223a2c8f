// The libcurl sender against a loopback HTTP server in the test: delivered, retryable and
// permanent answers, WeCom's errcodes, a timeout, a dropped connection, malformed requests.
#include "alert/notify/http_sender.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tailguard::notify {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// What the server received.
struct Received {
  std::string method;
  std::string target;   // path and query
  std::string headers;  // the header lines as sent, lower-cased
  std::string body;
};

// A one-connection-at-a-time HTTP/1.1 server on 127.0.0.1 with canned answers chosen by path:
//   /ok                      200 "ok"
//   /status/N                status N (a 301 carries a Location back to /ok)
//   /unavailable             503 with Retry-After: 7
//   /bad                     400 with a long body
//   /wecom/0, /wecom/45009, /wecom/93000    200 with that WeCom errcode
//   /wecom/html              200 with an HTML page
//   /slow                    no answer until the client hangs up
//   /close                   hangs up without an answer
// Every answer closes the connection. Not thread-safe except requests().
class LoopbackServer {
 public:
  LoopbackServer() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listen_fd_, 16) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        pipe2(wake_, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }

  ~LoopbackServer() {
    if (thread_.joinable()) {
      const char stop = 's';
      EXPECT_EQ(write(wake_[1], &stop, 1), 1);
      thread_.join();
    }
    for (int fd : {listen_fd_, wake_[0], wake_[1]}) {
      if (fd >= 0) close(fd);
    }
  }

  std::string Url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }

  std::vector<Received> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  // Waits until `fd` is readable (true) or the server stops (false).
  bool WaitReadable(int fd) const {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    while (true) {
      if (poll(fds, 2, -1) < 0) return false;
      if (fds[1].revents != 0) return false;
      if (fds[0].revents != 0) return true;
    }
  }

  void Run() {
    while (WaitReadable(listen_fd_)) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Serve(fd);
      close(fd);
    }
  }

  // Reads one request; false when the client hung up first.
  bool Read(int fd, Received& r) {
    std::string data;
    size_t header_end = std::string::npos;
    size_t content_length = 0;
    char buf[4096];
    while (header_end == std::string::npos || data.size() < header_end + 4 + content_length) {
      if (!WaitReadable(fd)) return false;
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      data.append(buf, static_cast<size_t>(n));
      if (header_end == std::string::npos) {
        header_end = data.find("\r\n\r\n");
        if (header_end == std::string::npos) continue;
        const size_t line_end = data.find("\r\n");
        const std::string line = data.substr(0, line_end);
        const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
        r.method = line.substr(0, sp1);
        r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
        r.headers = data.substr(line_end + 2, header_end - line_end - 2);
        for (char& c : r.headers)
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (const size_t cl = r.headers.find("content-length: "); cl != std::string::npos) {
          content_length = std::strtoul(r.headers.c_str() + cl + 16, nullptr, 10);
        }
      }
    }
    r.body = data.substr(header_end + 4, content_length);
    return true;
  }

  void Answer(int fd, int status, std::string_view body, std::string_view extra = "") {
    const std::string response =
        "HTTP/1.1 " + std::to_string(status) +
        " Canned\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
        std::string(extra) + "\r\n" + std::string(body);
    size_t sent = 0;
    while (sent < response.size()) {
      const ssize_t n = send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  void Serve(int fd) {
    Received r;
    if (!Read(fd, r)) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(r);
    }
    const std::string path = r.target.substr(0, r.target.find('?'));
    if (path == "/ok") {
      Answer(fd, 200, "ok");
    } else if (path.starts_with("/status/")) {
      const int status = std::atoi(path.c_str() + 8);
      Answer(fd, status, "status " + std::to_string(status),
             status == 301 ? "Location: " + Url("/ok") + "\r\n" : "");
    } else if (path == "/unavailable") {
      Answer(fd, 503, "upstream down", "Retry-After: 7\r\n");
    } else if (path == "/bad") {
      Answer(fd, 400, "invalid payload: " + std::string(1000, 'y'));
    } else if (path == "/wecom/0") {
      Answer(fd, 200, R"({"errcode":0,"errmsg":"ok"})");
    } else if (path == "/wecom/45009") {
      Answer(fd, 200, R"({"errcode":45009,"errmsg":"api freq out of limit"})");
    } else if (path == "/wecom/93000") {
      Answer(fd, 200, R"({"errcode":93000,"errmsg":"invalid webhook url"})");
    } else if (path == "/wecom/html") {
      Answer(fd, 200, "<html>captive portal</html>");
    } else if (path == "/slow") {
      char buf[256];
      while (WaitReadable(fd) && recv(fd, buf, sizeof(buf), 0) > 0) {
      }
    } else if (path == "/close") {
      // Hang up without a word.
    } else {
      Answer(fd, 404, "no such path");
    }
  }

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<Received> requests_;  // guarded by mu_
};

constexpr Duration kTimeout = std::chrono::seconds(10);

class HttpSenderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Loopback requests must not go through a proxy from the environment.
    setenv("no_proxy", "*", 1);
  }

  HttpRequest Post(std::string_view path, std::string body = R"({"a":1})") {
    HttpRequest r;
    r.url = server_.Url(path);
    r.headers = {{"Content-Type", "application/json"},
                 {"Authorization", "Bearer s3cret"},
                 {"Idempotency-Key", "wecom|{alertname=\"x\"}|1|1"}};
    r.body = std::move(body);
    return r;
  }

  LoopbackServer server_;
  std::unique_ptr<HttpSender> sender_ = NewCurlSender();
};

TEST_F(HttpSenderTest, DeliversAPostWithItsHeaders) {
  const SendResult r = sender_->Send(Post("/ok"), kTimeout);
  EXPECT_TRUE(r.delivered);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.error, "");
  EXPECT_FALSE(r.retryable);
  EXPECT_GT(r.elapsed, Duration::zero());
  EXPECT_FALSE(r.retry_after.has_value());

  const std::vector<Received> got = server_.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].method, "POST");
  EXPECT_EQ(got[0].target, "/ok");
  EXPECT_EQ(got[0].body, R"({"a":1})");
  EXPECT_THAT(got[0].headers, HasSubstr("content-type: application/json\r\n"));
  EXPECT_THAT(got[0].headers, HasSubstr("authorization: bearer s3cret\r\n"));
  EXPECT_THAT(got[0].headers, HasSubstr("idempotency-key: wecom|{alertname=\"x\"}|1|1\r\n"));
  EXPECT_THAT(got[0].headers, HasSubstr("user-agent: tailguard/"));
  EXPECT_THAT(got[0].headers, Not(HasSubstr("expect:")));
}

TEST_F(HttpSenderTest, PutAndGet) {
  HttpRequest put = Post("/ok", "text body");
  put.method = "PUT";
  EXPECT_TRUE(sender_->Send(put, kTimeout).delivered);
  HttpRequest get = Post("/ok?to=138&text=a%20b", "");
  get.method = "GET";
  get.headers = {{"X-Empty", ""}};
  EXPECT_TRUE(sender_->Send(get, kTimeout).delivered);

  const std::vector<Received> got = server_.requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].method, "PUT");
  EXPECT_EQ(got[0].body, "text body");
  EXPECT_EQ(got[1].method, "GET");
  EXPECT_EQ(got[1].target, "/ok?to=138&text=a%20b");
  EXPECT_EQ(got[1].body, "");
  EXPECT_THAT(got[1].headers, HasSubstr("x-empty:"));
  EXPECT_THAT(got[1].headers, Not(HasSubstr("content-length")));
}

TEST_F(HttpSenderTest, ServiceUnavailableIsRetryableWithRetryAfter) {
  const SendResult r = sender_->Send(Post("/unavailable"), kTimeout);
  EXPECT_FALSE(r.delivered);
  EXPECT_TRUE(r.retryable);
  EXPECT_EQ(r.http_status, 503);
  EXPECT_EQ(r.error, "HTTP 503: upstream down");
  ASSERT_TRUE(r.retry_after.has_value());
  EXPECT_EQ(*r.retry_after, std::chrono::seconds(7));
}

TEST_F(HttpSenderTest, BadRequestIsPermanentWithAShortExcerpt) {
  const SendResult r = sender_->Send(Post("/bad?key=SECRET"), kTimeout);
  EXPECT_FALSE(r.delivered);
  EXPECT_FALSE(r.retryable);
  EXPECT_EQ(r.http_status, 400);
  EXPECT_THAT(r.error, StartsWith("HTTP 400: invalid payload: yyy"));
  EXPECT_LE(r.error.size(), 200u);
  EXPECT_THAT(r.error, Not(HasSubstr("SECRET")));
}

TEST_F(HttpSenderTest, StatusClassification) {
  for (int status : {408, 425, 429, 500, 502, 504}) {
    const SendResult r = sender_->Send(Post("/status/" + std::to_string(status)), kTimeout);
    EXPECT_FALSE(r.delivered) << status;
    EXPECT_TRUE(r.retryable) << status;
    EXPECT_EQ(r.http_status, status);
    EXPECT_EQ(r.error, "HTTP " + std::to_string(status) + ": status " + std::to_string(status));
  }
  for (int status : {400, 401, 403, 404, 413, 422}) {
    const SendResult r = sender_->Send(Post("/status/" + std::to_string(status)), kTimeout);
    EXPECT_FALSE(r.delivered) << status;
    EXPECT_FALSE(r.retryable) << status;
    EXPECT_EQ(r.http_status, status);
  }
  for (int status : {200, 201, 202, 204}) {
    const SendResult r = sender_->Send(Post("/status/" + std::to_string(status)), kTimeout);
    EXPECT_TRUE(r.delivered) << status;
    EXPECT_EQ(r.error, "");
  }
}

TEST_F(HttpSenderTest, RedirectsAreNotFollowed) {
  const size_t before = server_.requests().size();
  const SendResult r = sender_->Send(Post("/status/301"), kTimeout);
  EXPECT_FALSE(r.delivered);
  EXPECT_FALSE(r.retryable);
  EXPECT_EQ(r.http_status, 301);
  EXPECT_EQ(server_.requests().size(), before + 1);
}

TEST_F(HttpSenderTest, WeComErrcodes) {
  HttpRequest request = Post("/wecom/0");
  request.check = HttpRequest::Check::kWeComErrcode;
  SendResult r = sender_->Send(request, kTimeout);
  EXPECT_TRUE(r.delivered);
  EXPECT_EQ(r.error, "");

  request.url = server_.Url("/wecom/45009");
  r = sender_->Send(request, kTimeout);
  EXPECT_FALSE(r.delivered);
  EXPECT_TRUE(r.retryable);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.error, "wecom errcode 45009: api freq out of limit");

  request.url = server_.Url("/wecom/93000");
  r = sender_->Send(request, kTimeout);
  EXPECT_FALSE(r.delivered);
  EXPECT_FALSE(r.retryable);
  EXPECT_EQ(r.error, "wecom errcode 93000: invalid webhook url");

  request.url = server_.Url("/wecom/html");
  r = sender_->Send(request, kTimeout);
  EXPECT_FALSE(r.delivered);
  EXPECT_FALSE(r.retryable);
  EXPECT_EQ(r.error, "wecom answer without errcode: <html>captive portal</html>");

  // The errcode is only looked at for WeCom requests.
  request.url = server_.Url("/wecom/93000");
  request.check = HttpRequest::Check::kStatus;
  EXPECT_TRUE(sender_->Send(request, kTimeout).delivered);
}

TEST_F(HttpSenderTest, TimeoutIsRetryable) {
  const SendResult r = sender_->Send(Post("/slow?key=SECRET"), milliseconds(200));
  EXPECT_FALSE(r.delivered);
  EXPECT_TRUE(r.retryable);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_THAT(r.error, StartsWith("transport: "));
  EXPECT_THAT(r.error, HasSubstr("timed out"));
  EXPECT_THAT(r.error, Not(HasSubstr("SECRET")));
  EXPECT_GE(r.elapsed, milliseconds(150));
  EXPECT_LT(r.elapsed, std::chrono::seconds(5));
  // The sender is still usable afterwards.
  EXPECT_TRUE(sender_->Send(Post("/ok"), kTimeout).delivered);
}

TEST_F(HttpSenderTest, ClosedConnectionIsRetryable) {
  const SendResult r = sender_->Send(Post("/close?key=SECRET"), kTimeout);
  EXPECT_FALSE(r.delivered);
  EXPECT_TRUE(r.retryable);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_THAT(r.error, StartsWith("transport: "));
  EXPECT_THAT(r.error, Not(HasSubstr("SECRET")));
}

TEST_F(HttpSenderTest, RefusedConnectionIsRetryable) {
  // A port that was free a moment ago: bind, read the port, close.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  HttpRequest request = Post("/ok");
  request.url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/ok";
  const SendResult r = sender_->Send(request, kTimeout);
  EXPECT_FALSE(r.delivered);
  EXPECT_TRUE(r.retryable);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_THAT(r.error, StartsWith("transport: "));
}

TEST_F(HttpSenderTest, MalformedRequestsArePermanentAndNeverSent) {
  HttpRequest crlf = Post("/ok");
  crlf.headers.emplace_back("X-Injected", "a\r\nX-Evil: 1");
  HttpRequest bad_name = Post("/ok");
  bad_name.headers.emplace_back("Bad Name", "v");
  HttpRequest method = Post("/ok");
  method.method = "DELETE";
  HttpRequest space = Post("/ok?text=a b");
  HttpRequest ftp = Post("/ok");
  ftp.url = "ftp://127.0.0.1/ok";
  HttpRequest empty = Post("/ok");
  empty.url.clear();
  for (const HttpRequest& request : {crlf, bad_name, method, space, ftp, empty}) {
    const SendResult r = sender_->Send(request, kTimeout);
    EXPECT_FALSE(r.delivered) << request.url;
    EXPECT_FALSE(r.retryable) << request.url << ": " << r.error;
    EXPECT_EQ(r.http_status, 0);
    EXPECT_FALSE(r.error.empty());
    EXPECT_THAT(r.error, Not(HasSubstr("X-Evil")));
  }
  EXPECT_TRUE(server_.requests().empty());
  EXPECT_EQ(sender_->Send(crlf, kTimeout).error,
            "headers[3] (X-Injected): value contains CR, LF or NUL");
}

}  // namespace
}  // namespace tailguard::notify
