// OTLP export: the JSON encoding field by field, and the exporter against a real HTTP receiver on
// loopback (batching, exactly-once delivery, retries, drops when full, shutdown).
#include "server/otlp.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/strings.h"

namespace tailguard::server {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// The receiver is on loopback: keep libcurl off any proxy named in the environment. Set before
// main(), while the process has one thread.
const bool kNoProxy = [] {
  setenv("no_proxy", "127.0.0.1", 1);
  setenv("NO_PROXY", "127.0.0.1", 1);
  return true;
}();

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A small blocking HTTP/1.1 server on 127.0.0.1 (port chosen by the kernel) that records every
// request and answers each with its own status, then closes the connection. It can be told to
// fail the next requests with a status (and Retry-After), to close them without an answer, or to
// hold every answer until released.
class Receiver {
 public:
  struct Request {
    std::string head;  // request line and headers, lower-cased
    std::string body;
    MonoTime at;     // when the request had been read in full
    int status = 0;  // the answer given; 0 for a connection closed without one
  };

  Receiver() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(listen_fd_, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }

  ~Receiver() { Stop(); }

  // Stops serving and closes the port: later connections are refused.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_all();
    thread_.join();
    close(listen_fd_);
  }

  std::string url() const { return Cat("http://127.0.0.1:", port_, "/v1/traces"); }

  void FailNext(int n, int status = 503, std::string retry_after = "") {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = n;
    fail_status_ = status;
    retry_after_ = std::move(retry_after);
  }
  void CloseNext(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    close_next_ = n;
  }
  void AnswerAlways(int status) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
  }
  void Block() {
    std::lock_guard<std::mutex> lock(mu_);
    blocked_ = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      blocked_ = false;
    }
    cv_.notify_all();
  }

  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  // Waits for the n-th request to arrive; false after `timeout` (a failure, never a pacing aid).
  bool WaitForRequests(size_t n, Duration timeout = 30s) const {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }

 private:
  bool Stopped() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stopped_;
  }

  void Loop() {
    while (!Stopped()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      Serve(fd);
      close(fd);
    }
  }

  // Appends what arrives on `fd` to `out`; false on EOF, error or Stop().
  bool ReadSome(int fd, std::string& out) {
    while (!Stopped()) {
      pollfd p{fd, POLLIN, 0};
      const int r = poll(&p, 1, 20);
      if (r < 0 && errno != EINTR) return false;
      if (r <= 0) continue;
      char buf[16384];
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      out.append(buf, static_cast<size_t>(n));
      return true;
    }
    return false;
  }

  void Serve(int fd) {
    std::string data;
    size_t head_end;
    while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadSome(fd, data)) return;
    }
    Request req;
    req.head = Lower(data.substr(0, head_end));
    req.body = data.substr(head_end + 4);
    size_t length = 0;
    if (const size_t at = req.head.find("\r\ncontent-length:"); at != std::string::npos) {
      length = std::strtoul(req.head.c_str() + at + 17, nullptr, 10);
    }
    while (req.body.size() < length) {
      if (!ReadSome(fd, req.body)) return;
    }
    req.at = std::chrono::steady_clock::now();

    std::unique_lock<std::mutex> lock(mu_);
    int status = status_;
    std::string retry_after;
    if (close_next_ > 0) {
      --close_next_;
      status = 0;
    } else if (fail_next_ > 0) {
      --fail_next_;
      status = fail_status_;
      retry_after = retry_after_;
    }
    req.status = status;
    requests_.push_back(std::move(req));
    cv_.notify_all();
    cv_.wait(lock, [this] { return !blocked_ || stopped_; });
    if (stopped_ || status == 0) return;
    lock.unlock();

    std::string answer = Cat("HTTP/1.1 ", status, " X\r\nContent-Type: application/json\r\n",
                             "Content-Length: 2\r\nConnection: close\r\n");
    if (!retry_after.empty()) answer += Cat("Retry-After: ", retry_after, "\r\n");
    answer += "\r\n{}";
    size_t sent = 0;
    while (sent < answer.size()) {
      const ssize_t n = send(fd, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<Request> requests_;  // guarded by mu_
  bool stopped_ = false;           // guarded by mu_
  bool blocked_ = false;           // guarded by mu_
  int status_ = 200;               // guarded by mu_
  int fail_next_ = 0;              // guarded by mu_
  int fail_status_ = 503;          // guarded by mu_
  std::string retry_after_;        // guarded by mu_
  int close_next_ = 0;             // guarded by mu_
  std::thread thread_;
};

// A span named "s<i>" whose ids are derived from i.
Span MakeSpan(int i) {
  Span s;
  for (size_t b = 0; b < 16; ++b) s.trace_id[b] = static_cast<uint8_t>(i * 16 + b + 1);
  for (size_t b = 0; b < 8; ++b) s.span_id[b] = static_cast<uint8_t>(i + b + 1);
  s.name = Cat("s", i);
  s.kind = Span::Kind::kServer;
  s.start_unix_nano = 1'700'000'000'000'000'000 + i;
  s.end_unix_nano = s.start_unix_nano + 1000;
  s.attributes.push_back({"i", int64_t{i}});
  return s;
}

// Names of the spans in an encoded request body.
std::vector<std::string> SpanNames(const std::string& body) {
  std::vector<std::string> names;
  const json j = json::parse(body);
  for (const json& s : j.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans")) {
    names.push_back(s.at("name").get<std::string>());
  }
  return names;
}

OtlpOptions TestOptions(const Receiver& r) {
  OtlpOptions o;
  o.endpoint = r.url();
  o.flush_interval = std::chrono::hours(1);  // only full batches and Shutdown() send
  o.timeout = 30s;
  o.initial_backoff = 1ms;
  return o;
}

std::unique_ptr<OtlpExporter> MustCreate(OtlpOptions o) {
  auto e = OtlpExporter::Create(std::move(o));
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

// ---- Encoding ----

TEST(OtlpEncodeTest, GoldenMinimalSpan) {
  Span s;
  // The W3C trace-context example ids.
  s.trace_id = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
  s.span_id = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
  s.name = "POST /v1/predict";
  s.kind = Span::Kind::kServer;
  s.start_unix_nano = 1'700'000'000'000'000'000;
  s.end_unix_nano = 1'700'000'000'250'000'000;
  s.attributes.push_back({"http.response.status_code", int64_t{200}});
  const std::string out = EncodeOtlpJson(std::span<const Span>(&s, 1), "gw");
  const std::string version =
      json::parse(out)["resourceSpans"][0]["scopeSpans"][0]["scope"]["version"];
  EXPECT_FALSE(version.empty());
  EXPECT_EQ(out,
            Cat(R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":)",
                R"({"stringValue":"gw"}}]},"scopeSpans":[{"scope":{"name":"tailguard","version":")",
                version, R"("},"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736",)",
                R"("spanId":"00f067aa0ba902b7","name":"POST /v1/predict","kind":2,)",
                R"("startTimeUnixNano":"1700000000000000000",)",
                R"("endTimeUnixNano":"1700000000250000000","attributes":[{"key":)",
                R"("http.response.status_code","value":{"intValue":"200"}}]}]}]}]})"));
}

TEST(OtlpEncodeTest, FieldsRoundTrip) {
  std::vector<Span> spans(3);
  Span& server = spans[0];
  server.trace_id.fill(0xab);
  server.span_id = {1, 2, 3, 4, 5, 6, 7, 8};
  server.name = "POST /v2/models/resnet/infer";
  server.kind = Span::Kind::kServer;
  server.start_unix_nano = 1'760'000'000'123'456'789;
  server.end_unix_nano = 1'760'000'000'223'456'789;
  server.attributes = {{"http.request.method", std::string("POST")},
                       {"http.response.status_code", int64_t{503}},
                       {"tailguard.input_size", int64_t{-7}},
                       {"tailguard.ratio", 0.25},
                       {"tailguard.sampled_slow", true},
                       {"tailguard.cached", false}};
  server.error = true;
  server.status_message = "upstream unavailable";

  Span& client = spans[1];
  client.trace_id = server.trace_id;
  client.span_id = {0xff, 0xee, 0, 0, 0, 0, 0, 0x01};
  client.parent_span_id = server.span_id;
  client.name = "upstream";
  client.kind = Span::Kind::kClient;
  client.start_unix_nano = server.start_unix_nano + 1000;
  client.end_unix_nano = server.end_unix_nano - 1000;

  Span& stage = spans[2];
  stage.trace_id = server.trace_id;
  stage.span_id = {9, 9, 9, 9, 9, 9, 9, 9};
  stage.parent_span_id = client.span_id;
  stage.name = "inference";
  stage.kind = Span::Kind::kInternal;
  stage.error = true;          // an error without a message
  stage.start_unix_nano = -5;  // no encoding for before 1970: written as 0

  const std::vector<SpanAttribute> resource = {{"service.version", std::string("1.2.3")},
                                               {"service.name", std::string("ignored")},
                                               {"host.cores", int64_t{16}}};
  const json j = json::parse(EncodeOtlpJson(spans, "gateway", resource));

  ASSERT_EQ(j.size(), 1u);
  ASSERT_EQ(j["resourceSpans"].size(), 1u);
  const json& rs = j["resourceSpans"][0];
  EXPECT_EQ(rs["resource"]["attributes"],
            json::parse(R"([{"key":"service.name","value":{"stringValue":"gateway"}},
                            {"key":"service.version","value":{"stringValue":"1.2.3"}},
                            {"key":"host.cores","value":{"intValue":"16"}}])"));
  ASSERT_EQ(rs["scopeSpans"].size(), 1u);
  EXPECT_EQ(rs["scopeSpans"][0]["scope"]["name"], "tailguard");
  const json& out = rs["scopeSpans"][0]["spans"];
  ASSERT_EQ(out.size(), 3u);

  const json& s0 = out[0];
  EXPECT_EQ(s0["traceId"], "abababababababababababababababab");
  EXPECT_EQ(s0["spanId"], "0102030405060708");
  EXPECT_FALSE(s0.contains("parentSpanId"));  // root
  EXPECT_EQ(s0["name"], "POST /v2/models/resnet/infer");
  EXPECT_EQ(s0["kind"], 2);
  EXPECT_TRUE(s0["kind"].is_number_integer());
  EXPECT_EQ(s0["startTimeUnixNano"], "1760000000123456789");
  EXPECT_EQ(s0["endTimeUnixNano"], "1760000000223456789");
  EXPECT_EQ(s0["attributes"], json::parse(R"([
      {"key":"http.request.method","value":{"stringValue":"POST"}},
      {"key":"http.response.status_code","value":{"intValue":"503"}},
      {"key":"tailguard.input_size","value":{"intValue":"-7"}},
      {"key":"tailguard.ratio","value":{"doubleValue":0.25}},
      {"key":"tailguard.sampled_slow","value":{"boolValue":true}},
      {"key":"tailguard.cached","value":{"boolValue":false}}])"));
  EXPECT_TRUE(s0["attributes"][3]["value"]["doubleValue"].is_number_float());
  EXPECT_EQ(s0["status"], json::parse(R"({"code":2,"message":"upstream unavailable"})"));

  const json& s1 = out[1];
  EXPECT_EQ(s1["spanId"], "ffee000000000001");
  EXPECT_EQ(s1["parentSpanId"], "0102030405060708");
  EXPECT_EQ(s1["kind"], 3);
  EXPECT_EQ(s1["attributes"], json::array());
  EXPECT_FALSE(s1.contains("status"));  // unset, not OK

  const json& s2 = out[2];
  EXPECT_EQ(s2["parentSpanId"], "ffee000000000001");
  EXPECT_EQ(s2["kind"], 1);
  EXPECT_EQ(s2["startTimeUnixNano"], "0");
  EXPECT_EQ(s2["endTimeUnixNano"], "0");
  EXPECT_EQ(s2["status"], json::parse(R"({"code":2})"));
}

TEST(OtlpEncodeTest, AttributeLiteralsPickTheRightType) {
  const SpanAttribute text{"k", "a literal"};  // not bool, despite the pointer conversion
  const SpanAttribute number{"k", 200};        // int64, not double or bool
  EXPECT_TRUE(std::holds_alternative<std::string>(text.value));
  EXPECT_TRUE(std::holds_alternative<int64_t>(number.value));
}

TEST(OtlpEncodeTest, EscapesStringsAndReplacesInvalidUtf8) {
  Span s;
  s.name = "quote\" backslash\\ newline\n tab\t ctl\x01 unicode \xc3\xa9\xe2\x82\xac";
  s.attributes = {{"bad\xff utf8", std::string("x\xc3")}, {"</script>", std::string("<&>")}};
  s.error = true;
  s.status_message = "line1\r\nline2";
  const std::string out = EncodeOtlpJson(std::span<const Span>(&s, 1), "svc \"x\"");
  EXPECT_EQ(out.find('\n'), std::string::npos);
  const json j = json::parse(out);
  const json& span = j["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  EXPECT_EQ(span["name"], s.name);
  EXPECT_EQ(span["status"]["message"], "line1\r\nline2");
  EXPECT_EQ(span["attributes"][0]["key"], "bad\xef\xbf\xbd utf8");  // U+FFFD
  EXPECT_EQ(span["attributes"][0]["value"]["stringValue"], "x\xef\xbf\xbd");
  EXPECT_EQ(span["attributes"][1]["value"]["stringValue"], "<&>");
  EXPECT_EQ(j["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"],
            "svc \"x\"");
}

TEST(OtlpEncodeTest, NonFiniteDoublesAreProto3Strings) {
  Span s;
  s.attributes = {{"nan", std::numeric_limits<double>::quiet_NaN()},
                  {"inf", std::numeric_limits<double>::infinity()},
                  {"ninf", -std::numeric_limits<double>::infinity()},
                  {"big", 1e300}};
  const json j = json::parse(EncodeOtlpJson(std::span<const Span>(&s, 1), "svc"));
  const json& a = j["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"];
  EXPECT_EQ(a[0]["value"]["doubleValue"], "NaN");
  EXPECT_EQ(a[1]["value"]["doubleValue"], "Infinity");
  EXPECT_EQ(a[2]["value"]["doubleValue"], "-Infinity");
  EXPECT_EQ(a[3]["value"]["doubleValue"], 1e300);
}

TEST(OtlpEncodeTest, NoSpans) {
  const json j = json::parse(EncodeOtlpJson({}, "svc"));
  EXPECT_EQ(j["resourceSpans"][0]["scopeSpans"][0]["spans"], json::array());
}

// ---- Create ----

TEST(OtlpExporterTest, CreateRejectsBadOptions) {
  auto invalid = [](auto edit) {
    OtlpOptions o;
    o.endpoint = "http://127.0.0.1:4318/v1/traces";
    edit(o);
    const auto e = OtlpExporter::Create(std::move(o));
    return !e.ok() && e.status().code() == absl::StatusCode::kInvalidArgument;
  };
  for (const char* url :
       {"", "127.0.0.1:4318", "ftp://host/x", "file:///etc/passwd", "http://", "https://",
        "http:///v1/traces", "http://host/a b", "http://host/\r\nX-Injected: 1", "gopher://host"}) {
    EXPECT_TRUE(invalid([&](OtlpOptions& o) { o.endpoint = url; })) << url;
  }
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.queue_capacity = 0; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.max_batch = 0; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.flush_interval = 0s; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.timeout = -1s; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.max_retries = -1; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.initial_backoff = -1ms; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.service_name = ""; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.headers = {{"", "x"}}; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.headers = {{"Bad Name", "x"}}; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.headers = {{"X-Key", "a\r\nX-Evil: 1"}}; }));
  EXPECT_TRUE(invalid([](OtlpOptions& o) { o.headers = {{"content-type", "text/plain"}}; }));

  // An error never repeats a header value: it may be a secret.
  OtlpOptions o;
  o.endpoint = "http://127.0.0.1:4318/v1/traces";
  o.headers = {{"Authorization", "Bearer s3cret\n"}};
  const auto e = OtlpExporter::Create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message().find("s3cret"), std::string::npos);

  for (const char* url : {"http://127.0.0.1:4318/v1/traces", "HTTP://collector:4318/v1/traces",
                          "http://[::1]:4318/v1/traces", "http://localhost/v1/traces"}) {
    OtlpOptions good;
    good.endpoint = url;
    good.headers = {{"Authorization", "Bearer x"}, {"x-scope-orgid", "a"}};
    EXPECT_TRUE(OtlpExporter::Create(good).ok()) << url;
  }
}

// ---- Export against a real receiver ----

TEST(OtlpExporterTest, EverySpanArrivesExactlyOnceFromManyThreads) {
  Receiver receiver;
  OtlpOptions o = TestOptions(receiver);
  o.max_batch = 64;
  o.headers = {{"X-Api-Key", "secret"}};
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);

  constexpr int kThreads = 4;
  constexpr int kPerThread = 250;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) EXPECT_TRUE(exporter->Export(MakeSpan(t * 1000 + i)));
    });
  }
  for (std::thread& t : threads) t.join();
  exporter->Shutdown(30s);

  std::map<std::string, int> seen;
  for (const Receiver::Request& r : receiver.requests()) {
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.head.starts_with("post /v1/traces http/1.1")) << r.head;
    EXPECT_NE(r.head.find("\r\ncontent-type: application/json"), std::string::npos);
    EXPECT_NE(r.head.find("\r\nx-api-key: secret"), std::string::npos);
    const std::vector<std::string> names = SpanNames(r.body);
    EXPECT_GE(names.size(), 1u);
    EXPECT_LE(names.size(), 64u);
    for (const std::string& n : names) ++seen[n];
  }
  ASSERT_EQ(seen.size(), static_cast<size_t>(kThreads * kPerThread));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) EXPECT_EQ(seen[Cat("s", t * 1000 + i)], 1);
  }
  const OtlpStats s = exporter->stats();
  EXPECT_EQ(s.queued, 1000u);
  EXPECT_EQ(s.exported, 1000u);
  EXPECT_EQ(s.batches_sent, receiver.requests().size());
  EXPECT_EQ(s.dropped_queue_full + s.dropped_failed + s.batches_failed + s.retries, 0u);
}

TEST(OtlpExporterTest, DecodedSpanMatchesWhatWasExported) {
  Receiver receiver;
  OtlpOptions o = TestOptions(receiver);
  o.service_name = "my-gateway";
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);
  Span s = MakeSpan(3);
  s.parent_span_id = {1, 1, 1, 1, 1, 1, 1, 1};
  ASSERT_TRUE(exporter->Export(s));
  exporter->Shutdown(30s);
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(json::parse(requests[0].body),
            json::parse(EncodeOtlpJson(std::span<const Span>(&s, 1), "my-gateway")));
}

TEST(OtlpExporterTest, FullBatchIsSentWithoutWaitingForTheInterval) {
  Receiver receiver;
  OtlpOptions o = TestOptions(receiver);  // flush_interval: an hour
  o.max_batch = 4;
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(exporter->Export(MakeSpan(i)));
  ASSERT_TRUE(receiver.WaitForRequests(1));
  EXPECT_EQ(SpanNames(receiver.requests()[0].body).size(), 4u);
}

TEST(OtlpExporterTest, PartialBatchIsSentAfterTheFlushInterval) {
  Receiver receiver;
  OtlpOptions o = TestOptions(receiver);
  o.flush_interval = 20ms;
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);
  ASSERT_TRUE(exporter->Export(MakeSpan(1)));
  ASSERT_TRUE(receiver.WaitForRequests(1));  // no Shutdown(): the timer sent it
  EXPECT_EQ(SpanNames(receiver.requests()[0].body), std::vector<std::string>{"s1"});
}

TEST(OtlpExporterTest, ShutdownFlushesTheQueue) {
  Receiver receiver;
  auto exporter = MustCreate(TestOptions(receiver));  // 512 a batch, an hour's interval
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(exporter->Export(MakeSpan(i)));
  EXPECT_TRUE(receiver.requests().empty());  // neither a full batch nor the interval yet
  exporter->Shutdown(30s);
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(SpanNames(requests[0].body).size(), 10u);
  EXPECT_EQ(exporter->stats().exported, 10u);

  // Refused afterwards, and a second Shutdown() is a no-op.
  EXPECT_FALSE(exporter->Export(MakeSpan(11)));
  EXPECT_EQ(exporter->stats().dropped_queue_full, 1u);
  exporter->Shutdown(30s);
}

TEST(OtlpExporterTest, DestructorFlushes) {
  Receiver receiver;
  auto exporter = MustCreate(TestOptions(receiver));
  ASSERT_NE(exporter, nullptr);
  ASSERT_TRUE(exporter->Export(MakeSpan(7)));
  exporter.reset();
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(SpanNames(requests[0].body), std::vector<std::string>{"s7"});
}

TEST(OtlpExporterTest, ManySpansAreSplitIntoBatchesOfAtMostMaxBatch) {
  Receiver receiver;
  OtlpOptions o = TestOptions(receiver);
  o.max_batch = 3;
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(exporter->Export(MakeSpan(i)));
  exporter->Shutdown(30s);
  std::multiset<std::string> names;
  for (const auto& r : receiver.requests()) {
    const auto batch = SpanNames(r.body);
    EXPECT_LE(batch.size(), 3u);
    names.insert(batch.begin(), batch.end());
  }
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), 10u);
  EXPECT_EQ(exporter->stats().exported, 10u);
}

TEST(OtlpExporterTest, RetriesAfter503UntilAccepted) {
  Receiver receiver;
  receiver.FailNext(2, 503);
  auto exporter = MustCreate(TestOptions(receiver));  // 3 retries, 1 ms backoff
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(exporter->Export(MakeSpan(i)));
  exporter->Shutdown(30s);
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].status, 503);
  EXPECT_EQ(requests[1].status, 503);
  EXPECT_EQ(requests[2].status, 200);
  EXPECT_EQ(requests[0].body, requests[2].body);  // the same batch again
  const OtlpStats s = exporter->stats();
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.exported, 3u);
  EXPECT_EQ(s.batches_sent, 1u);
  EXPECT_EQ(s.batches_failed, 0u);
  EXPECT_EQ(s.dropped_failed, 0u);
}

TEST(OtlpExporterTest, RetriesThrottlingAndGatewayErrors) {
  for (int status : {429, 502, 504}) {
    Receiver receiver;
    receiver.FailNext(1, status);
    auto exporter = MustCreate(TestOptions(receiver));
    ASSERT_NE(exporter, nullptr);
    ASSERT_TRUE(exporter->Export(MakeSpan(0)));
    exporter->Shutdown(30s);
    EXPECT_EQ(receiver.requests().size(), 2u) << status;
    EXPECT_EQ(exporter->stats().exported, 1u) << status;
  }
}

TEST(OtlpExporterTest, HonoursRetryAfterSeconds) {
  Receiver receiver;
  receiver.FailNext(1, 503, "1");
  auto exporter = MustCreate(TestOptions(receiver));  // backoff alone would be 1-1.5 ms
  ASSERT_NE(exporter, nullptr);
  ASSERT_TRUE(exporter->Export(MakeSpan(0)));
  exporter->Shutdown(30s);
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(requests[1].at - requests[0].at, 1s);  // a lower bound: no timing flake
  EXPECT_EQ(exporter->stats().exported, 1u);
}

TEST(OtlpExporterTest, GivesUpAfterMaxRetries) {
  Receiver receiver;
  receiver.FailNext(100, 503);
  OtlpOptions o = TestOptions(receiver);
  o.max_retries = 2;
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(exporter->Export(MakeSpan(i)));
  exporter->Shutdown(30s);
  EXPECT_EQ(receiver.requests().size(), 3u);  // one try and two retries
  const OtlpStats s = exporter->stats();
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.batches_failed, 1u);
  EXPECT_EQ(s.dropped_failed, 5u);
  EXPECT_EQ(s.exported, 0u);
  EXPECT_EQ(s.queued, s.exported + s.dropped_failed);
}

TEST(OtlpExporterTest, DoesNotRetryOtherErrors) {
  for (int status : {400, 401, 404, 413, 500}) {
    Receiver receiver;
    receiver.AnswerAlways(status);
    auto exporter = MustCreate(TestOptions(receiver));
    ASSERT_NE(exporter, nullptr);
    ASSERT_TRUE(exporter->Export(MakeSpan(0)));
    exporter->Shutdown(30s);
    EXPECT_EQ(receiver.requests().size(), 1u) << status;
    const OtlpStats s = exporter->stats();
    EXPECT_EQ(s.retries, 0u) << status;
    EXPECT_EQ(s.batches_failed, 1u) << status;
    EXPECT_EQ(s.dropped_failed, 1u) << status;
  }
}

TEST(OtlpExporterTest, RetriesConnectionsClosedWithoutAnswer) {
  Receiver receiver;
  receiver.CloseNext(2);
  auto exporter = MustCreate(TestOptions(receiver));
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(exporter->Export(MakeSpan(i)));
  exporter->Shutdown(30s);
  const auto requests = receiver.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[2].status, 200);
  EXPECT_EQ(SpanNames(requests[2].body).size(), 4u);
  EXPECT_EQ(exporter->stats().retries, 2u);
  EXPECT_EQ(exporter->stats().exported, 4u);
}

TEST(OtlpExporterTest, CollectorDownCountsTheBatchAsFailed) {
  std::string url;
  {
    Receiver gone;
    url = gone.url();
  }  // the port is closed now: connections are refused
  OtlpOptions o;
  o.endpoint = url;
  o.flush_interval = std::chrono::hours(1);
  o.max_retries = 2;
  o.initial_backoff = 1ms;
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(exporter->Export(MakeSpan(i)));
  exporter->Shutdown(30s);
  const OtlpStats s = exporter->stats();
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.batches_failed, 1u);
  EXPECT_EQ(s.dropped_failed, 3u);
  EXPECT_EQ(s.exported, 0u);
}

TEST(OtlpExporterTest, DropsAndCountsWhenFull) {
  Receiver receiver;
  receiver.Block();  // requests arrive but get no answer until Release()
  OtlpOptions o = TestOptions(receiver);
  o.queue_capacity = 4;
  o.max_batch = 2;
  // The sender may take three spans at once ([s0 s1] then [s2]), leaving s3 alone in the queue:
  // a partial batch, which goes out at the next flush, so the flush must come soon.
  o.flush_interval = 50ms;
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);

  // Spans count until their request is over, so with the receiver blocked the fifth is refused
  // whether or not the sender has taken the first ones yet.
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(exporter->Export(MakeSpan(i)));
  EXPECT_FALSE(exporter->Export(MakeSpan(4)));
  EXPECT_FALSE(exporter->Export(MakeSpan(5)));
  OtlpStats s = exporter->stats();
  EXPECT_EQ(s.queued, 4u);
  EXPECT_EQ(s.dropped_queue_full, 2u);
  ASSERT_TRUE(receiver.WaitForRequests(1));  // the first batch is stuck in flight

  // Once the collector answers, the room comes back.
  receiver.Release();
  const MonoTime give_up = std::chrono::steady_clock::now() + 30s;
  while (exporter->stats().exported < 4 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_EQ(exporter->stats().exported, 4u);
  EXPECT_TRUE(exporter->Export(MakeSpan(6)));
  exporter->Shutdown(30s);

  std::multiset<std::string> names;
  for (const auto& r : receiver.requests()) {
    for (const std::string& n : SpanNames(r.body)) names.insert(n);
  }
  EXPECT_EQ(names, (std::multiset<std::string>{"s0", "s1", "s2", "s3", "s6"}));
  s = exporter->stats();
  EXPECT_EQ(s.exported, 5u);
  EXPECT_EQ(s.dropped_queue_full, 2u);
}

TEST(OtlpExporterTest, ShutdownDeadlineBoundsAHungCollector) {
  Receiver receiver;
  receiver.Block();
  OtlpOptions o = TestOptions(receiver);
  o.timeout = 600s;  // without the deadline, Shutdown() would wait this long
  o.max_batch = 1;
  auto exporter = MustCreate(o);
  ASSERT_NE(exporter, nullptr);
  ASSERT_TRUE(exporter->Export(MakeSpan(0)));
  ASSERT_TRUE(receiver.WaitForRequests(1));
  ASSERT_TRUE(exporter->Export(MakeSpan(1)));  // waits behind the hung request

  const MonoTime start = std::chrono::steady_clock::now();
  exporter->Shutdown(100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);  // about 1 s: libcurl's poll period
  const OtlpStats s = exporter->stats();
  EXPECT_EQ(s.dropped_failed, 2u);
  EXPECT_EQ(s.batches_failed, 2u);
  EXPECT_EQ(s.queued, s.exported + s.dropped_failed);
  receiver.Release();
}

TEST(OtlpExporterTest, ShutdownDuringBackoffStopsAtTheDeadline) {
  Receiver receiver;
  receiver.FailNext(100, 503, "30");  // retry in 30 s
  auto exporter = MustCreate(TestOptions(receiver));
  ASSERT_NE(exporter, nullptr);
  ASSERT_TRUE(exporter->Export(MakeSpan(0)));
  exporter->Shutdown(0s);  // nothing may be sent any more
  EXPECT_TRUE(receiver.requests().empty());
  EXPECT_EQ(exporter->stats().dropped_failed, 1u);

  // The same with the sender already waiting out the Retry-After.
  Receiver receiver2;
  receiver2.FailNext(100, 503, "30");
  OtlpOptions o = TestOptions(receiver2);
  o.max_batch = 1;
  auto exporter2 = MustCreate(o);
  ASSERT_NE(exporter2, nullptr);
  ASSERT_TRUE(exporter2->Export(MakeSpan(0)));
  ASSERT_TRUE(receiver2.WaitForRequests(1));
  const MonoTime start = std::chrono::steady_clock::now();
  exporter2->Shutdown(50ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);  // not the 30 s Retry-After
  EXPECT_EQ(receiver2.requests().size(), 1u);
  EXPECT_EQ(exporter2->stats().dropped_failed, 1u);
}

}  // namespace
}  // namespace tailguard::server
