// The control plane without a gateway: a registry on a fake clock, recorded into directly (as an
// embedding server or the Prometheus watcher would fill it), analysed by the control plane's
// live loop, with alerts in its store and everything visible through its API.
#include "server/control_plane.h"

#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/event_store.h"
#include "tailguard/analyzer.h"

namespace tailguard::server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

class ControlPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           Cat("tailguard_control_plane_",
               ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    plane_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // A rule that fires on a route total's P99 above 100 ms after two ticks.
  static AlertConfig Rules() {
    AlertConfig rules;
    AlertRule rule;
    rule.name = "p99_over_100ms";
    rule.matchers = {{"stage", LabelMatcher::Op::kEqual, "total"}};
    AlertTier tier;
    tier.above = Threshold::Absolute(0.1);
    tier.severity = "critical";
    rule.tiers = {tier};
    rule.debounce.pre_alert_after = 1;
    rule.debounce.alert_after = seconds(2);
    rules.rules = {rule};
    return rules;
  }

  void Create(bool with_store, std::optional<AlertConfig> rules = std::nullopt) {
    ControlPlaneOptions options;
    options.config.tick = seconds(1);
    options.config.store.path = with_store ? (dir_ / "tailguard.db").string() : "";
    options.config.api_token = "secret";
    options.rules = rules ? *std::move(rules) : Rules();
    options.registry = &registry_;
    options.clock = &clock_;
    options.log = nullptr;
    options.address = "127.0.0.1:9";
    absl::StatusOr<std::unique_ptr<ControlPlane>> c = ControlPlane::Create(std::move(options));
    ASSERT_TRUE(c.ok()) << c.status();
    plane_ = std::move(*c);
  }

  // `ticks` seconds of 20 requests a second at `latency` on route "fraud".
  void Run(int ticks, Duration latency) {
    absl::StatusOr<Series*> s = registry_.GetOrCreate(
        kRequestDurationMetric,
        {{"model", "risk"}, {"version", "1"}, {"route", "fraud"}, {"stage", "total"}});
    ASSERT_TRUE(s.ok()) << s.status();
    for (int t = 0; t < ticks; ++t) {
      for (int i = 0; i < 20; ++i) (*s)->Record(static_cast<uint64_t>(latency.count()));
      clock_.Advance(seconds(1));
      plane_->loop().Tick();
    }
  }

  ApiResponse Get(std::string_view target) {
    ApiRequest r;
    r.method = "GET";
    r.target = target;
    r.host = "127.0.0.1";
    return plane_->api().Handle(r);
  }

  std::filesystem::path dir_;
  FakeClock clock_;
  Registry registry_{clock_};
  std::unique_ptr<ControlPlane> plane_;
};

TEST_F(ControlPlaneTest, AnalysesARegistryAndAnswersItsApiWithoutAGateway) {
  Create(/*with_store=*/false);
  Run(5, milliseconds(20));
  ApiResponse r = Get("/api/v1/series");
  ASSERT_EQ(r.status, 200) << r.body;
  const json series = json::parse(r.body)["series"];
  ASSERT_EQ(series.size(), 1u) << r.body;
  EXPECT_EQ(series[0]["labels"]["route"], "fraud");
  EXPECT_EQ(series[0]["unit"], "seconds");
  EXPECT_EQ(series[0]["kind"], "histogram");
  // A gauge is listed in its unit, with its level's statistics.
  Series* queued = *registry_.Gauge("queue_depth", {{"route", "fraud"}}, Unit::kCount);
  queued->Set(12);
  Run(2, milliseconds(20));
  r = Get("/api/v1/series?match=" + std::string("{__name__=\"queue_depth\"}"));
  ASSERT_EQ(r.status, 200) << r.body;
  const json gauges = json::parse(r.body)["series"];
  ASSERT_EQ(gauges.size(), 1u) << r.body;
  EXPECT_EQ(gauges[0]["unit"], "count");
  EXPECT_EQ(gauges[0]["kind"], "gauge");
  EXPECT_EQ(gauges[0]["p99"], 12);
  r = Get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("tailguard_analysis_ticks_total 7"));
  EXPECT_THAT(r.body, HasSubstr("tailguard_request_duration_seconds_bucket{"));
  // No data plane: no gateway or upstream families, and ready.
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("tailguard_upstream_up")));
  EXPECT_EQ(Get("/readyz").status, 200);
  EXPECT_EQ(Get("/healthz").status, 200);
}

TEST_F(ControlPlaneTest, AlertsLandInItsStoreAndItsApi) {
  Create(/*with_store=*/true);
  Run(3, milliseconds(20));
  EXPECT_EQ(json::parse(Get("/api/v1/alerts").body)["alerts"].size(), 0u);
  Run(5, milliseconds(400));
  const json page = json::parse(Get("/api/v1/alerts").body);
  const json& alerts = page["alerts"];
  ASSERT_EQ(alerts.size(), 1u) << page.dump();
  EXPECT_EQ(alerts[0]["rule"], "p99_over_100ms");
  EXPECT_EQ(alerts[0]["state"], "alert");
  // The episode is in the store.
  ASSERT_NE(plane_->store(), nullptr);
  ASSERT_EQ(page["episodes"].size(), 1u) << page.dump();
  const json events = json::parse(Get("/api/v1/events").body)["events"];
  size_t transitions = 0;
  for (const json& e : events) transitions += e["type"] == "alert" ? 1 : 0;
  EXPECT_GE(transitions, 2u) << "pre-alert and fire: " << events.dump();
  // A second control plane on the same store is refused while this one holds it.
  ControlPlaneOptions second;
  second.config.store.path = (dir_ / "tailguard.db").string();
  second.registry = &registry_;
  second.log = nullptr;
  absl::StatusOr<std::unique_ptr<ControlPlane>> other = ControlPlane::Create(std::move(second));
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("is in use by another tailguard"));
}

// The outbox's oldest pending message ages on the control plane's clock, not the host's: on a
// fake clock an hour later it is an hour old (it read the real clock, and a test saw decades).
TEST_F(ControlPlaneTest, TheOutboxAgesOnTheInjectedClock) {
  absl::StatusOr<AlertConfig> rules = ParseAlertConfig(R"(
route:
  receiver: hook
  group_wait: 0s
receivers:
  - name: hook
    webhook: {url: "http://127.0.0.1:9/hook"}
rules:
  - name: p99_over_100ms
    select: '{stage="total"}'
    stat: p99
    tiers:
      - above: 100ms
        severity: critical
)");
  ASSERT_TRUE(rules.ok()) << rules.status();
  Create(/*with_store=*/true, *rules);  // delivery is not started: the message stays pending
  Run(3, milliseconds(20));
  Run(60, milliseconds(400));
  const std::string before = Get("/metrics").body;
  ASSERT_THAT(before,
              HasSubstr("tailguard_outbox_messages{receiver=\"hook\",state=\"pending\"} 1"));
  clock_.Advance(std::chrono::hours(1));
  const std::string after = Get("/metrics").body;
  const std::string name = "\ntailguard_outbox_oldest_pending_age_seconds ";
  const size_t at = after.find(name);
  ASSERT_NE(at, std::string::npos) << after;
  const double age = std::stod(after.substr(at + name.size()));
  EXPECT_GE(age, 3600);
  EXPECT_LT(age, 3600 + 120);
}

// The live diagnosis end to end: a feature fetch that slows down makes the route's total alert;
// the diagnosis names the stage, is stored with the episode, answers the API, and rides in the
// webhook's message as the "diagnosis" annotation.
TEST_F(ControlPlaneTest, EveryAlertIsDiagnosedStoredAndSent) {
  absl::StatusOr<AlertConfig> rules = ParseAlertConfig(R"(
route:
  receiver: hook
  group_wait: 0s
receivers:
  - name: hook
    webhook: {url: "http://127.0.0.1:9/hook"}
rules:
  - name: p99_over_100ms
    select: '{stage="total"}'
    stat: p99
    tiers:
      - above: 100ms
        severity: critical
)");
  ASSERT_TRUE(rules.ok()) << rules.status();
  Create(/*with_store=*/true, *rules);
  const Labels route = {{"model", "risk"}, {"version", "1"}, {"route", "fraud"}};
  auto stage = [&](const char* name) {
    Labels l = route;
    l.emplace_back("stage", name);
    return *registry_.GetOrCreate(kRequestDurationMetric, l);
  };
  Series* total = stage("total");
  Series* feature = stage("feature_fetch");
  Series* inference = stage("inference");
  auto run = [&](int ticks, int feature_ms) {
    for (int t = 0; t < ticks; ++t) {
      for (int i = 0; i < 20; ++i) {
        const int f = feature_ms + i % 3;  // a little spread, as real timings have
        feature->Record(static_cast<uint64_t>(f) * 1'000'000);
        inference->Record(static_cast<uint64_t>(10 + i % 2) * 1'000'000);
        total->Record(static_cast<uint64_t>(f + 12) * 1'000'000);
      }
      clock_.Advance(seconds(1));
      plane_->loop().Tick();
    }
  };
  run(120, 5);
  run(60, 150);  // the default debounce fires after 30 s
  const json alerts = json::parse(Get("/api/v1/alerts").body)["episodes"];
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump();
  const int64_t id = alerts[0]["id"];
  ApiResponse r = Get(Cat("/api/v1/alerts/", id, "/diagnosis"));
  ASSERT_EQ(r.status, 200) << r.body;
  const json d = json::parse(r.body)["diagnosis"];
  ASSERT_TRUE(d.is_object()) << r.body;
  EXPECT_EQ(d["quadrant"], "dependency");
  EXPECT_THAT(d["summary"].get<std::string>(), HasSubstr("stage=\"feature_fetch\""));
  ASSERT_FALSE(d["causes"].empty());
  const json& top = d["causes"][0];
  EXPECT_EQ(top["rank"], 1);
  EXPECT_EQ(top["kind"], "cause");
  EXPECT_GT(top["explained"].get<double>(), 0.8);
  EXPECT_FALSE(top["points"].empty());
  EXPECT_EQ(top["unit"], "seconds");  // how the dashboard formats its values
  for (const json& c : d["causes"]) {
    const std::string key = c["series"];
    if (key.starts_with("tailguard_request_rate")) {
      EXPECT_EQ(c["unit"], "count") << key;
    }
  }
  EXPECT_LT(d["seconds"].get<double>(), 2.0);
  // In the timeline, and in the webhook's body.
  bool in_timeline = false;
  const json events = json::parse(Get("/api/v1/events?limit=10000").body)["events"];
  for (const json& e : events) {
    in_timeline |= e["type"] == "diagnosis" && e["kind"] == "dependency";
  }
  EXPECT_TRUE(in_timeline) << events.dump();
  absl::StatusOr<std::vector<store::OutboxItem>> outbox = plane_->store()->ListOutbox({});
  ASSERT_TRUE(outbox.ok()) << outbox.status();
  ASSERT_FALSE(outbox->empty());
  EXPECT_THAT(outbox->front().body, HasSubstr("\"diagnosis\":\"dependency: "));
  // Errors: not an id, an unknown one.
  EXPECT_EQ(Get("/api/v1/alerts/x/diagnosis").status, 400);
  EXPECT_EQ(Get(Cat("/api/v1/alerts/", id + 100, "/diagnosis")).status, 404);
}

TEST_F(ControlPlaneTest, ARegistryIsNeeded) {
  ControlPlaneOptions options;
  options.log = nullptr;
  absl::StatusOr<std::unique_ptr<ControlPlane>> c = ControlPlane::Create(std::move(options));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("a registry to analyse is needed"));
}

}  // namespace
}  // namespace tailguard::server
