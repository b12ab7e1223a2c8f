// Hostile input against a live gateway: one regression test for each finding of the reliability
// and security probe (issue 15). Every port is ephemeral; tg_test_upstream records what reached
// it (GET /test/requests), which is how a test knows that a request was, or was not, forwarded.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/gateway_fixture.h"
#include "tailguard/alert.h"

namespace tailguard::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class HostileTest : public GatewayTest {
 protected:
  // What reached the upstream whose target starts with `prefix`.
  std::vector<json> Received(const std::string& prefix, int port = 0) {
    const Reply r = Fetch(port == 0 ? upstream_->port() : port, "/test/requests");
    EXPECT_EQ(r.status, 200);
    std::vector<json> out;
    for (const json& e : json::parse(r.body, nullptr, false)) {
      if (e.is_object() && e.value("target", "").starts_with(prefix)) out.push_back(e);
    }
    return out;
  }

  // The value of the sample `line_prefix` (a metric name with its labels) on /metrics, or -1.
  double MetricValue(const std::string& line_prefix) {
    const std::string page = Fetch(port_, "/metrics").body;
    const size_t at = page.find("\n" + line_prefix + " ");
    if (at == std::string::npos) return -1;
    return std::stod(page.substr(at + line_prefix.size() + 2));
  }

  // Waits (up to 10 s, a bound on a broken test) until the gateway counts `n` open connections:
  // a connect() returns before the gateway has accepted.
  void AwaitConnections(int64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (gateway_->counters().connections_active.load() != n &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_EQ(gateway_->counters().connections_active.load(), n);
  }
};

std::string RawPost(const std::string& path, const std::string& body, const std::string& headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n" +
         headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Finding 1: labels from requests had no length cap, and selectors ran on std::regex, which
// recursed once per character (SIGSEGV on a long value) and backtracked ((a|a)*b hung the
// control thread). A long name is now recorded as model="other", and selectors run on RE2.
TEST_F(HostileTest, LongModelNamesAreRecordedAsOtherAndSelectorsCannotCrashOrHang) {
  Start("  - name: any\n    prefix: /\n    upstream: 127.0.0.1:$UP\n");
  const std::string huge(1 << 20, 'a');
  RawClient client(port_);
  client.Send(RawPost("/x/v1/chat/completions", R"({"model":")" + huge + R"(","messages":[]})"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  // A KServe path with a model name that fills most of the header.
  client.Send(RawGet("/v2/models/" + std::string(15000, 'a') + "/infer"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  // Characters that have no place in a label.
  client.Send(RawPost("/v1/completions", R"({"model":"risk \"x\"\n","prompt":"p"})"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  // A real model id is kept as it is.
  client.Send(RawPost("/v1/completions", R"({"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"p"})"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  Tick();

  for (const char* match : {R"({model=~".*"})", R"({model=~"((a)|b)*"})", R"({model=~"(a|a)*b"})",
                            R"({model=~"risk-.*"})"}) {
    const Reply r = Fetch(port_, "/api/v1/series?all=1&match=" + std::string(match));
    ASSERT_EQ(r.status, 200) << match << ": " << r.body.substr(0, 300);
    EXPECT_THAT(r.body, Not(HasSubstr(std::string(200, 'a')))) << match;
  }
  const Reply all = Fetch(port_, "/api/v1/series?all=1");
  EXPECT_THAT(all.body, HasSubstr(R"("model":"other")"));
  EXPECT_THAT(all.body, HasSubstr("meta-llama/Llama-3.1-8B-Instruct"));
  EXPECT_EQ(Fetch(port_, "/healthz").status, 200);
  EXPECT_EQ(MetricValue(R"(tailguard_series_dropped_total{reason="label_too_long"})"), 2);
  EXPECT_EQ(MetricValue(R"(tailguard_series_dropped_total{reason="label_characters"})"), 1);
  // The upstream got the request as it was sent: only the label is replaced.
  EXPECT_EQ(Received("/x/v1/chat/completions").size(), 1u);
}

// Finding 1, third case: a rule with a regex selector is matched against every new series, so
// one request with a long model name killed the process before it was answered.
TEST_F(HostileTest, ARuleWithARegexSurvivesALongModelName) {
  AlertConfig rules;
  AlertRule rule;
  rule.name = "risk_p99";
  rule.matchers = {{"model", LabelMatcher::Op::kRegex, "risk-.*"}};
  rules.rules.push_back(rule);
  rules_ = rules;
  Start("  - name: any\n    prefix: /\n    upstream: 127.0.0.1:$UP\n");
  RawClient client(port_);
  client.Send(RawPost("/v1/completions", R"({"model":"risk-)" + std::string(1 << 20, 'x') +
                                          R"(","prompt":"p"})"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  client.Send(RawPost("/v1/completions", R"({"model":"risk-a","prompt":"p"})"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  Tick();  // matches the new series against the rule
  Tick();
  EXPECT_EQ(Fetch(port_, "/healthz").status, 200);
}

// Finding 2: each distinct long name grew /metrics and memory by about its own size, 64 of them
// per route. Now /metrics does not grow with them at all.
TEST_F(HostileTest, MetricsDoNotGrowWithRandomLongModelNames) {
  Start("  - name: any\n    prefix: /\n    upstream: 127.0.0.1:$UP\n");
  std::mt19937_64 rng(7);
  RawClient client(port_);
  auto send_random = [&] {
    std::string name(256 << 10, 'm');
    for (char& c : name) c = static_cast<char>('a' + rng() % 26);
    client.Send(RawPost("/v1/completions", R"({"model":")" + name + R"(","prompt":"p"})"));
    EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  };
  send_random();
  Tick();
  const size_t first = Fetch(port_, "/metrics").body.size();
  for (int i = 0; i < 40; ++i) send_random();
  Tick();
  const std::string page = Fetch(port_, "/metrics").body;
  // Counters grow by a few digits; no new series.
  EXPECT_LT(page.size(), first + 512);
  EXPECT_LT(page.size(), size_t{256} << 10);
  EXPECT_EQ(MetricValue(R"(tailguard_series_dropped_total{reason="label_too_long"})"), 41);
}

// Finding 3: with no token configured (the default) the changes were open, and the Origin check
// compared the Origin with the request's own Host, which a rebinding page controls.
TEST_F(HostileTest, ChangesAreRefusedWithoutAConfiguredToken) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("hostile_token_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  Start(kPlainRoute, "store: {path: \"" + (dir / "t.db").string() + "\"}\n");
  const std::string silence =
      R"({"matchers": "{model=~\".*\"}", "duration": "720h", "created_by": "x", "comment": "c"})";
  Reply r = Post(port_, "/api/v1/silences", silence, {"Content-Type: application/json"});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "api_token_not_set");
  EXPECT_THAT(r.body, HasSubstr("api_token_file"));
  r = Fetch(port_, "/api/v1/silences/1", {}, nullptr, "DELETE");
  EXPECT_EQ(r.status, 403) << r.body;
  r = Post(port_, "/api/v1/alerts/1/ack", R"({"by": "x"})", {"Content-Type: application/json"});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_TRUE(json::parse(Fetch(port_, "/api/v1/silences").body)["silences"].empty());
  gateway_.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(HostileTest, TheApiAnswersOnlyToNamesItKnows) {
  Start(kPlainRoute,
        "api_token: s3cret\nexternal_url: https://Tailguard.Example.com:8443/\n"
        "allowed_hosts: [gw.internal]\n");
  const std::string self = "Host: 127.0.0.1:" + std::to_string(port_);
  // DNS rebinding: the page's own name, pointed at the gateway, with an Origin to match.
  Reply r = Fetch(port_, "/api/v1/series", {"Host: rebind.example.net:" + std::to_string(port_)});
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "host_not_allowed");
  EXPECT_THAT(r.body, HasSubstr("allowed_hosts"));
  r = Post(port_, "/api/v1/silences", "{}",
           {"Host: rebind.example.net", "Origin: http://rebind.example.net",
            "Content-Type: application/json"});
  EXPECT_EQ(r.status, 403);
  // The names it knows.
  for (const std::string& host :
       {self, std::string("Host: localhost"), std::string("Host: [::1]:9"),
        std::string("Host: gw.internal:80"), std::string("Host: tailguard.example.com"),
        std::string("Host: GW.INTERNAL")}) {
    EXPECT_EQ(Fetch(port_, "/api/v1/series", {host}).status, 200) << host;
  }
  // With the token (the scheme in any case), any name; /metrics and the health checks take any
  // name. A host with colons is an IPv6 address only in brackets.
  EXPECT_EQ(Fetch(port_, "/api/v1/series", {"Host: rebind.example.net", "Authorization: Bearer s3cret"})
                .status,
            200);
  EXPECT_EQ(Fetch(port_, "/api/v1/series", {"Host: rebind.example.net", "Authorization: bearer s3cret"})
                .status,
            200);
  EXPECT_EQ(Fetch(port_, "/api/v1/series", {"Host: rebind.example.net", "Authorization: Bearer s3creT"})
                .status,
            403);
  EXPECT_EQ(Fetch(port_, "/api/v1/series", {"Host: a:b:c"}).status, 403);
  EXPECT_EQ(Fetch(port_, "/metrics", {"Host: prometheus-target.example.net"}).status, 200);
  EXPECT_EQ(Fetch(port_, "/healthz", {"Host: lb.example.net"}).status, 200);
}

// Finding 4: a Transfer-Encoding whose last coding is not chunked was taken as a request with no
// body, and the body's bytes were read as the next request: GET /x/SMUGGLED reached the upstream.
TEST_F(HostileTest, TransferEncodingsOtherThanChunkedAreRefusedAndNothingIsSmuggled) {
  Start(kPlainRoute);
  const std::string smuggled = "GET /x/SMUGGLED HTTP/1.1\r\nHost: gateway\r\n\r\n";
  for (const char* te :
       {"chunked, identity", "gzip", "identity", "gzip, chunked", "chunked\r\nTransfer-Encoding: chunked",
        " Chunked , x"}) {
    const std::string answer =
        Raw(port_, "POST /x/te HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: " + std::string(te) + "\r\n\r\n" +
                       smuggled);
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 ")) << te;
    EXPECT_THAT(answer, HasSubstr("Transfer-Encoding")) << te;
    // One answer, then the connection ends: the smuggled request got none.
    EXPECT_EQ(answer.find("HTTP/1.1", 5), std::string::npos) << te << answer;
  }
  // HTTP/1.0 has no Transfer-Encoding.
  EXPECT_THAT(Raw(port_, "POST /x/te HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
              StartsWith("HTTP/1.0 400 "));
  // Chunked alone (in any case) is a body like any other.
  const std::string ok = Raw(
      port_, "POST /x/chunked HTTP/1.1\r\nHost: gateway\r\nTransfer-Encoding: ChunKed\r\n"
             "Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200 "));
  EXPECT_TRUE(Received("/x/SMUGGLED").empty());
  EXPECT_TRUE(Received("/x/te").empty());
  const std::vector<json> chunked = Received("/x/chunked");
  ASSERT_EQ(chunked.size(), 1u);
  EXPECT_EQ(chunked[0]["body"], "hello");
}

// Finding 5: the stale-connection retry fired on a reset before the answer on a reused
// connection, also when the upstream had the request (and crashed): a POST was sent twice.
TEST_F(HostileTest, ANonIdempotentRequestIsNeverSentTwice) {
  Start(kPlainRoute);
  RawClient client(port_);  // one client connection: one worker, one pool
  client.Send(RawGet("/warm"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  // The pooled connection carries the POST; the upstream reads it and resets the connection.
  client.Send(RawPost("/once", "{}", "X-Test-Action: reset\r\n"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 502 "));
  EXPECT_EQ(Received("/once").size(), 1u);
  // An idempotent request is retried once on a new connection, as before.
  client.Send(RawGet("/warm"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  client.Send(RawGet("/twice", "X-Test-Action: reset\r\n"));
  EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 502 "));
  EXPECT_EQ(Received("/twice").size(), 2u);
}

// ... and a POST is still never failed by a pooled connection the upstream closed while idle:
// it is looked at before use (nothing was sent on it, so nothing can be sent twice).
TEST_F(HostileTest, APostAfterAnUpstreamRestartGoesOnAFreshConnection) {
  auto restarting = std::make_unique<test_support::TestUpstream>();
  const int up_port = restarting->port();
  Start("  - name: plain\n    prefix: /\n    upstream: 127.0.0.1:" + std::to_string(up_port) + "\n");
  {
    RawClient client(port_);
    client.Send(RawGet("/warm"));
    EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
    restarting.reset();  // SIGTERM: the upstream closes its connections
    restarting = std::make_unique<test_support::TestUpstream>(0, up_port);
    ASSERT_EQ(restarting->port(), up_port);
    client.Send(RawPost("/after-restart", R"({"x":1})"));
    EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 200 "));
  }
  EXPECT_EQ(Received("/after-restart", up_port).size(), 1u);
  EXPECT_GE(MetricValue(R"(tailguard_upstream_connections_dropped_total{reason="stale"})"), 1);
}

// Finding 7: the header deadline was timeouts.idle (60 s) and nothing limited one client, so a
// slowloris at ~10 kB/s held every slot; at the cap, /healthz and /metrics went unanswered.
TEST_F(HostileTest, ASlowHeaderIsCutOffAtTheHeaderTimeout) {
  Start(kPlainRoute, "timeouts:\n  header: 300ms\n");
  RawClient client(port_);
  const auto start = std::chrono::steady_clock::now();
  client.Send("GET /slow HTTP/1.1\r\nHo");
  const std::string answer = client.ReadToEnd();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 408 "));
  EXPECT_THAT(answer, HasSubstr("timeouts.header"));
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 5.0);
  EXPECT_EQ(MetricValue(R"(tailguard_gateway_errors_total{reason="header_timeout"})"), 1);
  EXPECT_EQ(Fetch(port_, "/a").status, 200);
}

TEST_F(HostileTest, ConnectionsPerClientAddressAreLimited) {
  Start(kPlainRoute, "limits:\n  max_connections_per_client: 3\n");
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawClient>(port_, "127.0.0.2"));
  AwaitConnections(3);
  // A client that sends its request at once still reads the 503 (a lingering close), not a
  // reset.
  RawClient fourth(port_, "127.0.0.2");
  fourth.TrySend(RawGet("/refused", "X-Pad: " + std::string(2000, 'p') + "\r\n"));
  const std::string refused = fourth.ReadToEnd();
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 503 "));
  EXPECT_THAT(refused, HasSubstr("max_connections_per_client"));
  // Other clients are not held up.
  EXPECT_EQ(Fetch(port_, "/other-client").status, 200);
  held.clear();
  AwaitConnections(0);
  RawClient again(port_, "127.0.0.2");
  again.Send(RawGet("/again", "Connection: close\r\n"));
  EXPECT_THAT(again.ReadToEnd(), StartsWith("HTTP/1.1 200 "));
}

TEST_F(HostileTest, AtTheConnectionCapHealthAndMetricsStillAnswer) {
  Start(kPlainRoute,
        "limits:\n  max_connections: 2\n  max_connections_per_client: 0\n"
        "timeouts:\n  header: 60s\n  idle: 60s\n");
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 2; ++i) held.push_back(std::make_unique<RawClient>(port_));
  AwaitConnections(2);
  {
    RawClient health(port_);
    health.Send(RawGet("/healthz"));
    const std::string answer = health.ReadToEnd();  // answered, then closed
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 "));
    EXPECT_THAT(answer, HasSubstr("Connection: close"));
  }
  {
    RawClient metrics(port_);
    metrics.Send(RawGet("/metrics"));
    EXPECT_THAT(metrics.ReadToEnd(), StartsWith("HTTP/1.1 200 "));
  }
  {
    RawClient route(port_);
    route.Send(RawGet("/x"));
    const std::string answer = route.ReadToEnd();
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 503 "));
    EXPECT_THAT(answer, HasSubstr("limits.max_connections"));
  }
  // The reserve for health checks full as well: a 503 at once, without reading a request.
  AwaitConnections(2);
  for (size_t i = 0; i < kAdminConnections; ++i) held.push_back(std::make_unique<RawClient>(port_));
  AwaitConnections(2 + static_cast<int64_t>(kAdminConnections));
  RawClient over(port_);
  over.TrySend(RawGet("/over"));
  const std::string refused = over.ReadToEnd();
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 503 "));
  EXPECT_THAT(refused, HasSubstr("limits.max_connections"));
  held.clear();
  AwaitConnections(0);
  EXPECT_EQ(Fetch(port_, "/after").status, 200);
}

// Finding 8: paths were routed and rewritten as they came: /fraud/../../etc/passwd reached the
// upstream as /../../etc/passwd.
TEST_F(HostileTest, PathsAreNormalisedBeforeRouting) {
  Start(
      "  - name: fraud\n    prefix: /fraud\n    upstream: 127.0.0.1:$UP\n    rewrite_prefix: /\n"
      "  - name: other\n    prefix: /other\n    upstream: 127.0.0.1:$UP\n");
  for (const char* path : {"/fraud/../../etc/passwd", "/fraud/%2e%2e/%2E%2e/etc/passwd",
                                 "/..", "/fraud/x/../../../y"}) {
    const std::string answer = Raw(port_, RawGet(path, "Connection: close\r\n"));
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 ")) << path;
    EXPECT_THAT(answer, HasSubstr("above the root")) << path;
  }
  EXPECT_THAT(Raw(port_, RawGet("etc/passwd", "Connection: close\r\n")), StartsWith("HTTP/1.1 400 "));
  struct Case {
    std::string sent, received;
  };
  for (const Case& c : std::vector<Case>{{"/fraud//etc//passwd", "/etc/passwd"},
                                         {"/fraud/./a/../b?x=/../y", "/b?x=/../y"},
                                         {"/fraud/../other/z", "/other/z"},
                                         {"/fraud/%2E/v1/", "/v1/"}}) {
    const std::string answer = Raw(port_, RawGet(c.sent, "Connection: close\r\n"));
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 ")) << c.sent;
    const std::vector<json> got = Received(c.received);
    ASSERT_FALSE(got.empty()) << c.sent << " did not arrive as " << c.received;
    EXPECT_EQ(got.back()["target"], c.received);
  }
  EXPECT_TRUE(Received("/../").empty());
  EXPECT_TRUE(Received("/etc/passwd/..").empty());
}

// Finding 9: a dead upstream got one connect attempt per request (2000 a second).
TEST_F(HostileTest, ADeadUpstreamIsProbedWithBackoffNotOncePerRequest) {
  Start("  - name: dead\n    prefix: /\n    upstream: 127.0.0.1:" + std::to_string(DeadPort()) +
            "\n",
        "health:\n  max_fails: 1\n  fail_timeout: 10s\n");
  RawClient client(port_);
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRequests = 200;
  for (int i = 0; i < kRequests; ++i) {
    client.Send(RawGet("/dead"));
    const std::string answer = client.ReadAnswer();
    ASSERT_THAT(answer, StartsWith("HTTP/1.1 502 ")) << i;
  }
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The first failure, then at most one probe per 100 ms (doubling): far below one per request.
  // The bound follows the time the requests took, so a slow machine cannot fail it.
  const std::string page = Fetch(port_, "/metrics").body;
  const size_t at = page.find("tailguard_upstream_errors_total{kind=\"connect\"");
  ASSERT_NE(at, std::string::npos);
  const double attempts = std::stod(page.substr(page.find("} ", at) + 2));
  EXPECT_LE(attempts, 2 + elapsed / 0.1) << "elapsed " << elapsed << " s";
  EXPECT_LT(attempts, kRequests / 2);
  const size_t skipped = page.find("tailguard_upstream_skipped_total{upstream=");
  ASSERT_NE(skipped, std::string::npos);
  EXPECT_GE(std::stod(page.substr(page.find("} ", skipped) + 2)), kRequests - attempts);
  EXPECT_THAT(Fetch(port_, "/dead").body, HasSubstr("is down"));
}

// Finding 10: HTTP/1.1 requests without Host were accepted.
TEST_F(HostileTest, AnHttp11RequestNeedsExactlyOneHost) {
  Start(kPlainRoute);
  std::string answer = Raw(port_, "GET /nohost HTTP/1.1\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 "));
  EXPECT_THAT(answer, HasSubstr("needs a Host"));
  answer = Raw(port_, "GET /twohosts HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 "));
  answer = Raw(port_, "GET /badhost HTTP/1.1\r\nHost: a b/c\r\n\r\n");
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 400 "));
  // HTTP/1.0 needs none.
  EXPECT_THAT(Raw(port_, "GET /old HTTP/1.0\r\n\r\n"), StartsWith("HTTP/1.0 200 "));
  EXPECT_TRUE(Received("/nohost").empty());
  EXPECT_TRUE(Received("/twohosts").empty());
}

}  // namespace
}  // namespace tailguard::server
