// The load generator against a real HTTP server on loopback (tg_test_upstream): it holds its
// rate, a stalled upstream shows in P99 and max, per-phase generators shape the requests, and
// errors are counted by kind. Wall-clock runs of a few seconds with generous bounds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/test_upstream_process.h"
#include "loadgen/loadgen.h"

extern char** environ;

namespace tailguard::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

using tailguard::test_support::DeadPort;

// tg_test_upstream as a child process.
class Upstream : public tailguard::test_support::TestUpstream {
 public:
  Upstream() : TestUpstream(2) {}
};

// GET `path` with a plain socket; returns the whole answer (headers and body).
std::string Get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

Report RunOk(LoadgenOptions options) {
  absl::StatusOr<std::unique_ptr<Loadgen>> lg = Loadgen::Create(std::move(options));
  EXPECT_TRUE(lg.ok()) << lg.status();
  if (!lg.ok()) return {};
  absl::StatusOr<Report> r = (*lg)->Run();
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : Report{};
}

TEST(LoadgenHttpTest, HoldsItsRate) {
  Upstream up;
  LoadgenOptions o;
  o.url = up.url("/rate");
  o.connections = 16;
  o.phases = {ConstantPhase(seconds(2), 500)};
  int updates = 0;
  bool final_seen = false;
  o.progress_interval = milliseconds(500);
  o.progress = [&](const ProgressUpdate& u) {
    ++updates;
    final_seen = final_seen || u.final;
    EXPECT_NE(u.interval_latency, nullptr);
  };
  const Report r = RunOk(std::move(o));
  EXPECT_EQ(r.counts.scheduled, 1000u);
  EXPECT_EQ(r.counts.sent, 1000u);
  EXPECT_EQ(r.counts.completed, 1000u);
  EXPECT_EQ(r.counts.status_class[2], 1000u);
  EXPECT_EQ(r.counts.dropped, 0u);
  EXPECT_DOUBLE_EQ(r.intended_rate, 500);
  EXPECT_NEAR(r.achieved_rate, 500, 500 * 0.05);
  EXPECT_EQ(r.latency.count(), 1000u);
  EXPECT_LT(r.latency_summary.p50_ns, 100'000'000u);
  EXPECT_FALSE(r.stopped);
  EXPECT_GE(updates, 3);
  EXPECT_TRUE(final_seen);
  // Every request reached the server.
  EXPECT_EQ(Count(Get(up.port(), "/test/requests"), "\"target\":\"/rate\""), 1000u);
}

TEST(LoadgenHttpTest, StalledUpstreamShowsInP99AndMax) {
  Upstream up;
  LoadgenOptions o;
  o.url = up.url("/stall");
  o.connections = 8;
  Phase before = ConstantPhase(seconds(1), 200);
  before.name = "before";
  // The upstream stalls: every request of this phase takes a second, so all 8 connections are
  // busy and what comes next waits in the queue.
  Phase stall = ConstantPhase(milliseconds(100), 200);
  stall.name = "stall";
  stall.request.headers = {{"X-Test-Delay-Ms", "1000"}};
  Phase after = ConstantPhase(seconds(1), 200);
  after.name = "after";
  o.phases = {before, stall, after};
  const Report r = RunOk(std::move(o));
  EXPECT_EQ(r.counts.completed, 420u);
  EXPECT_EQ(r.counts.dropped, 0u);
  // About 20 stalled requests and the ~200 that queued behind them wait close to a second; a
  // closed-loop client on 8 connections would have seen only 8 slow requests.
  EXPECT_GT(r.latency_summary.p99_ns, 600'000'000u);
  EXPECT_GT(r.latency_summary.max_ns, 900'000'000u);
  EXPECT_LT(r.phases[0].latency.p99_ns, 300'000'000u);
  EXPECT_GT(r.phases[1].latency.p50_ns, 900'000'000u);
  EXPECT_GT(r.phases[2].latency.p50_ns, 100'000'000u);
  EXPECT_GT(r.send_lag_summary.max_ns, 500'000'000u);
}

TEST(LoadgenHttpTest, GeneratorShapesRequestsPerPhase) {
  Upstream up;
  LoadgenOptions o;
  o.url = up.url("/base");
  o.method = "POST";
  o.body = "default";
  Phase a = ConstantPhase(milliseconds(500), 40);
  a.name = "small";
  Phase b = ConstantPhase(milliseconds(500), 40);
  b.name = "large";
  o.phases = {a, b};
  o.generator = [](const RequestContext& c, HttpRequest& r) {
    r.path = "/" + std::string(c.phase_name) + "/" + std::to_string(c.sequence);
    if (c.phase == 1) r.body = std::string(1000, 'x');
  };
  const Report r = RunOk(std::move(o));
  EXPECT_EQ(r.counts.status_class[2], 40u);
  const std::string seen = Get(up.port(), "/test/requests");
  EXPECT_EQ(Count(seen, "\"target\":\"/small/"), 20u);
  EXPECT_EQ(Count(seen, "\"target\":\"/large/"), 20u);
  EXPECT_THAT(seen, HasSubstr("\"target\":\"/large/39\""));
  EXPECT_EQ(Count(seen, "\"body\":\"default\""), 20u);
  EXPECT_EQ(Count(seen, "\"body\":\"" + std::string(1000, 'x') + "\""), 20u);
  EXPECT_EQ(Count(seen, "\"method\":\"POST\""), 40u);
}

TEST(LoadgenHttpTest, ErrorsAreCountedByKind) {
  Upstream up;
  LoadgenOptions o;
  o.url = up.url("/errors");
  o.connections = 4;
  o.timeout = milliseconds(300);
  Phase s503 = ConstantPhase(milliseconds(200), 50);
  s503.request.headers = {{"X-Test-Status", "503"}};
  Phase hang = ConstantPhase(milliseconds(200), 10);
  hang.request.headers = {{"X-Test-Action", "hang"}};
  Phase reset = ConstantPhase(milliseconds(200), 10);
  reset.request.headers = {{"X-Test-Action", "reset"}};
  o.phases = {s503, hang, reset};
  const Report r = RunOk(std::move(o));
  EXPECT_EQ(r.counts.status_class[5], 10u);
  EXPECT_EQ(r.counts.timeouts, 2u);
  EXPECT_EQ(r.counts.io_errors, 2u);
  EXPECT_EQ(r.counts.errors(), 14u);
  // The timeouts are in the latency histogram at about the timeout.
  EXPECT_GE(r.latency.max(), 300'000'000u);
  EXPECT_EQ(r.latency.count(), 12u);
}

TEST(LoadgenHttpTest, StopEndsTheRunEarly) {
  Upstream up;
  LoadgenOptions o;
  o.url = up.url();
  o.phases = {ConstantPhase(seconds(60), 100)};
  absl::StatusOr<std::unique_ptr<Loadgen>> lg = Loadgen::Create(std::move(o));
  ASSERT_TRUE(lg.ok()) << lg.status();
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(300));
    (*lg)->Stop();
  });
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Report> r = (*lg)->Run();
  stopper.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(20));
  EXPECT_TRUE(r->stopped);
  EXPECT_GT(r->counts.completed, 0u);
  EXPECT_LT(r->counts.scheduled, 6000u);
  EXPECT_FALSE((*lg)->Run().ok());
}

TEST(LoadgenHttpTest, NothingListeningIsUnavailable) {
  LoadgenOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(DeadPort()) + "/";
  o.connections = 2;
  o.phases = {ConstantPhase(seconds(1), 10)};
  absl::StatusOr<std::unique_ptr<Loadgen>> lg = Loadgen::Create(std::move(o));
  ASSERT_TRUE(lg.ok()) << lg.status();
  absl::StatusOr<Report> r = (*lg)->Run();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsUnavailable(r.status()));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("cannot connect to http://127.0.0.1:"));
}

TEST(LoadgenHttpTest, ThreadsSplitTheRun) {
  Upstream up;
  LoadgenOptions o;
  o.url = up.url();
  o.threads = 2;
  o.connections = 8;
  o.phases = {ConstantPhase(seconds(1), 400, Distribution::kPoisson)};
  const Report r = RunOk(std::move(o));
  EXPECT_NEAR(static_cast<double>(r.counts.completed), 400, 100);
  EXPECT_EQ(r.counts.completed, r.counts.scheduled);
  EXPECT_EQ(r.counts.status_class[2], r.counts.completed);
}

TEST(LoadgenOptionsTest, BadOptionsSayWhatToFix) {
  const auto error = [](LoadgenOptions o) {
    if (o.phases.empty()) o.phases = {ConstantPhase(seconds(1), 1)};
    return std::string(ValidateOptions(o).message());
  };
  LoadgenOptions o;
  o.url = "https://example.com/";
  EXPECT_THAT(error(o), HasSubstr("https is not supported"));
  o.url = "ftp://x/";
  EXPECT_THAT(error(o), HasSubstr("only http:// is supported"));
  o.url = "http://host:99999/";
  EXPECT_THAT(error(o), HasSubstr("port \"99999\" is not a number from 1 to 65535"));
  o.url = "http://:80/";
  EXPECT_THAT(error(o), HasSubstr("no host"));
  o.url = "http://127.0.0.1:8080/";
  o.connections = 0;
  EXPECT_THAT(error(o), HasSubstr("connections must be from 1"));
  o.connections = 4;
  o.phases = {ConstantPhase(seconds(1), -5)};
  EXPECT_THAT(error(o), HasSubstr("rates must be from 0"));
  o.phases = {};
  o.timeout = Duration::zero();
  EXPECT_THAT(error(o), HasSubstr("timeout must be positive"));
  LoadgenOptions none;
  none.url = "http://127.0.0.1/";
  EXPECT_THAT(std::string(ValidateOptions(none).message()), HasSubstr("no phases"));
}

TEST(LoadgenOptionsTest, ParsesUrls) {
  absl::StatusOr<HttpTarget> t = ParseHttpUrl("http://127.0.0.1:8080/v2/models/m/infer?x=1");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->host, "127.0.0.1");
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->path, "/v2/models/m/infer?x=1");
  t = ParseHttpUrl("localhost");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->port, 80);
  EXPECT_EQ(t->path, "/");
  t = ParseHttpUrl("http://[::1]:9000");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->host, "::1");
  EXPECT_EQ(t->ToString(), "http://[::1]:9000/");
}

}  // namespace
}  // namespace tailguard::loadgen
