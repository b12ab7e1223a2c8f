// The one HTTP client (common/http_client.h) against tg_test_upstream on loopback: answers of
// every status, a capped body, headers sent, timeouts, a dead port, malformed calls refused
// without quoting secrets, cancellation; and the URL check and Retry-After parsing it shares.
#include "common/http_client.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/test_upstream_process.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace tailguard {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class HttpClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { upstream_ = new test_support::TestUpstream(); }
  static void TearDownTestSuite() {
    delete upstream_;
    upstream_ = nullptr;
  }

  HttpReply Call(std::string_view method, const std::string& path,
                 std::vector<std::pair<std::string, std::string>> headers = {},
                 std::string_view body = "", Duration timeout = seconds(10),
                 size_t max_body = 64 * 1024) {
    const std::string url = upstream_->url(path);
    HttpCall call;
    call.method = method;
    call.url = url;
    call.headers = &headers;
    call.body = body;
    call.timeout = timeout;
    call.max_body_bytes = max_body;
    return client_.Send(call);
  }

  static inline test_support::TestUpstream* upstream_ = nullptr;
  HttpClient client_;
};

TEST_F(HttpClientTest, AnAnswerOfAnyStatusIsAnAnswer) {
  HttpReply r = Call("GET", "/hello");
  ASSERT_TRUE(r.answered()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(nlohmann::json::parse(r.body)["path"], "/hello");
  EXPECT_GT(r.elapsed, Duration::zero());
  r = Call("GET", "/down", {{"X-Test-Status", "503"}});
  ASSERT_TRUE(r.answered()) << r.error;
  EXPECT_EQ(r.status, 503);
}

TEST_F(HttpClientTest, PostsItsBodyAndHeaders) {
  HttpReply r = Call("POST", "/post", {{"X-Custom", "v1"}, {"Content-Type", "application/json"}},
                     "{\"a\":1}");
  ASSERT_TRUE(r.answered()) << r.error;
  EXPECT_EQ(r.status, 200);
  r = Call("GET", "/test/requests");
  ASSERT_TRUE(r.answered()) << r.error;
  EXPECT_THAT(r.body, HasSubstr("/post"));
  EXPECT_THAT(r.body, HasSubstr("x-custom"));
  EXPECT_THAT(r.body, HasSubstr("v1"));
  EXPECT_THAT(r.body, HasSubstr("{\\\"a\\\":1}")) << "the body, as recorded (JSON-escaped)";
  EXPECT_THAT(r.body, HasSubstr("tailguard/"));  // the User-Agent
}

TEST_F(HttpClientTest, KeepsAtMostMaxBodyBytesOfTheAnswer) {
  const HttpReply r = Call("GET", "/big", {{"X-Test-Body-Bytes", "100000"}}, "", seconds(10), 1000);
  ASSERT_TRUE(r.answered()) << r.error;
  EXPECT_EQ(r.body.size(), 1000u);
}

TEST_F(HttpClientTest, ATimeoutAndADeadPortAreTransportErrorsWorthRetrying) {
  HttpReply r = Call("GET", "/slow", {{"X-Test-Delay-Ms", "3000"}}, "", milliseconds(200));
  EXPECT_FALSE(r.answered());
  EXPECT_THAT(r.error, StartsWith("transport: "));
  EXPECT_FALSE(r.permanent);
  EXPECT_FALSE(r.aborted);

  const std::string url = "http://127.0.0.1:" + std::to_string(test_support::DeadPort()) + "/";
  HttpCall call;
  call.method = "GET";
  call.url = url;
  r = client_.Send(call);
  EXPECT_FALSE(r.answered());
  EXPECT_THAT(r.error, StartsWith("transport: "));
  EXPECT_FALSE(r.permanent);
}

TEST_F(HttpClientTest, AMalformedCallIsRefusedWithoutQuotingSecrets) {
  HttpReply r = Call("GET", "/x", {{"Authorization", "Bearer s3cret\r\nX-Evil: 1"}});
  EXPECT_FALSE(r.answered());
  EXPECT_TRUE(r.permanent);
  EXPECT_THAT(r.error, HasSubstr("headers[0] (Authorization): value contains CR, LF or NUL"));
  EXPECT_THAT(r.error, Not(HasSubstr("s3cret")));
  r = Call("DELETE", "/x");
  EXPECT_TRUE(r.permanent);
  EXPECT_THAT(r.error, HasSubstr("method: expected POST, PUT or GET"));
  HttpCall call;
  call.url = "http://a b/?key=s3cret";
  r = client_.Send(call);
  EXPECT_TRUE(r.permanent);
  EXPECT_THAT(r.error, Not(HasSubstr("s3cret")));
}

TEST_F(HttpClientTest, CancelledCallsEndAtOnceUntilResumed) {
  client_.SetCancelled(true);
  HttpReply r = Call("GET", "/x");
  EXPECT_TRUE(r.aborted);
  EXPECT_FALSE(r.permanent);
  client_.SetCancelled(false);
  EXPECT_TRUE(Call("GET", "/x").answered());
  // The abort check cuts a call in flight short (libcurl looks at it about once a second).
  client_.SetAbortCheck([] { return true; });
  r = Call("GET", "/slow", {{"X-Test-Delay-Ms", "5000"}});
  EXPECT_TRUE(r.aborted) << r.error;
  EXPECT_LT(r.elapsed, seconds(4));
}

TEST(CheckHttpUrlTest, AcceptsHttpAndHttpsWithAHostOnly) {
  bool https = false;
  EXPECT_TRUE(CheckHttpUrl("endpoint", "http://127.0.0.1:4318/v1/traces", &https).ok());
  EXPECT_FALSE(https);
  EXPECT_TRUE(CheckHttpUrl("endpoint", "https://collector.example.com/v1/traces", &https).ok());
  EXPECT_TRUE(https);
  for (const char* bad :
       {"", "collector:4318", "ftp://x/", "http:///x", "http://a b/", "http://x/\r\nX: y"}) {
    const absl::Status s = CheckHttpUrl("url", bad, &https);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.message(), "url: must be an http:// or https:// URL with a host") << bad;
  }
}

TEST(ParseRetryAfterTest, SecondsOnlyAndBounded) {
  EXPECT_EQ(ParseRetryAfter("Retry-After: 7\r\n", std::chrono::hours(1)), seconds(7));
  EXPECT_EQ(ParseRetryAfter("retry-after:\t120 \r\n", seconds(60)), seconds(60));
  EXPECT_EQ(ParseRetryAfter("Retry-After: Wed, 21 Oct 2026 07:28:00 GMT\r\n", seconds(60)),
            std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Retry-After: -1\r\n", seconds(60)), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Content-Length: 7\r\n", seconds(60)), std::nullopt);
}

}  // namespace
}  // namespace tailguard
