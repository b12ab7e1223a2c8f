// The gateway end to end: a real tg_test_upstream process behind a Gateway on loopback, driven
// with libcurl. Every port is ephemeral.
#include "server/gateway.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <regex>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "alert/notify/store_rows.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/test_upstream_process.h"
#include "nlohmann/json.hpp"
#include "server/dashboard.h"
#include "server/filter.h"
#include "server/gateway_config.h"
#include "server/gateway_fixture.h"
#include "server/protocol.h"
#include "store/event_store.h"
#include "store/feature_store.h"

extern char** environ;

namespace tailguard::server {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(GatewayTest, ProxiesAndPropagatesTraceContext) {
  Start(kPlainRoute);
  const std::string parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  Reply r = Fetch(port_, "/hello?x=1", {"traceparent: " + parent});
  ASSERT_EQ(r.code, CURLE_OK);
  EXPECT_EQ(r.status, 200);
  const json body = json::parse(r.body);
  EXPECT_EQ(body["path"], "/hello");
  // Same trace, a new parent (the gateway's client span), the caller's flags.
  const std::string forwarded = body["traceparent"];
  std::optional<TraceContext> t = ParseTraceparent(forwarded);
  ASSERT_TRUE(t.has_value()) << forwarded;
  EXPECT_EQ(t->TraceIdHex(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_NE(t->SpanIdHex(), "b7ad6b7169203331");
  EXPECT_TRUE(t->sampled());
  // Without a traceparent the gateway starts a trace.
  r = Fetch(port_, "/hello");
  EXPECT_TRUE(ParseTraceparent(std::string(json::parse(r.body)["traceparent"])).has_value());

  const Histogram total = Collected("plain", "plain", "total");
  EXPECT_EQ(total.count(), 2u);
  const Histogram upstream = Collected("plain", "plain", "upstream");
  EXPECT_EQ(upstream.count(), 2u);
  EXPECT_LE(upstream.max(), total.max());
}

TEST_F(GatewayTest, KServeLabelsInputSizeAndServerTimingStages) {
  Start("  - name: triton\n    prefix: /v2/\n    upstream: 127.0.0.1:$UP\n");
  const std::string body =
      R"({"inputs":[{"name":"x","datatype":"FP32","shape":[2,3],"data":[1,2,3,4,5,6]},)"
      R"({"name":"y","datatype":"INT64","shape":[4],"data":[1,2,3,4]}]})";
  Reply r = Post(port_, "/v2/models/risk/versions/7/infer", body,
                 {"X-Test-Server-Timing: queue;dur=2.5, feature;dur=12.5, "
                  "infer;dur=40;desc=\"gpu\", rerank;dur=3"});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model_name"], "risk");
  Tick();
  Series* feature = gateway_->registry().Find(
      kRequestDurationMetric,
      {{"model", "risk"}, {"version", "7"}, {"route", "triton"}, {"stage", "feature_fetch"}});
  ASSERT_NE(feature, nullptr);
  EXPECT_EQ(feature->Cumulative().count(), 1u);
  EXPECT_NEAR(static_cast<double>(feature->Cumulative().max()), 12.5e6, 12.5e6 * 0.01);
  Series* rerank = gateway_->registry().Find(
      kRequestDurationMetric,
      {{"model", "risk"}, {"version", "7"}, {"route", "triton"}, {"stage", "rerank"}});
  ASSERT_NE(rerank, nullptr);
  EXPECT_NEAR(static_cast<double>(rerank->Cumulative().max()), 3e6, 3e6 * 0.01);

  const std::vector<SampleView> samples =
      gateway_->loop().SlowestSamples(std::chrono::minutes(5), 10);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].sample.record.input_size, 10u);  // 2*3 + 4
  // The input size and the body's size are value histograms of the route, on /metrics.
  const Labels route = {{"model", "risk"}, {"version", "7"}, {"route", "triton"}};
  Series* input = gateway_->registry().Find(kRequestInputSizeMetric, route);
  ASSERT_NE(input, nullptr);
  EXPECT_EQ(input->unit(), Unit::kCount);
  EXPECT_EQ(input->Cumulative().max(), 10u);
  Series* size = gateway_->registry().Find("tailguard_request_size_bytes", route);
  ASSERT_NE(size, nullptr);
  EXPECT_EQ(size->unit(), Unit::kBytes);
  EXPECT_EQ(size->Cumulative().count(), 1u);
  EXPECT_NEAR(static_cast<double>(size->Cumulative().max()), static_cast<double>(body.size()),
              static_cast<double>(body.size()) / 128);
  const std::string metrics = Fetch(port_, "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr("# TYPE tailguard_request_input_size histogram"));
  EXPECT_THAT(metrics, HasSubstr("tailguard_request_input_size_bucket{model=\"risk\","
                                 "route=\"triton\",version=\"7\",le=\"16\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("tailguard_request_input_size_sum{model=\"risk\","
                                 "route=\"triton\",version=\"7\"} 10"));
  EXPECT_THAT(metrics, HasSubstr("# TYPE tailguard_request_size_bytes histogram"));
  // Queue wait is a stage of the sampled request, apart from the rest of the upstream's time.
  EXPECT_EQ(samples[0].sample.record.stage_ns[static_cast<size_t>(tailguard::Stage::kQueue)],
            2'500'000u);
  EXPECT_NE(gateway_->registry().Find(
                kRequestDurationMetric,
                {{"model", "risk"}, {"version", "7"}, {"route", "triton"}, {"stage", "queue"}}),
            nullptr);
  EXPECT_EQ(samples[0].route.model, "risk");
  EXPECT_EQ(samples[0].sample.record.status, 200);

  // A malformed inference body is the client's error, answered by the gateway.
  r = Post(port_, "/v2/models/risk/infer", R"({"inputs":[{"shape":[-1]}]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"]["code"], "bad_request");
}

TEST_F(GatewayTest, StreamsServerSentEventsAsTheyArriveAndTimesTheFirstToken) {
  Start("  - name: llm\n    prefix: /v1/\n    upstream: 127.0.0.1:$UP\n");
  const std::string body =
      R"({"model":"qwen","stream":true,"messages":[{"role":"user","content":"hello there"}]})";
  Reply r =
      Post(port_, "/v1/chat/completions", body,
           {"X-Test-First-Token-Ms: 300", "X-Test-Token-Interval-Ms: 100", "X-Test-Tokens: 4"});
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.headers, HasSubstr("text/event-stream"));
  EXPECT_THAT(r.body, HasSubstr("tok3"));
  EXPECT_THAT(r.body, HasSubstr("data: [DONE]"));
  // The first event reached the client well before the last: it was not buffered.
  double first = -1, last = -1;
  for (const auto& [t, piece] : r.pieces) {
    if (first < 0 && piece.find("tok0") != std::string::npos) first = t;
    if (piece.find("[DONE]") != std::string::npos) last = t;
  }
  ASSERT_GE(first, 0);
  EXPECT_GT(last - first, 0.25);

  const Histogram ttft = Collected("qwen", "llm", "first_token");
  ASSERT_EQ(ttft.count(), 1u);
  EXPECT_GE(static_cast<double>(ttft.max()), 295e6);
  EXPECT_LT(static_cast<double>(ttft.max()), 300e6 + 250e6);
  // Four tokens (the [DONE] marker is none): three gaps of about 100 ms.
  const Histogram itl = Collected("qwen", "llm", "inter_token");
  EXPECT_EQ(itl.count(), 3u);
  EXPECT_GE(static_cast<double>(itl.Quantile(0.5)), 90e6);
  const std::vector<SampleView> samples =
      gateway_->loop().SlowestSamples(std::chrono::minutes(5), 10);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].sample.record.input_size, 11u);  // "hello there"
}

// Answers whose end is the connection's, read at once: the gateway's reads must see the FIN
// that arrived with the last bytes (server/stream.h), not wait for the request timeout.
TEST_F(GatewayTest, AnswersThatEndWithTheConnection) {
  Start(
      "  - name: plain\n    prefix: /\n    upstream: 127.0.0.1:$UP\n"
      "    request_timeout: 20s\n");
  for (int i = 0; i < 20; ++i) {
    Reply r = Fetch(port_, "/v1/eof", {"X-Test-Action: eof-body", "X-Test-Body-Bytes: 300"});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, std::string(300, 'x'));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count(),
              10.0);
    r = Fetch(port_, "/v1/truncated", {"X-Test-Action: truncate", "X-Test-Body-Bytes: 300"});
    EXPECT_EQ(r.status, 502);
    EXPECT_THAT(r.body, HasSubstr("broke off its answer"));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count(),
              10.0);
    // And a keep-alive answer on the same gateway still works.
    EXPECT_EQ(Fetch(port_, "/v1/plain").status, 200);
  }
}

// An answer whose body ends with the connection (no Content-Length, no chunks, and here no
// Connection: close either, which HTTP/1.1 allows) leaves no connection to reuse. It once went back
// to the pool all the same, so that the next request on that worker was sent on a closed socket
// first, failed, and was retried on a new connection: two upstream requests for one.
TEST_F(GatewayTest, AnAnswerEndingWithItsConnectionIsNotPooled) {
  Start(kPlainRoute);
  constexpr int kRounds = 10;
  {
    RawClient client(port_);  // one client connection: one worker, one pool
    for (int i = 0; i < kRounds; ++i) {
      client.Send(
          RawGet("/pool/eof", "X-Test-Action: eof-body-silent\r\nX-Test-Body-Bytes: 30\r\n"));
      std::string answer = client.ReadAnswer();
      EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
      EXPECT_THAT(answer, testing::EndsWith(std::string(30, 'x')));
      client.Send(RawGet("/pool/next"));
      answer = client.ReadAnswer();
      EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
      EXPECT_EQ(EchoedPath(answer), "/pool/next");
    }
  }
  const std::string metrics = Fetch(port_, "/metrics").body;
  EXPECT_THAT(metrics,
              testing::ContainsRegex("tailguard_upstream_requests_total\\{upstream=\"127.0.0.1:" +
                                     std::to_string(upstream_->port()) + "\"\\} " +
                                     std::to_string(2 * kRounds) + "\n"));
}

// An upstream out of step sends more than its answer: a body to HEAD, or bytes nobody asked
// for. Such a connection once went back to the pool, and the next request on it got those bytes
// as its answer: a 502.
TEST_F(GatewayTest, AnUpstreamConnectionWithBytesPastTheAnswerIsNotPooled) {
  Start(kPlainRoute);
  RawClient client(port_);  // one client connection: one worker, one pool
  for (const std::string method : {"GET", "HEAD"}) {
    client.Send(RawGet("/trailing/" + method, "X-Test-Trailing-Bytes: 20\r\n", method));
    std::string answer = client.ReadAnswer(method == "HEAD");
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n")) << method;
    EXPECT_THAT(answer, Not(HasSubstr("!"))) << method;
    client.Send(RawGet("/trailing/next"));
    answer = client.ReadAnswer();
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n")) << "after " << method;
    EXPECT_EQ(EchoedPath(answer), "/trailing/next") << "after " << method;
  }
}

// An upstream restart closes every idle connection the gateway keeps to it: each is found
// closed on its next use and the request retried on a new connection, with no failed request.
TEST_F(GatewayTest, AnUpstreamRestartFailsNoRequest) {
  auto restarting = std::make_unique<test_support::TestUpstream>();
  const int up_port = restarting->port();
  Start("  - name: plain\n    prefix: /\n    upstream: 127.0.0.1:" + std::to_string(up_port) +
        "\n");
  // Requests at once leave several idle connections to the upstream in each worker's pool.
  std::vector<std::future<Reply>> replies;
  for (int i = 0; i < 8; ++i) {
    replies.push_back(std::async(
        std::launch::async, [&] { return Fetch(port_, "/v1/warm", {"X-Test-Delay-Ms: 300"}); }));
  }
  for (auto& r : replies) EXPECT_EQ(r.get().status, 200);
  restarting.reset();  // SIGTERM: the upstream closes its connections
  restarting = std::make_unique<test_support::TestUpstream>(0, up_port);
  ASSERT_EQ(restarting->port(), up_port);
  for (int i = 0; i < 8; ++i) {
    const Reply r = Fetch(port_, "/v1/after-restart");
    EXPECT_EQ(r.status, 200) << r.body;
  }
}

// Interim answers (103 Early Hints, 100 Continue) from the upstream are read past, not relayed:
// once, the 103 went to the client as the answer, and the upstream connection went back to the
// pool with the real answer unread, to be given to the next request.
TEST_F(GatewayTest, InterimAnswersFromTheUpstreamAreNotRelayed) {
  Start(kPlainRoute);
  {
    // One client connection: its requests go to one worker, and so to its pooled upstream
    // connection.
    RawClient client(port_);
    client.Send(RawGet("/interim/first", "X-Test-Interim: 103\r\n"));
    std::string answer = client.ReadAnswer();
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_THAT(answer, Not(HasSubstr("103")));
    EXPECT_EQ(EchoedPath(answer), "/interim/first");

    client.Send(RawGet("/interim/second"));
    answer = client.ReadAnswer();
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_EQ(EchoedPath(answer), "/interim/second");

    // Several, and the final answer in a later read than theirs.
    client.Send(
        RawGet("/interim/third", "X-Test-Interim: 100, 103, 103\r\nX-Test-Delay-Ms: 50\r\n"));
    answer = client.ReadAnswer();
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_EQ(EchoedPath(answer), "/interim/third");

    client.Send(RawGet("/interim/fourth"));
    answer = client.ReadAnswer();
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_EQ(EchoedPath(answer), "/interim/fourth");
  }
  // All four went over one upstream connection, kept alive between them.
  const json recorded = json::parse(Fetch(upstream_->port(), "/test/requests").body);
  std::vector<uint64_t> connections;
  for (const json& r : recorded) {
    if (std::string(r["target"]).starts_with("/interim/")) connections.push_back(r["connection"]);
  }
  ASSERT_EQ(connections.size(), 4u) << recorded.dump();
  EXPECT_THAT(connections, testing::Each(connections[0]));

  // At most 16 interim answers are read past; the 17th is a bad answer.
  std::string sixteen = "X-Test-Interim: 103";
  for (int i = 1; i < 16; ++i) sixteen += ", 103";
  // Over one client connection, so that the requests after the refused answers go to the same
  // worker, and to its pool.
  RawClient client(port_);
  client.Send(RawGet("/interim/sixteen", sixteen + "\r\n"));
  std::string answer = client.ReadAnswer();
  EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_EQ(EchoedPath(answer), "/interim/sixteen");
  const auto error_of = [](const std::string& a) {
    return json::parse(a.substr(a.find("\r\n\r\n") + 4))["error"];
  };
  client.Send(RawGet("/interim/seventeen", sixteen + ", 103\r\n"));
  answer = client.ReadAnswer();
  EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 502 Bad Gateway\r\n"));
  EXPECT_EQ(error_of(answer)["code"], "upstream_unavailable");
  EXPECT_THAT(std::string(error_of(answer)["message"]),
              HasSubstr("more than 16 interim (1xx) answers"));
  // 101 switches protocols, which the gateway never asked for.
  client.Send(RawGet("/interim/upgrade", "X-Test-Interim: 101\r\n"));
  answer = client.ReadAnswer();
  EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 502 Bad Gateway\r\n"));
  EXPECT_EQ(error_of(answer)["code"], "upstream_unavailable");
  EXPECT_THAT(std::string(error_of(answer)["message"]), HasSubstr("switched protocols (101)"));
  // Those upstream connections were closed, not pooled: the next answers are their own.
  for (int i = 0; i < 4; ++i) {
    client.Send(RawGet("/interim/after"));
    answer = client.ReadAnswer();
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_EQ(EchoedPath(answer), "/interim/after");
  }
}

// The final answer behind an interim one may be an event stream; and an upstream that breaks
// off after an interim answer has the request, so it is not retried as a stale connection.
TEST_F(GatewayTest, InterimAnswersBeforeAStreamOrAReset) {
  Start(kPlainRoute);
  RawClient client(port_);
  client.Send(RawGet("/interim-then/stream",
                     "X-Test-Interim: 103\r\nX-Test-Stream: 1\r\nX-Test-Tokens: 2\r\n"));
  const std::string head = client.ReadAnswer();
  EXPECT_THAT(head, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, HasSubstr("Transfer-Encoding: chunked"));
  const std::string events = client.ReadUntil("\r\n0\r\n\r\n");
  EXPECT_THAT(events, HasSubstr("tok1"));
  EXPECT_THAT(events, HasSubstr("data: [DONE]"));

  // The stream's upstream connection is pooled; the next request takes it, gets a 103 and then
  // a reset.
  client.Send(RawGet("/interim-then/reset", "X-Test-Interim: 103\r\nX-Test-Action: reset\r\n"));
  const std::string answer = client.ReadAnswer();
  EXPECT_THAT(answer, testing::StartsWith("HTTP/1.1 502 Bad Gateway\r\n"));
  // The upstream's record has every test's requests: these have targets of their own.
  const json recorded = json::parse(Fetch(upstream_->port(), "/test/requests").body);
  int resets = 0, streams = 0;
  std::vector<uint64_t> connections;
  for (const json& r : recorded) {
    if (r["target"] == "/interim-then/reset") ++resets;
    if (r["target"] == "/interim-then/stream") ++streams;
    if (std::string(r["target"]).starts_with("/interim-then/"))
      connections.push_back(r["connection"]);
  }
  EXPECT_EQ(streams, 1);
  EXPECT_EQ(resets, 1) << "retried after the upstream had answered 103: " << recorded.dump();
  ASSERT_EQ(connections.size(), 2u) << recorded.dump();
  EXPECT_EQ(connections[0], connections[1]) << "the second request did not reuse the connection";
}

// An event stream has no length, so it goes chunked, which an HTTP/1.0 client cannot read: such
// a client gets the body as it comes, ended by the end of the connection.
TEST_F(GatewayTest, AnHttp10ClientGetsAStreamEndedByTheConnection) {
  Start(kPlainRoute);
  for (const std::string connection : {"", "Connection: keep-alive\r\n"}) {
    const auto start = std::chrono::steady_clock::now();
    const std::string answer =
        Raw(port_, "GET /events/old HTTP/1.0\r\nHost: gateway\r\n" + connection +
                       "X-Test-Stream: 1\r\nX-Test-Tokens: 3\r\n\r\n");
    // Raw() reads until the gateway closes the connection (or 10 s, a bound on a broken test).
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
    EXPECT_THAT(answer, testing::StartsWith("HTTP/1.0 200 OK\r\n"));
    EXPECT_THAT(answer, Not(HasSubstr("Transfer-Encoding")));
    EXPECT_THAT(answer, Not(HasSubstr("keep-alive")));
    EXPECT_THAT(answer, HasSubstr("tok2"));
    EXPECT_THAT(answer, testing::EndsWith("data: [DONE]\n\n"));
  }
}

// An answer without a body (to HEAD, a 204, a 304) that names an event stream: once, the
// gateway relayed it chunked and wrote a last chunk ("0\r\n\r\n") ahead of the next answer on
// the client's connection.
TEST_F(GatewayTest, BodilessStreamAnswersEndWithTheirHeader) {
  Start(kPlainRoute);
  RawClient client(port_);
  const struct {
    std::string request;
    std::string status_line;
    bool head;
  } cases[] = {
      {RawGet("/events/head", "X-Test-Stream: 1\r\n", "HEAD"), "HTTP/1.1 200 OK\r\n", true},
      {RawGet("/events/204", "X-Test-Stream: 1\r\nX-Test-Status: 204\r\n"),
       "HTTP/1.1 204 No Content\r\n", false},
      {RawGet("/events/304", "X-Test-Stream: 1\r\nX-Test-Status: 304\r\n"),
       "HTTP/1.1 304 Not Modified\r\n", false},
      {RawGet("/plain/head", "", "HEAD"), "HTTP/1.1 200 OK\r\n", true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.request);
    client.Send(c.request);
    const std::string answer = client.ReadAnswer(c.head);
    EXPECT_THAT(answer, testing::StartsWith(c.status_line));
    if (!c.head) {
      EXPECT_THAT(answer, Not(HasSubstr("Transfer-Encoding")));
    }
    // The next request's answer is the next thing on the connection: nothing in between.
    client.Send(RawGet("/after"));
    const std::string next = client.ReadAnswer();
    EXPECT_THAT(next, testing::StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_EQ(EchoedPath(next), "/after") << next;
  }
  // And a streamed GET still streams, on the same connection.
  client.Send(RawGet("/events/get", "X-Test-Stream: 1\r\nX-Test-Tokens: 2\r\n"));
  EXPECT_THAT(client.ReadAnswer(), HasSubstr("Transfer-Encoding: chunked"));
  const std::string events = client.ReadUntil("\r\n0\r\n\r\n");
  EXPECT_THAT(events, HasSubstr("tok1"));
  EXPECT_THAT(events, HasSubstr("data: [DONE]"));
  client.Send(RawGet("/after"));
  EXPECT_THAT(client.ReadAnswer(), testing::StartsWith("HTTP/1.1 200 OK\r\n"));
}

TEST_F(GatewayTest, ErrorsAreJsonWithTheRightStatus) {
  Start(
      "  - name: slow\n    prefix: /slow\n    upstream: 127.0.0.1:$UP\n"
      "    request_timeout: 300ms\n"
      "  - name: dead\n    prefix: /dead\n    upstream: 127.0.0.1:" +
          std::to_string(DeadPort()) +
          "\n"
          "  - name: plain\n    prefix: /api-like\n    upstream: 127.0.0.1:$UP\n",
      "limits:\n  max_body_bytes: 1KiB\n");
  auto code_of = [](const Reply& r) { return json::parse(r.body)["error"]["code"]; };

  Reply r = Fetch(port_, "/slow", {"X-Test-Delay-Ms: 3000"});
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(code_of(r), "upstream_timeout");
  EXPECT_THAT(std::string(json::parse(r.body)["error"]["message"]), HasSubstr("timeouts.request"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count(), 2.5);

  r = Fetch(port_, "/dead");
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(code_of(r), "upstream_unavailable");

  r = Fetch(port_, "/api-like", {"X-Test-Action: reset"});
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(code_of(r), "upstream_unavailable");

  r = Fetch(port_, "/nowhere");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(code_of(r), "not_found");

  // Errors in answer to HEAD are the header alone: once, their JSON body followed it, and a
  // client reading the connection on took it for the next answer.
  {
    RawClient client(port_);
    for (const std::string path : {"/dead/head", "/nowhere/head"}) {
      SCOPED_TRACE(path);
      client.Send(RawGet(path, "", "HEAD"));
      const std::string answer = client.ReadAnswer(/*head=*/true);
      EXPECT_THAT(answer,
                  testing::StartsWith(path == "/dead/head" ? "HTTP/1.1 502" : "HTTP/1.1 404"));
      EXPECT_THAT(answer, HasSubstr("Content-Length: "));
      EXPECT_THAT(answer, Not(HasSubstr("\"error\"")));
      client.Send(RawGet("/api-like/after"));
      const std::string next = client.ReadAnswer();
      EXPECT_THAT(next, testing::StartsWith("HTTP/1.1 200 OK\r\n")) << next;
      EXPECT_EQ(EchoedPath(next), "/api-like/after") << next;
    }
  }

  r = Post(port_, "/api-like", std::string(2048, 'x'));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(code_of(r), "too_large");

  const std::string bad = Raw(port_, "GET / HTTP/1.1\r\nHost x\r\n\r\n");
  EXPECT_THAT(bad, HasSubstr("HTTP/1.1 400 Bad Request"));
  EXPECT_THAT(bad, HasSubstr(R"("code":"bad_request")"));

  // An upstream's own 5xx passes through and counts as failed.
  r = Fetch(port_, "/api-like", {"X-Test-Status: 503"});
  EXPECT_EQ(r.status, 503);
  Tick();
  const std::string metrics = Fetch(port_, "/metrics").body;
  EXPECT_THAT(
      metrics,
      HasSubstr(
          R"(tailguard_requests_total{code="503",model="plain",route="plain",version="default"} 1)"));
  EXPECT_THAT(
      metrics,
      HasSubstr(
          R"(tailguard_requests_total{code="504",model="slow",route="slow",version="default"} 1)"));
  // /nowhere and the HEAD of /nowhere/head.
  EXPECT_THAT(metrics, HasSubstr(R"(tailguard_gateway_errors_total{reason="not_found"} 2)"));
  EXPECT_THAT(metrics, HasSubstr(R"(tailguard_gateway_errors_total{reason="too_large"} 1)"));
  EXPECT_THAT(metrics, HasSubstr(R"(kind="timeout",upstream="127.0.0.1:)"));
}

TEST_F(GatewayTest, IdleConnectionsAreClosedAfterTheIdleTimeout) {
  Start(kPlainRoute, "timeouts:\n  idle: 200ms\n");
  // A client that connects and says nothing is disconnected.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Raw(port_, ""), "");
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.19);
  EXPECT_LT(waited, 5.0);
  // Keep-alive still works for a client that does talk.
  EXPECT_EQ(Fetch(port_, "/a").status, 200);
}

TEST_F(GatewayTest, PassiveHealthSkipsADeadUpstream) {
  Start("  - name: pair\n    prefix: /\n    upstreams: [\"127.0.0.1:" + std::to_string(DeadPort()) +
        "\", \"127.0.0.1:$UP\"]\n");
  // Connect failures move on to the next upstream: every request succeeds.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Fetch(port_, "/x").status, 200) << i;
  const std::string metrics = Fetch(port_, "/metrics").body;
  EXPECT_THAT(metrics,
              testing::ContainsRegex("tailguard_upstream_up\\{upstream=\"127.0.0.1:[0-9]+\"\\} 0"));
}

// A filter on the data path: it refuses /shed, answers /cached itself, lets the rest on, and
// keeps how each request ended.
class TestFilter final : public RequestFilter {
 public:
  struct Seen {
    std::string path;
    int status = 0;
    size_t decided_by = SIZE_MAX;
    std::string body;
    Duration latency{};
    size_t answers = 0;  // OnAnswer calls before the outcome
  };
  std::string_view name() const override { return "test"; }
  FilterDecision OnRequest(const FilterRequest& r, FilterAnswer& answer) override {
    if (r.path.starts_with("/shed")) {
      answer.status = 429;
      answer.code = "shed";
      answer.message = "route plain is shedding load; retry after 2 s";
      answer.retry_after_s = 2;
      return FilterDecision::kReject;
    }
    if (r.path.starts_with("/cached")) {
      answer.status = 200;
      answer.content_type = "text/plain";
      answer.body = "cached " + std::string(r.model);
      return FilterDecision::kRespond;
    }
    return FilterDecision::kContinue;
  }
  void OnAnswer(const FilterRequest& r, const UpstreamResult&) override {
    MutexLock lock(&mu_);
    ++answers_[Key(r)];
  }
  void OnComplete(const FilterRequest& r, const FilterOutcome& o) override {
    MutexLock lock(&mu_);
    seen_[Key(r)] = {std::string(r.path), o.status,  o.decided_by,
                     std::string(o.body), o.latency, answers_[Key(r)]};
  }
  // By "METHOD path": requests on different connections may finish in any order.
  std::map<std::string, Seen> seen() const {
    MutexLock lock(&mu_);
    return seen_;
  }

 private:
  static std::string Key(const FilterRequest& r) { return Cat(r.method, " ", r.path); }
  mutable Mutex mu_;
  std::map<std::string, Seen> seen_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, size_t> answers_ ABSL_GUARDED_BY(mu_);
};

// The value of the first sample of `family` whose labels contain `labels`, or -1.
double SampleValue(const std::string& page, const std::string& family, const std::string& labels) {
  for (size_t at = page.find(family + "{"); at != std::string::npos;
       at = page.find(family + "{", at + 1)) {
    const size_t end = page.find('}', at);
    if (page.substr(at, end - at).find(labels) == std::string::npos) continue;
    return std::stod(page.substr(end + 2));
  }
  return -1;
}

TEST_F(GatewayTest, RouteFiltersAnswerRefuseOrLetOn) {
  TestFilter filter;
  filters_ = {{"plain", &filter}};
  Start(kPlainRoute);
  const Reply shed = Fetch(port_, "/shed");
  EXPECT_EQ(shed.status, 429);
  EXPECT_THAT(shed.body, HasSubstr("\"shed\""));
  EXPECT_THAT(shed.body, HasSubstr("shedding load"));
  EXPECT_THAT(shed.headers, HasSubstr("Retry-After: 2"));
  const Reply cached = Fetch(port_, "/cached");
  EXPECT_EQ(cached.status, 200);
  EXPECT_EQ(cached.body, "cached plain");
  EXPECT_THAT(cached.headers, HasSubstr("Content-Type: text/plain"));
  // A HEAD gets the header a GET would, and no body.
  const std::string head =
      Raw(port_, "HEAD /cached HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(head, testing::StartsWith("HTTP/1.1 200 "));
  EXPECT_THAT(head, HasSubstr("Content-Length: 12\r\n"));
  EXPECT_TRUE(head.ends_with("\r\n\r\n")) << head;
  const Reply on = Fetch(port_, "/on");
  EXPECT_EQ(on.status, 200);
  EXPECT_EQ(json::parse(on.body)["path"], "/on");
  Tick();

  std::map<std::string, TestFilter::Seen> seen = filter.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen["GET /shed"].status, 429);
  EXPECT_EQ(seen["GET /shed"].decided_by, 1u) << "after the health filter";
  EXPECT_EQ(seen["GET /shed"].answers, 0u) << "nothing was forwarded";
  EXPECT_EQ(seen["GET /cached"].status, 200);
  EXPECT_EQ(seen["GET /cached"].decided_by, 1u);
  EXPECT_EQ(seen["GET /cached"].body, "cached plain");
  EXPECT_EQ(seen["HEAD /cached"].status, 200);
  EXPECT_EQ(seen["HEAD /cached"].body, "") << "nothing was sent";
  EXPECT_EQ(seen["GET /shed"].body, "") << "a refusal is no answer to keep";
  EXPECT_EQ(seen["GET /on"].status, 200);
  EXPECT_EQ(seen["GET /on"].decided_by, SIZE_MAX);
  EXPECT_EQ(seen["GET /on"].answers, 1u);
  EXPECT_EQ(seen["GET /on"].body, on.body) << "the body as the client got it";
  EXPECT_GT(seen["GET /on"].latency, Duration::zero());

  const std::string page = Fetch(port_, "/metrics").body;
  EXPECT_EQ(SampleValue(page, "tailguard_upstream_requests_total", "127.0.0.1"), 1)
      << "only /on reached the upstream";
  EXPECT_EQ(SampleValue(page, "tailguard_filter_decisions_total",
                        "route=\"plain\",filter=\"test\",decision=\"reject\""),
            1);
  EXPECT_EQ(SampleValue(page, "tailguard_filter_decisions_total",
                        "route=\"plain\",filter=\"test\",decision=\"respond\""),
            2);
  EXPECT_EQ(SampleValue(page, "tailguard_filter_decisions_total",
                        "route=\"plain\",filter=\"health\",decision=\"reject\""),
            0);
  // Answered by a filter or not, every request is measured under its route.
  EXPECT_EQ(SampleValue(page, "tailguard_requests_total", "code=\"429\""), 1);
  EXPECT_EQ(SampleValue(page, "tailguard_requests_total", "code=\"200\""), 3);
  gateway_.reset();  // before the filter it borrows
}

TEST_F(GatewayTest, AFilterForARouteThatIsNotThereIsRefused) {
  TestFilter filter;
  GatewayOptions options;
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(
      "listen: 127.0.0.1:0\nstore: {path: \"\"}\nroutes:\n" +
          std::string("  - name: plain\n    prefix: /\n    upstream: 127.0.0.1:1\n"),
      "test.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  options.config = *config;
  options.log = nullptr;
  options.run_loop = false;
  options.filters = {{"nope", &filter}};
  absl::StatusOr<std::unique_ptr<Gateway>> g = Gateway::Create(std::move(options));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("filter test: no route is named \"nope\""));
}

// The passive health check runs on the gateway's clock: with a fake one, probes go exactly
// when the clock says, however long the machine takes.
TEST_F(GatewayTest, PassiveHealthRunsOnTheInjectedClock) {
  FakeClock clock;
  clock_ = &clock;
  Start(
      "  - name: dead\n    prefix: /\n    upstream: 127.0.0.1:" + std::to_string(DeadPort()) + "\n",
      "health:\n  max_fails: 1\n  fail_timeout: 10s\n");
  const auto connects = [this] {
    return SampleValue(Fetch(port_, "/metrics").body, "tailguard_upstream_errors_total",
                       "kind=\"connect\"");
  };
  // The first request fails and takes the upstream out; the next is the first probe.
  EXPECT_THAT(Fetch(port_, "/a").body, HasSubstr("could not be connected to"));
  EXPECT_THAT(Fetch(port_, "/b").body, HasSubstr("could not be connected to"));
  EXPECT_EQ(connects(), 2);
  // Until the probe interval (100 ms on this clock) has passed, no connect is tried.
  for (int i = 0; i < 5; ++i) {
    const Reply r = Fetch(port_, "/c");
    EXPECT_EQ(r.status, 502);
    EXPECT_THAT(r.body, HasSubstr("is down after repeated failures"));
    EXPECT_THAT(r.body, HasSubstr("the next try is in 100ms"));
  }
  EXPECT_EQ(connects(), 2);
  clock.Advance(std::chrono::milliseconds(99));
  EXPECT_THAT(Fetch(port_, "/d").body, HasSubstr("the next try is in 1.00ms"));
  clock.Advance(std::chrono::milliseconds(1));
  EXPECT_THAT(Fetch(port_, "/e").body, HasSubstr("could not be connected to"));
  EXPECT_EQ(connects(), 3);
  // A failed probe doubles the interval.
  EXPECT_THAT(Fetch(port_, "/f").body, HasSubstr("the next try is in 200ms"));
  const std::string page = Fetch(port_, "/metrics").body;
  EXPECT_EQ(SampleValue(page, "tailguard_upstream_skipped_total", "127.0.0.1"), 7);
  EXPECT_EQ(SampleValue(page, "tailguard_filter_decisions_total",
                        "route=\"dead\",filter=\"health\",decision=\"reject\""),
            7);
  gateway_.reset();  // before the clock it borrows
}

// A failed try counts against its upstream at once, not when the request that made it ends:
// while requests wait on a slow upstream, the dead one beside it is already out.
TEST_F(GatewayTest, AFailedTryTakesItsUpstreamOutBeforeTheRequestEnds) {
  Start("  - name: pair\n    prefix: /\n    upstreams: [\"127.0.0.1:" + std::to_string(DeadPort()) +
            "\", \"127.0.0.1:$UP\"]\n",
        "health:\n  max_fails: 1\n  fail_timeout: 1m\n");
  // Two slow requests on two connections (two workers, whose round robins start apart): one of
  // them tries the dead upstream first, then waits 3 s on the live one.
  std::vector<std::future<Reply>> slow;
  for (int i = 0; i < 2; ++i) {
    slow.push_back(std::async(std::launch::async,
                              [this] { return Fetch(port_, "/slow", {"X-Test-Delay-Ms: 3000"}); }));
  }
  bool down_in_flight = false;
  while (!down_in_flight &&
         slow[0].wait_for(std::chrono::milliseconds(20)) == std::future_status::timeout) {
    down_in_flight =
        std::regex_search(Fetch(port_, "/metrics").body,
                          std::regex("tailguard_upstream_up\\{upstream=\"127.0.0.1:[0-9]+\"\\} 0"));
  }
  EXPECT_TRUE(down_in_flight) << "the dead upstream was still up while the requests waited";
  for (auto& f : slow) EXPECT_EQ(f.get().status, 200);
}

TEST_F(GatewayTest, MetricsNegotiatesOpenMetrics) {
  Start(kPlainRoute);
  Fetch(port_, "/a");
  Tick();
  Reply text = Fetch(port_, "/metrics");
  EXPECT_THAT(text.headers, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(text.body, HasSubstr("# TYPE tailguard_requests_total counter"));
  EXPECT_THAT(text.body, HasSubstr("tailguard_request_duration_seconds_bucket{"));
  EXPECT_THAT(text.body, HasSubstr("process_resident_memory_bytes"));
  EXPECT_THAT(text.body, Not(HasSubstr("# EOF")));
  Reply om = Fetch(port_, "/metrics", {"Accept: application/openmetrics-text; version=1.0.0"});
  EXPECT_THAT(om.headers, HasSubstr("application/openmetrics-text"));
  EXPECT_THAT(om.body, HasSubstr("# TYPE tailguard_requests counter"));
  EXPECT_THAT(om.body, HasSubstr("\ntailguard_requests_total{"));
  EXPECT_TRUE(om.body.ends_with("# EOF\n"));
}

TEST_F(GatewayTest, ApiServesSeriesHistoryAlertsEventsSamples) {
  Start(kPlainRoute);
  for (int i = 0; i < 5; ++i) Fetch(port_, "/a");
  Tick();
  Reply r = Fetch(port_, "/api/v1/series");
  ASSERT_EQ(r.status, 200);
  const json series = json::parse(r.body)["series"];
  std::string id;
  for (const json& s : series) {
    if (s["labels"]["stage"] == "total") id = s["id"];
    // Stages that never happened are not listed.
    EXPECT_NE(s["labels"]["stage"], "first_token");
  }
  ASSERT_FALSE(id.empty()) << r.body;
  r = Fetch(port_, "/api/v1/series/" + id + "/history?from=-1m&step=10s");
  ASSERT_EQ(r.status, 200) << r.body;
  const json points = json::parse(r.body)["points"];
  EXPECT_EQ(points.size(), 6u);
  uint64_t count = 0;
  for (const json& p : points) count += p["count"].get<uint64_t>();
  EXPECT_EQ(count, 5u);
  EXPECT_TRUE(points.back().contains("forecast_upper")) << r.body;
  r = Fetch(port_, "/api/v1/series/" + id + "/heatmap?from=-1m&step=10s");
  ASSERT_EQ(r.status, 200) << r.body;
  const json heatmap = json::parse(r.body);
  EXPECT_EQ(heatmap["times"].size(), 6u);
  ASSERT_FALSE(heatmap["cells"].empty()) << r.body;
  uint64_t cells = 0;
  for (const json& c : heatmap["cells"]) {
    EXPECT_LT(c[1].get<size_t>() + 1, heatmap["bounds"].size());
    cells += c[2].get<uint64_t>();
  }
  EXPECT_EQ(cells, 5u);
  EXPECT_EQ(Fetch(port_, "/api/v1/series/0000/heatmap").status, 404);
  EXPECT_EQ(Fetch(port_, "/api/v1/series/" + id + "/heatmap?from=banana").status, 400);
  EXPECT_EQ(Fetch(port_, "/api/v1/series/0000/history").status, 404);
  EXPECT_EQ(Fetch(port_, "/api/v1/series/" + id + "/history?step=banana").status, 400);
  EXPECT_EQ(Fetch(port_, "/api/v1/alerts").status, 200);
  EXPECT_EQ(Fetch(port_, "/api/v1/events?limit=5").status, 200);
  EXPECT_EQ(Fetch(port_, "/api/v1/events?limit=-5").status, 400);
  r = Fetch(port_, "/api/v1/samples?limit=3");
  ASSERT_EQ(r.status, 200);
  const json samples = json::parse(r.body)["samples"];
  EXPECT_EQ(samples.size(), 3u);
  EXPECT_TRUE(samples[0]["stages"].contains("upstream"));
  EXPECT_EQ(samples[0]["trace_id"].get<std::string>().size(), 32u);
  EXPECT_EQ(Fetch(port_, "/healthz").status, 200);
  EXPECT_EQ(Fetch(port_, "/readyz").status, 200);
  EXPECT_EQ(Fetch(port_, "/api/v1/nope").status, 404);
  const std::string empty;
  EXPECT_EQ(Fetch(port_, "/api/v1/series", {}, &empty, "DELETE").status, 405);
}

TEST_F(GatewayTest, ApiSortsSeriesWorstFirstAndFiltersEventsAndSamplesBySeries) {
  Start(
      "  - name: a\n    prefix: /a\n    upstream: 127.0.0.1:$UP\n"
      "  - name: b\n    prefix: /b\n    upstream: 127.0.0.1:$UP\n");
  for (int i = 0; i < 3; ++i) Fetch(port_, "/a");
  // /b is slower: it is the worst series by P99.
  Fetch(port_, "/b", {"X-Test-Delay-Ms: 30"});
  Tick();
  Reply r = Fetch(port_, "/api/v1/series?sort=worst");
  ASSERT_EQ(r.status, 200) << r.body;
  const json series = json::parse(r.body)["series"];
  ASSERT_GE(series.size(), 2u);
  // Worst first: alert state, then anomaly score, then P99.
  auto rank = [](const json& s) {
    const std::string state = s["alert_state"];
    return std::make_tuple(state == "alert"       ? 2
                           : state == "pre_alert" ? 1
                                                  : 0,
                           s["anomaly_score"].is_number() ? s["anomaly_score"].get<double>() : -1,
                           s["p99"].is_number() ? s["p99"].get<double>() : -1);
  };
  for (size_t i = 1; i < series.size(); ++i) {
    EXPECT_GE(rank(series[i - 1]), rank(series[i])) << r.body;
  }
  std::string a_total;
  for (const json& s : series) {
    if (s["labels"]["route"] == "a" && s["labels"]["stage"] == "total") a_total = s["id"];
  }
  ASSERT_FALSE(a_total.empty());
  r = Fetch(port_, "/api/v1/series?sort=loudest");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("worst"));

  // Samples of one series: only route a's requests.
  r = Fetch(port_, "/api/v1/samples?series=" + a_total);
  ASSERT_EQ(r.status, 200) << r.body;
  const json samples = json::parse(r.body)["samples"];
  EXPECT_EQ(samples.size(), 3u);
  for (const json& s : samples) EXPECT_EQ(s["route"], "a");
  EXPECT_EQ(Fetch(port_, "/api/v1/samples?series=0123456789abcdef").status, 404);

  // Events filtered by series and time: none for this quiet series, and a bad time is a 400.
  r = Fetch(port_, "/api/v1/events?series=" + a_total + "&since=-1h");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(json::parse(r.body)["events"].empty());
  EXPECT_EQ(Fetch(port_, "/api/v1/events?since=yesterday-ish").status, 400);

  r = Fetch(port_, "/api/v1/info");
  ASSERT_EQ(r.status, 200) << r.body;
  const json info = json::parse(r.body);
  EXPECT_EQ(info["token_required"], true);
  EXPECT_EQ(info["token_configured"], false);
  EXPECT_EQ(info["store"], false);
  EXPECT_EQ(info["tick_seconds"], 1.0);
  EXPECT_TRUE(info.contains("started_at"));
}

// An episode in the store for the alert endpoints to act on.
int64_t StoreEpisode(const std::string& path) {
  absl::StatusOr<std::unique_ptr<store::EventStore>> s = store::EventStore::Open(path);
  EXPECT_TRUE(s.ok()) << s.status();
  AlertEvent e;
  e.time = WallTime(std::chrono::seconds(1'790'000'000));
  e.kind = AlertEventKind::kPreAlert;
  e.to_state = AlertState::kPreAlert;
  e.to_tier = 0;
  e.rule = "p99_vs_baseline";
  e.metric = kRequestDurationMetric;
  e.labels = {{"model", "risk"}, {"route", "plain"}, {"stage", "total"}, {"version", "1"}};
  e.series = std::string(kRequestDurationMetric) +
             R"({model="risk",route="plain",stage="total",version="1"})";
  e.severity = "warning";
  e.value = 0.4;
  e.threshold = 0.3;
  e.baseline_p99 = 0.2;
  EXPECT_TRUE((*s)->RecordEvent(notify::StoreRow(e)).ok());
  absl::StatusOr<std::vector<store::AlertRow>> rows = (*s)->ListAlerts({});
  EXPECT_TRUE(rows.ok() && rows->size() == 1);
  return rows.ok() && !rows->empty() ? (*rows)[0].id : 0;
}

TEST_F(GatewayTest, AcknowledgeAndSilencesNeedTheTokenAndLandInTheStore) {
  char dir[] = "/tmp/tg_gateway_ack_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string db = std::string(dir) + "/tailguard.db";
  Start(kPlainRoute, "api_token: s3cret\nstore: {path: \"" + db + "\"}\n");
  const int64_t id = StoreEpisode(db);
  ASSERT_GT(id, 0);
  const std::string ack = "/api/v1/alerts/" + std::to_string(id) + "/ack";
  const std::string body = R"({"by": "alice", "comment": "on it"})";
  const std::vector<std::string> token = {"Authorization: Bearer s3cret",
                                          "Content-Type: application/json"};

  Reply r = Post(port_, ack, body);
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, HasSubstr("API token"));
  r = Post(port_, ack, body, {"Authorization: Bearer wrong", "Content-Type: application/json"});
  EXPECT_EQ(r.status, 401);
  EXPECT_THAT(r.body, HasSubstr("does not match"));
  // A form post (what a web page can send cross-site without asking) is refused even with the
  // token, and so is any request whose Origin is another site.
  r = Post(port_, ack, body, {"Authorization: Bearer s3cret", "Content-Type: text/plain"});
  EXPECT_EQ(r.status, 415);
  EXPECT_THAT(r.body, HasSubstr("application/json"));
  std::vector<std::string> cross = token;
  cross.push_back("Origin: https://evil.example");
  r = Post(port_, ack, body, cross);
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(r.body, HasSubstr("evil.example"));
  EXPECT_EQ(Fetch(port_, "/api/v1/silences/1", cross, nullptr, "DELETE").status, 403);
  EXPECT_EQ(Post(port_, ack, "not json", token).status, 400);
  EXPECT_EQ(Post(port_, ack, R"({"comment": "who?"})", token).status, 400);
  EXPECT_EQ(Post(port_, "/api/v1/alerts/999999/ack", body, token).status, 404);
  EXPECT_EQ(Post(port_, "/api/v1/alerts/x/ack", body, token).status, 400);
  EXPECT_EQ(Fetch(port_, ack).status, 405);
  r = Post(port_, ack, body, token);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["alert"]["acked_by"], "alice");
  EXPECT_EQ(Post(port_, ack, body, token).status, 409);

  // Read-only views need no token; the episode shows acknowledged.
  r = Fetch(port_, "/api/v1/alerts");
  ASSERT_EQ(r.status, 200) << r.body;
  const json episodes = json::parse(r.body)["episodes"];
  ASSERT_EQ(episodes.size(), 1u) << r.body;
  EXPECT_EQ(episodes[0]["id"], id);
  EXPECT_EQ(episodes[0]["acked_by"], "alice");
  EXPECT_EQ(episodes[0]["ack_comment"], "on it");
  EXPECT_EQ(episodes[0]["labels"]["model"], "risk");

  // Silences: add, list, expire.
  const std::string silence =
      R"({"matchers": "{model=\"risk\"}", "duration": "2h", "created_by": "alice", )"
      R"("comment": "deploy"})";
  EXPECT_EQ(Post(port_, "/api/v1/silences", silence, {"Content-Type: application/json"}).status,
            401);
  // The dashboard's own requests carry its Origin, which is this gateway.
  std::vector<std::string> same = token;
  same.push_back("Origin: http://127.0.0.1:" + std::to_string(port_));
  r = Post(port_, "/api/v1/silences",
           R"({"matchers": "{model=\"x\"}", "duration": "1m", "created_by": "a", "comment": "c"})",
           same);
  EXPECT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Fetch(port_,
                  "/api/v1/silences/" +
                      std::to_string(json::parse(r.body)["silence"]["id"].get<int64_t>()),
                  same, nullptr, "DELETE")
                .status,
            200);
  r = Post(port_, "/api/v1/silences",
           R"({"matchers": "{model=", "duration": "2h", "created_by": "a", "comment": "c"})",
           token);
  EXPECT_EQ(r.status, 400) << r.body;
  r = Post(port_, "/api/v1/silences",
           R"({"matchers": "{model=\"risk\"}", "duration": "2h", "ends_at": "now", )"
           R"("created_by": "a", "comment": "c"})",
           token);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("not both"));
  r = Post(port_, "/api/v1/silences", silence, token);
  ASSERT_EQ(r.status, 201) << r.body;
  const int64_t sid = json::parse(r.body)["silence"]["id"];
  r = Fetch(port_, "/api/v1/silences");
  ASSERT_EQ(r.status, 200);
  json list = json::parse(r.body)["silences"];
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0]["matchers"], R"({model="risk"})");
  EXPECT_EQ(list[0]["active"], true);
  const std::string del = "/api/v1/silences/" + std::to_string(sid);
  EXPECT_EQ(Fetch(port_, del, {}, nullptr, "DELETE").status, 401);
  EXPECT_EQ(Fetch(port_, del, token, nullptr, "DELETE").status, 200);
  EXPECT_EQ(Fetch(port_, del, token, nullptr, "DELETE").status, 409);
  EXPECT_EQ(Fetch(port_, "/api/v1/silences/77", token, nullptr, "DELETE").status, 404);
  EXPECT_TRUE(json::parse(Fetch(port_, "/api/v1/silences").body)["silences"].empty());
  EXPECT_EQ(json::parse(Fetch(port_, "/api/v1/silences?expired=true").body)["silences"].size(), 2u);

  r = Fetch(port_, "/api/v1/info");
  EXPECT_EQ(json::parse(r.body)["token_required"], true);
  EXPECT_EQ(json::parse(r.body)["store"], true);
  gateway_.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(GatewayTest, ServesTheEmbeddedDashboardWithGzipAndRevalidation) {
  static const DashboardAsset kAssets[] = {
      {"/", "text/html; charset=utf-8", "<html>tailguard</html>", "GZIPPED-HTML", "\"abc\""},
      {"/assets/app.js", "text/javascript; charset=utf-8", "console.log(1)", "", "\"def\""},
  };
  dashboard_ = kAssets;
  Start(kPlainRoute);
  Reply r = Fetch(port_, "/");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<html>tailguard</html>");
  EXPECT_THAT(r.headers, HasSubstr("text/html"));
  EXPECT_THAT(r.headers, HasSubstr("ETag: \"abc\""));
  r = Fetch(port_, "/", {"Accept-Encoding: gzip, br"});
  EXPECT_EQ(r.body, "GZIPPED-HTML");
  EXPECT_THAT(r.headers, HasSubstr("Content-Encoding: gzip"));
  // Without a compressed copy the plain bytes go out whatever the client accepts.
  r = Fetch(port_, "/assets/app.js", {"Accept-Encoding: gzip"});
  EXPECT_EQ(r.body, "console.log(1)");
  EXPECT_THAT(r.headers, Not(HasSubstr("Content-Encoding")));
  r = Fetch(port_, "/", {"If-None-Match: \"abc\""});
  EXPECT_EQ(r.status, 304);
  EXPECT_TRUE(r.body.empty());
  r = Fetch(port_, "/assets/missing.js");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("missing.js"));
  const std::string empty;
  EXPECT_EQ(Fetch(port_, "/", {}, &empty).status, 405);
  // Every other path still goes to the routes.
  r = Fetch(port_, "/predict");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, Not(HasSubstr("tailguard</html>")));

  // dashboard: false gives / and /assets/ to a catch-all route.
  gateway_.reset();
  Start(kPlainRoute, "dashboard: false\n");
  r = Fetch(port_, "/assets/app.js");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body, "console.log(1)");
  EXPECT_THAT(Fetch(port_, "/").body, Not(HasSubstr("tailguard</html>")));
}

TEST_F(GatewayTest, ExportsSampledAndFailedRequestsAsOtlpSpans) {
  Start(kPlainRoute,
        "tracing:\n  otlp_endpoint: http://127.0.0.1:" + std::to_string(upstream_->port()) +
            "/v1/traces\n  flush_interval: 100ms\n");
  Post(upstream_->port(), "/test/reset", "");
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  Reply r = Fetch(port_, "/fail",
                  {"traceparent: 00-" + trace + "-00f067aa0ba902b7-01", "X-Test-Status: 500",
                   "X-Test-Server-Timing: feature;dur=5, infer;dur=7"});
  ASSERT_EQ(r.status, 500);
  // Wait for the batch (the exporter sends every 100 ms).
  json spans = json::array();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (spans.size() < 4 && std::chrono::steady_clock::now() < deadline) {
    spans = json::array();
    for (const json& req : json::parse(Fetch(upstream_->port(), "/test/requests").body)) {
      if (req["target"] != "/v1/traces") continue;
      const json batch = json::parse(req["body"].get<std::string>());
      for (const json& rs : batch["resourceSpans"]) {
        EXPECT_EQ(rs["resource"]["attributes"][0]["key"], "service.name");
        for (const json& ss : rs["scopeSpans"]) {
          for (const json& s : ss["spans"]) spans.push_back(s);
        }
      }
    }
    if (spans.size() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(spans.size(), 4u) << spans.dump(1);  // server, client, two stages
  const json* server = nullptr;
  const json* client = nullptr;
  for (const json& s : spans) {
    EXPECT_EQ(s["traceId"], trace);
    if (s["kind"] == 2) server = &s;
    if (s["kind"] == 3) client = &s;
  }
  ASSERT_NE(server, nullptr);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ((*server)["parentSpanId"], "00f067aa0ba902b7");
  EXPECT_EQ((*server)["status"]["code"], 2);
  EXPECT_EQ((*client)["parentSpanId"], (*server)["spanId"]);
  EXPECT_TRUE((*server)["startTimeUnixNano"].is_string());
  int stages = 0;
  for (const json& s : spans) {
    if (s["kind"] == 1) {
      EXPECT_EQ(s["parentSpanId"], (*client)["spanId"]);
      ++stages;
    }
  }
  EXPECT_EQ(stages, 2);
}

// The built-in model backend on a `backend: local` route: KServe v2 in and out, the model's
// stages recorded as series, versions, the models API and its metrics.
TEST_F(GatewayTest, ServesTorchScriptModelsOnLocalRoutes) {
  const std::string dir = TAILGUARD_DEMO_MODELS_DIR;
  std::unique_ptr<store::FeatureStore> features = store::NewMemoryFeatureStore();
  ASSERT_TRUE(store::SeedFeatures(*features, 4, 48, 7).ok());
  features_ = features.get();
  Start("  - {name: models, prefix: /v2/models/, backend: local}\n",
        "api_token: s3cret-token-123\nmodels:\n"
        "  - {name: text, profile_sample_rate: 1, versions: [{version: \"1\", path: " +
            dir +
            "/text_classifier.pt}]}\n"
            "  - name: risk\n    features: {input: user_id}\n    versions:\n"
            "      - {version: \"1\", path: " +
            dir + "/risk_mlp_v1.pt}\n      - {version: \"2\", path: " + dir + "/risk_mlp_v2.pt}\n");
  const std::string text =
      R"({"id":"t1","inputs":[{"name":"ids","shape":[1,6],"datatype":"INT64","data":[1,2,3,4,5,6]}]})";
  Reply r = Post(port_, "/v2/models/text/infer", text);
  ASSERT_EQ(r.status, 200) << r.body;
  json doc = json::parse(r.body);
  EXPECT_EQ(doc["model_name"], "text");
  EXPECT_EQ(doc["model_version"], "1");
  EXPECT_EQ(doc["id"], "t1");
  EXPECT_EQ(doc["outputs"][0]["shape"], json::parse("[1,2]"));
  EXPECT_THAT(r.headers, HasSubstr("Server-Timing: queue;dur="));
  EXPECT_THAT(r.headers, HasSubstr("layer_encoder_0;dur="));

  const std::string user = store::SeedKey(2);
  const std::string risk =
      R"({"inputs":[{"name":"user_id","shape":[1],"datatype":"BYTES","data":[")" + user +
      R"("]},{"name":"realtime","shape":[1,16],"datatype":"FP32","data":[)" +
      "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}]}";
  r = Post(port_, "/v2/models/risk/versions/2/infer", risk);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model_version"], "2");

  // The stages the backend measured are series, under the version that answered.
  Tick();
  Series* infer = Stage("text", "models", "inference", "1");
  ASSERT_NE(infer, nullptr);
  EXPECT_EQ(infer->Cumulative().count(), 1u);
  EXPECT_NE(Stage("text", "models", "queue", "1"), nullptr);
  EXPECT_NE(Stage("text", "models", "layer_encoder_0", "1"), nullptr);
  EXPECT_NE(Stage("risk", "models", "feature_fetch", "2"), nullptr);
  Series* total = Stage("text", "models", "total", "1");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->Cumulative().count(), 1u);

  // Errors.
  r = Fetch(port_, "/v2/models/text/infer");
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("serves POST /v2/models/{model}"));
  {
    // The same 404 to HEAD is its header alone, and the connection goes on.
    RawClient client(port_);
    client.Send(RawGet("/v2/models/text/infer", "", "HEAD"));
    EXPECT_THAT(client.ReadAnswer(/*head=*/true), testing::StartsWith("HTTP/1.1 404"));
    client.Send(RawGet("/v2/models/text/infer"));
    const std::string next = client.ReadAnswer();
    EXPECT_THAT(next, testing::StartsWith("HTTP/1.1 404"));
    EXPECT_THAT(next, HasSubstr("serves POST /v2/models/{model}"));
  }
  r = Post(port_, "/v2/models/vision/infer", text);
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(r.body, HasSubstr("the backend serves: text, risk"));
  r = Post(port_, "/v2/models/text/infer", "{\"inputs\": 3}");
  EXPECT_EQ(r.status, 400);

  // The models API, and switching the default version (the token is needed).
  r = Fetch(port_, "/api/v1/models");
  ASSERT_EQ(r.status, 200);
  doc = json::parse(r.body);
  EXPECT_EQ(doc["models"][1]["name"], "risk");
  EXPECT_EQ(doc["models"][1]["versions"][0]["fingerprint"].get<std::string>().size(), 16u);
  r = Fetch(port_, "/api/v1/models/risk/default?version=2", {}, nullptr, "POST");
  EXPECT_EQ(r.status, 401);
  r = Fetch(port_, "/api/v1/models/risk/default?version=2",
            {"Authorization: Bearer s3cret-token-123"}, nullptr, "POST");
  EXPECT_EQ(r.status, 200) << r.body;
  r = Post(port_, "/v2/models/risk/infer", risk);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model_version"], "2");
  r = Fetch(port_, "/api/v1/models/risk/default?version=9",
            {"Authorization: Bearer s3cret-token-123"}, nullptr, "POST");
  EXPECT_EQ(r.status, 404);
  // Not UTF-8 once decoded: still a JSON answer, and the connection's bookkeeping holds.
  r = Fetch(port_, "/api/v1/models/risk/default?version=%FF",
            {"Authorization: Bearer s3cret-token-123"}, nullptr, "POST");
  EXPECT_EQ(r.status, 404);
  EXPECT_FALSE(json::parse(r.body, nullptr, false).is_discarded()) << r.body;
  // A model the backend does not serve is recorded as "other", not under its URL name.
  Post(port_, "/v2/models/made-up-name/infer", text);

  Tick();
  EXPECT_EQ(Stage("made-up-name", "models", "total"), nullptr);
  EXPECT_NE(Stage("other", "models", "total"), nullptr);
  EXPECT_EQ(gateway_->counters().in_flight.load(), 0);
  const std::string metrics = Fetch(port_, "/metrics").body;
  EXPECT_THAT(metrics, HasSubstr("tailguard_model_info{fingerprint=\""));
  EXPECT_THAT(metrics, HasSubstr("tailguard_model_requests_total{model=\"risk\",version=\"2\"} 2"));
  EXPECT_THAT(metrics, HasSubstr("tailguard_model_layer_seconds_total{layer=\"encoder.0\""));
  // The backend's own signals: rows per pass and its queue.
  EXPECT_THAT(metrics, HasSubstr("tailguard_model_batch_size_bucket{model=\"text\",version=\"1\","
                                 "le=\"1\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("tailguard_model_queue_depth{model=\"risk\"} 0"));
  // One family, once: a family written twice makes Prometheus refuse the whole scrape.
  std::map<std::string, int> families;
  std::istringstream page(metrics);
  for (std::string line; std::getline(page, line);) {
    if (line.starts_with("# TYPE ")) ++families[line.substr(7, line.find(' ', 7) - 7)];
  }
  for (const auto& [name, n] : families) EXPECT_EQ(n, 1) << name;
  EXPECT_EQ(families.count("tailguard_model_queue_depth"), 1u);
}

TEST_F(GatewayTest, ShutdownDrainsInFlightRequests) {
  Start(kPlainRoute);
  auto slow = std::async(std::launch::async,
                         [this] { return Fetch(port_, "/slow", {"X-Test-Delay-Ms: 700"}); });
  // Wait until the request is in flight, then shut down under it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (gateway_->counters().in_flight.load() == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(gateway_->counters().in_flight.load(), 1);
  gateway_->Shutdown();
  const Reply r = slow.get();
  EXPECT_EQ(r.code, CURLE_OK);
  EXPECT_EQ(r.status, 200);
  // No longer accepting.
  EXPECT_NE(Fetch(port_, "/after").code, CURLE_OK);
}

}  // namespace
}  // namespace tailguard::server
