// The gateway test fixture: a real tg_test_upstream process behind a Gateway on loopback, libcurl
// and raw-socket clients. Shared by gateway_test.cc and hostile_test.cc; the including file
// defines TG_TEST_UPSTREAM.
#ifndef TAILGUARD_TESTS_SERVER_GATEWAY_FIXTURE_H_
#define TAILGUARD_TESTS_SERVER_GATEWAY_FIXTURE_H_

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/test_upstream_process.h"
#include "nlohmann/json.hpp"
#include "server/dashboard.h"
#include "server/gateway.h"
#include "server/gateway_config.h"

extern char** environ;

namespace tailguard::server {
namespace {

using nlohmann::json;
using tailguard::test_support::DeadPort;

// tg_test_upstream as a child process.
class Upstream : public tailguard::test_support::TestUpstream {
 public:
  Upstream() : TestUpstream() {}
};

struct Reply {
  long status = 0;
  std::string body;
  std::string headers;
  CURLcode code = CURLE_OK;
  // Each piece of body as it arrived, with seconds since the request started.
  std::vector<std::pair<double, std::string>> pieces;
  std::chrono::steady_clock::time_point start;
};

inline size_t OnBody(char* data, size_t size, size_t n, void* user) {
  Reply* r = static_cast<Reply*>(user);
  r->body.append(data, size * n);
  r->pieces.emplace_back(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - r->start).count(),
      std::string(data, size * n));
  return size * n;
}
inline size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  static_cast<Reply*>(user)->headers.append(data, size * n);
  return size * n;
}

inline Reply Fetch(int port, const std::string& path, const std::vector<std::string>& headers = {},
            const std::string* body = nullptr, const char* method = nullptr) {
  Reply r;
  CURL* c = curl_easy_init();
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + path;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_slist* list = nullptr;
  list = curl_slist_append(list, "Expect:");
  for (const std::string& h : headers) list = curl_slist_append(list, h.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  if (body != nullptr) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
  }
  if (method != nullptr) curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  r.start = std::chrono::steady_clock::now();
  r.code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
  curl_slist_free_all(list);
  curl_easy_cleanup(c);
  return r;
}

inline Reply Post(int port, const std::string& path, const std::string& body,
           const std::vector<std::string>& headers = {}) {
  return Fetch(port, path, headers, &body);
}

// One client connection that sees exactly the bytes the gateway writes, answer after answer.
class RawClient {
 public:
  // `source`: the loopback address to connect from (all of 127.0.0.0/8 is this host), so that a
  // test can be a client other than 127.0.0.1.
  explicit RawClient(int port, const char* source = nullptr)
      : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      inet_pton(AF_INET, source, &from.sin_addr);
      EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)), 0);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    timeval tv{10, 0};  // a bound on a broken test, not a wait the test relies on
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawClient() { close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void Send(const std::string& bytes) {
    EXPECT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  // Sends without checking (the peer may have closed the connection already).
  ssize_t TrySend(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }

  // The bytes received up to and including `delimiter`; what came before the connection ended
  // (or the receive timeout) if it never does.
  std::string ReadUntil(std::string_view delimiter) {
    size_t at;
    while ((at = buffer_.find(delimiter)) == std::string::npos && Fill()) {
    }
    return Take(at == std::string::npos ? buffer_.size() : at + delimiter.size());
  }

  // Everything received until the connection ends (or the receive timeout).
  std::string ReadToEnd() {
    while (Fill()) {
    }
    return Take(buffer_.size());
  }

  // The next `n` bytes received (fewer if the connection ends first).
  std::string Read(size_t n) {
    while (buffer_.size() < n && Fill()) {
    }
    return Take(std::min(n, buffer_.size()));
  }

  // One answer: its header, and then as many bytes as its Content-Length says (none if it has
  // none, as for an answer to HEAD, a 204 or a 304).
  std::string ReadAnswer(bool head = false) {
    std::string answer = ReadUntil("\r\n\r\n");
    const size_t at = answer.find("Content-Length: ");
    if (!head && at != std::string::npos) {
      answer += Read(std::stoul(answer.substr(at + 16)));
    }
    return answer;
  }

 private:
  bool Fill() {
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }
  std::string Take(size_t n) {
    std::string out = buffer_.substr(0, n);
    buffer_.erase(0, n);
    return out;
  }

  int fd_;
  std::string buffer_;  // received, not yet taken
};

// Writes raw bytes and returns everything the server sends until it closes.
inline std::string Raw(int port, const std::string& bytes) {
  RawClient client(port);
  client.Send(bytes);
  return client.ReadToEnd();
}

// A keep-alive GET with `headers` (each ending in CRLF).
inline std::string RawGet(const std::string& path, const std::string& headers = "",
                   const std::string& method = "GET") {
  return method + " " + path + " HTTP/1.1\r\nHost: gateway\r\n" + headers + "\r\n";
}

// The "path" tg_test_upstream's default body echoes, in a raw answer ("" if none).
inline std::string EchoedPath(const std::string& answer) {
  const size_t at = answer.find("\r\n\r\n");
  if (at == std::string::npos) return "";
  const json body = json::parse(answer.substr(at + 4), nullptr, /*allow_exceptions=*/false);
  return body.is_object() ? body.value("path", "") : "";
}

class GatewayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    upstream_ = new Upstream();
  }
  static void TearDownTestSuite() {
    delete upstream_;
    upstream_ = nullptr;
  }

  // Starts a gateway with `routes_yaml` (a YAML list under routes:; $UP is the upstream's
  // port) and `extra` top-level YAML.
  void Start(const std::string& routes_yaml, const std::string& extra = "") {
    std::string routes = routes_yaml;
    for (size_t at; (at = routes.find("$UP")) != std::string::npos;) {
      routes.replace(at, 3, std::to_string(upstream_->port()));
    }
    // No event store unless a test asks for one: test cases run in parallel processes.
    const std::string store =
        extra.find("store:") == std::string::npos ? "store: {path: \"\"}\n" : "";
    const std::string yaml =
        "listen: 127.0.0.1:0\nthreads: 2\n" + store + extra + "routes:\n" + routes;
    absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(yaml, "test.yaml");
    ASSERT_TRUE(config.ok()) << config.status() << "\n" << yaml;
    GatewayOptions options;
    options.config = *config;
    options.log = nullptr;
    options.run_loop = false;
    options.feature_store = features_;
    options.dashboard = dashboard_;
    options.clock = clock_;
    options.filters = filters_;
    if (rules_.has_value()) {
      options.rules = *rules_;
    } else {
      AlertRule rule;
      rule.name = "p99_vs_baseline";
      options.rules.rules.push_back(rule);
    }
    absl::StatusOr<std::unique_ptr<Gateway>> g = Gateway::Create(std::move(options));
    ASSERT_TRUE(g.ok()) << g.status();
    gateway_ = std::move(*g);
    gateway_->Start();
    port_ = gateway_->endpoint().port;
  }

  void TearDown() override { gateway_.reset(); }

  // The series of `stage` on (model, route), or nullptr.
  Series* Stage(const std::string& model, const std::string& route, const std::string& stage,
                const std::string& version = "default") {
    return gateway_->registry().Find(
        kRequestDurationMetric,
        {{"model", model}, {"version", version}, {"route", route}, {"stage", stage}});
  }
  // A request is recorded just after its answer is written: wait until none is in flight, so
  // the client having its answer means the gateway has its measurement.
  void Tick() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (gateway_->counters().in_flight.load() > 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    gateway_->loop().Tick();
  }

  // Collects and returns the cumulative histogram of a stage.
  Histogram Collected(const std::string& model, const std::string& route,
                      const std::string& stage) {
    Tick();
    Series* s = Stage(model, route, stage);
    return s == nullptr ? Histogram() : s->Cumulative();
  }

  static inline Upstream* upstream_ = nullptr;
  store::FeatureStore* features_ = nullptr;
  std::optional<AlertConfig> rules_;  // the rules Start() gives the gateway; one default rule if unset
  std::span<const DashboardAsset> dashboard_;
  const Clock* clock_ = nullptr;     // the gateway's clock; the real one if unset
  std::vector<RouteFilter> filters_;  // filters Start() adds to routes
  std::unique_ptr<Gateway> gateway_;
  int port_ = 0;
};


// One route for every path, to the shared upstream.
inline constexpr const char* kPlainRoute =
    "  - name: plain\n    prefix: /\n    upstream: 127.0.0.1:$UP\n";

}  // namespace
}  // namespace tailguard::server

#endif  // TAILGUARD_TESTS_SERVER_GATEWAY_FIXTURE_H_
