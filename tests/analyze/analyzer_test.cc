// The one analyzer: live (a registry on a fake clock, read by RegistrySource, and the LiveLoop
// that drives it) and offline (the same requests as a request log) give the same events byte for
// byte: alert transitions, notifications, anomalies, drift and actions. And the fan-out: every
// subscriber in order, actions carried out by the actuator without a store.
#include "tailguard/analyzer.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "analyze/request_log.h"
#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/live_loop.h"

namespace tailguard {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

std::string Num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string Time(WallTime t) { return std::to_string(t.time_since_epoch().count()); }

// Every finding as one line, all fields that matter, doubles in full precision.
class Recorder final : public Subscriber {
 public:
  void OnAlertEvent(const AlertEvent& e) override {
    lines.push_back(Cat("alert ", Time(e.time), " ", AlertEventKindName(e.kind), " ", e.rule, " ",
                        e.series, " ", e.severity, " tier ", e.from_tier, "->", e.to_tier,
                        " value ", Num(e.value), " threshold ", Num(e.threshold), " baseline ",
                        Num(e.baseline_p99)));
  }
  void OnNotification(const Notification& n) override {
    std::string alerts;
    for (const NotifiedAlert& a : n.alerts) alerts += Cat(" ", a.rule, "@", a.series);
    lines.push_back(Cat("notify ", Time(n.time), " ", n.receiver, " ", NotifyStatusName(n.status),
                        " ", n.group_key, " #", n.sequence, alerts));
  }
  void OnMuted(const MutedAlert& m) override {
    lines.push_back(Cat("muted ", Time(m.time), " ", m.rule, " ", m.series, " ", m.reason));
  }
  void OnAnomaly(const AnomalyEvent& a) override {
    lines.push_back(Cat("anomaly ", Time(a.time), " ", a.series, " p99 ", Num(a.p99), " baseline ",
                        Num(a.baseline), " score ", Num(a.score)));
  }
  void OnDrift(const DriftEvent& d) override {
    lines.push_back(Cat("drift ", Time(d.time), " ", d.series, " ", d.drifting ? "began" : "ended",
                        " ", Num(d.finding.pct_per_week), " z ", Num(d.finding.z), " since ",
                        Time(d.finding.since)));
  }
  void OnAction(const ActionRecord& a) override {
    lines.push_back(Cat("action ", Time(a.time), " ", a.action, " ",
                        ActionDecisionName(a.outcome.decision), " ", a.cause.series, " ",
                        a.outcome.detail));
  }
  size_t Count(std::string_view prefix) const {
    size_t n = 0;
    for (const std::string& l : lines) n += l.starts_with(prefix);
    return n;
  }
  std::vector<std::string> lines;
};

// One request of the recorded data.
struct Request {
  WallTime time;
  uint64_t total_ns;
  uint64_t inference_ns;
  int status;
};

constexpr int kMinutes = 40;
const WallTime kStart = WallTime(std::chrono::hours(24 * 20454));  // a minute boundary, 2026

// 40 minutes at 20 requests a second: a P99 around 10 ms rising 1 % a minute from minute 3 (a
// drift), a spike to about 40 ms in minutes 25 and 26 (an anomaly and a tier alert), and 10 %
// of requests failing with 503 in minute 30 (an error-ratio alert), and 10 % 404s all along (no
// alert: a 4xx is the client's). Deterministic.
std::vector<Request> Data() {
  std::vector<Request> out;
  uint64_t rng = 88172645463325252ull;
  auto next = [&] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return static_cast<double>(rng >> 11) / static_cast<double>(uint64_t{1} << 53);
  };
  for (int s = 0; s < kMinutes * 60; ++s) {
    const double minute = s / 60.0;
    double level = 10e6 * (minute > 3 ? 1 + 0.01 * (minute - 3) : 1);
    if (minute >= 25 && minute < 27) level *= 4;
    for (int i = 0; i < 20; ++i) {
      const double jitter = 0.8 + 0.4 * next();
      const uint64_t total = static_cast<uint64_t>(level * jitter);
      // 10 % 404s throughout: above the error rule's 5 % if a 4xx counted.
      const int status =
          (minute >= 30 && minute < 31 && i < 2) ? 503 : (i >= 5 && i < 7 ? 404 : 200);
      out.push_back(
          {kStart + seconds(s) + std::chrono::milliseconds(25 * i + 1), total, total / 2, status});
    }
  }
  return out;
}

AlertConfig Rules() {
  AlertConfig c = DefaultAlertRules();
  AlertRule errors;
  errors.name = "errors";
  errors.matchers = {{"stage", LabelMatcher::Op::kEqual, "total"}};
  errors.stat = Statistic::kErrorRatio;
  AlertTier t;
  t.above = Threshold::Absolute(0.05);
  t.severity = "critical";
  errors.tiers = {t};
  c.rules.push_back(errors);
  return c;
}

AnalyzerOptions Options() {
  AnalyzerOptions o;
  o.ensemble.step = seconds(1);
  // Drift in minutes rather than days, so that 40 minutes show one.
  o.drift.bucket = minutes(1);
  o.drift_sample = Duration::zero();
  return o;
}

const Labels kRoute = {{"route", "log"}};

std::vector<std::string> Offline(const std::vector<Request>& data, bool statuses = true) {
  analyze::RequestLog log(std::string(kRequestDurationMetric), kRoute, {"total", "inference"},
                          seconds(1));
  log.set_has_status(statuses);
  for (const Request& r : data) {
    const uint64_t ns[2] = {r.total_ns, r.inference_ns};
    log.Add(r.time, ns, r.status);
  }
  absl::StatusOr<std::unique_ptr<Analyzer>> a = Analyzer::Create(Rules(), Options());
  if (!a.ok()) {
    ADD_FAILURE() << a.status();
    return {};
  }
  Recorder rec;
  (*a)->Subscribe(&rec);
  std::unique_ptr<Source> steps = log.Steps();
  absl::StatusOr<uint64_t> n = (*a)->Run(*steps);
  EXPECT_EQ(n.value_or(0), static_cast<uint64_t>(kMinutes * 60)) << n.status();
  return rec.lines;
}

// The same requests recorded live: a registry on a fake clock with the route's two series; each
// second's requests go into them while the clock is inside that second, then the clock reaches
// its end (where a source or the loop ticks).
struct LiveRoute {
  explicit LiveRoute(const std::vector<Request>& requests)
      : data(requests), clock(kStart), registry(clock) {
    total = Stage("total");
    inference = Stage("inference");
  }
  Series* Stage(const std::string& stage) {
    absl::StatusOr<Series*> s =
        registry.GetOrCreate(kRequestDurationMetric, {{"route", "log"}, {"stage", stage}});
    if (!s.ok()) ADD_FAILURE() << s.status();
    return s.value_or(nullptr);
  }
  bool ok() const { return total != nullptr && inference != nullptr; }

  // Records second `s`'s requests and moves the clock to its end, which it returns.
  WallTime Second(int s) {
    const WallTime end = kStart + seconds(s + 1);
    for (; next < data.size() && data[next].time < end; ++next) {
      const Request& r = data[next];
      if (r.time > clock.WallNow()) clock.Advance(r.time - clock.WallNow());
      total->Record(r.total_ns);
      inference->Record(r.inference_ns);
      ++requests;
      failed += r.status >= 500;
    }
    clock.Advance(end - clock.WallNow());
    return end;
  }

  const std::vector<Request>& data;
  FakeClock clock;
  Registry registry;
  Series* total = nullptr;
  Series* inference = nullptr;
  size_t next = 0;
  uint64_t requests = 0, failed = 0;  // cumulative, as a route's counters
};

std::vector<std::string> Live(const std::vector<Request>& data) {
  LiveRoute live(data);
  if (!live.ok()) return {};
  RegistrySource source(live.registry, seconds(1), [&](const Series& s) {
    return &s == live.total ? std::optional(std::pair{live.requests, live.failed}) : std::nullopt;
  });
  absl::StatusOr<std::unique_ptr<Analyzer>> a = Analyzer::Create(Rules(), Options());
  if (!a.ok()) {
    ADD_FAILURE() << a.status();
    return {};
  }
  Recorder rec;
  (*a)->Subscribe(&rec);
  Batch batch;
  for (int s = 0; s < kMinutes * 60; ++s) {
    const WallTime end = live.Second(s);
    absl::StatusOr<bool> got = source.Next(batch);
    EXPECT_TRUE(got.ok() && *got);
    EXPECT_EQ(batch.time, end);
    (*a)->Analyze(batch);
  }
  return rec.lines;
}

TEST(AnalyzerTest, LiveAndOfflineGiveTheSameEventsOnTheSameData) {
  const std::vector<Request> data = Data();
  const std::vector<std::string> offline = Offline(data);
  const std::vector<std::string> live = Live(data);
  // What the data holds shows: a tier alert and its action, an anomaly, drift, errors.
  Recorder seen;
  seen.lines = offline;
  EXPECT_GE(seen.Count("alert "), 4u);
  EXPECT_GE(seen.Count("anomaly "), 1u);
  EXPECT_GE(seen.Count("drift "), 1u);
  EXPECT_GE(seen.Count("action "), 1u);
  EXPECT_GE(seen.Count("notify "), 1u);
  bool error_alert = false;
  for (const std::string& l : offline) {
    if (!l.starts_with("alert ") || l.find(" errors ") == std::string::npos) continue;
    error_alert = true;
    const int64_t ns = std::stoll(l.substr(6, l.find(' ', 6) - 6));
    EXPECT_GE(WallTime(Duration(ns)), kStart + minutes(30)) << "only the 503s alert: " << l;
  }
  EXPECT_TRUE(error_alert) << "the 503s of minute 30 alert; the 404s do not count";
  EXPECT_EQ(::testing::PrintToString(live), ::testing::PrintToString(offline));
  ASSERT_EQ(live.size(), offline.size());
  for (size_t i = 0; i < live.size(); ++i) EXPECT_EQ(live[i], offline[i]) << "event " << i;
}

// The gateway's loop is a driver of the same analyzer: without route counters (no error ratio)
// it finds what the request log without statuses gives, and shows it on its timeline.
TEST(AnalyzerTest, TheLiveLoopFindsWhatTheOfflineReplayFinds) {
  const std::vector<Request> data = Data();
  const std::vector<std::string> offline = Offline(data, /*statuses=*/false);

  LiveRoute live(data);
  ASSERT_TRUE(live.ok());
  server::LiveLoopOptions options;
  options.window = seconds(1);
  options.analysis = Options();
  absl::StatusOr<std::unique_ptr<server::LiveLoop>> loop =
      server::LiveLoop::Create(live.registry, Rules(), options, nullptr);
  ASSERT_TRUE(loop.ok()) << loop.status();
  Recorder rec;
  (*loop)->Subscribe(&rec);
  for (int s = 0; s < kMinutes * 60; ++s) {
    live.Second(s);
    (*loop)->Tick();
  }
  ASSERT_EQ(rec.lines.size(), offline.size());
  for (size_t k = 0; k < offline.size(); ++k) EXPECT_EQ(rec.lines[k], offline[k]) << "event " << k;

  std::set<std::string> types;
  for (const server::TimelineEvent& e : (*loop)->Events(0, 100000)) types.insert(e.type);
  EXPECT_THAT(types,
              ::testing::IsSupersetOf({"alert", "notification", "anomaly", "drift", "action"}));
}

// An actuator that applies everything, and says so.
class Applier final : public Actuator {
 public:
  ActionOutcome Act(std::string_view action, const AlertEvent& cause) override {
    acted.push_back(Cat(action, " on ", cause.series));
    return {ActionDecision::kApplied, Cat("degraded ", cause.series)};
  }
  std::vector<std::string> acted;
};

// Appends its name to a shared log for every alert event: shows the order of the fan-out.
class Named final : public Subscriber {
 public:
  Named(std::string name, std::vector<std::string>& log) : name_(std::move(name)), log_(log) {}
  void OnAlertEvent(const AlertEvent& e) override {
    log_.push_back(Cat(name_, ":", AlertEventKindName(e.kind)));
  }

 private:
  std::string name_;
  std::vector<std::string>& log_;
};

Batch Point(WallTime t, double p99) {
  Batch b;
  b.time = t;
  SeriesPoint& p = b.points.emplace_back();
  p.metric = std::string(kRequestDurationMetric);
  p.labels = {{"route", "rank"}, {"stage", "total"}};
  p.p99 = p99;  // key left empty: the analyzer makes it
  return b;
}

TEST(AnalyzerTest, ActionsRunWithoutAStoreAndEverySubscriberHearsInOrder) {
  Applier applier;
  AnalyzerOptions o;
  o.actuator = &applier;
  AlertConfig rules = DefaultAlertRules();
  for (AlertRule& r : rules.rules) r.debounce.alert_after = seconds(5);
  absl::StatusOr<std::unique_ptr<Analyzer>> a = Analyzer::Create(rules, o);
  ASSERT_TRUE(a.ok()) << a.status();
  std::vector<std::string> order;
  Named first("first", order), second("second", order);
  Recorder rec;
  (*a)->Subscribe(&first);
  (*a)->Subscribe(&second);
  (*a)->Subscribe(&rec);
  // Ten minutes at 10 ms with a little noise, then 100 ms: every tier breached.
  WallTime t = kStart;
  for (int i = 0; i < 600; ++i, t += seconds(1)) (*a)->Analyze(Point(t, 0.010 + 1e-4 * (i % 7)));
  for (int i = 0; i < 30; ++i, t += seconds(1)) (*a)->Analyze(Point(t, 0.100));

  ASSERT_FALSE(applier.acted.empty()) << "the emergency tier's degrade ran with no store";
  EXPECT_EQ(applier.acted[0],
            "degrade on tailguard_request_duration_seconds{route=\"rank\",stage=\"total\"}");
  EXPECT_EQ(rec.Count("action "), applier.acted.size());
  bool applied = false;
  for (const std::string& l : rec.lines)
    applied = applied || l.find(" applied ") != std::string::npos;
  EXPECT_TRUE(applied);
  ASSERT_GE(order.size(), 2u);
  ASSERT_EQ(order.size() % 2, 0u);
  for (size_t i = 0; i < order.size(); i += 2) {
    EXPECT_TRUE(order[i].starts_with("first:")) << order[i];
    EXPECT_EQ(order[i + 1], "second:" + order[i].substr(6));
  }
  // Without an actuator the action is recorded only.
  absl::StatusOr<std::unique_ptr<Analyzer>> b = Analyzer::Create(rules, {});
  ASSERT_TRUE(b.ok());
  Recorder plain;
  (*b)->Subscribe(&plain);
  t = kStart;
  for (int i = 0; i < 600; ++i, t += seconds(1)) (*b)->Analyze(Point(t, 0.010 + 1e-4 * (i % 7)));
  for (int i = 0; i < 30; ++i, t += seconds(1)) (*b)->Analyze(Point(t, 0.100));
  ASSERT_GE(plain.Count("action "), 1u);
  for (const std::string& l : plain.lines) {
    if (l.starts_with("action ")) {
      EXPECT_THAT(l, HasSubstr(" degrade recorded "));
      EXPECT_THAT(l, HasSubstr("recorded only: no mitigation is installed"));
    }
  }
}

// A missing point is missing, live and offline: no score, no anomaly, a NaN level to the rules.
TEST(AnalyzerTest, AMissingP99IsMissingNotZero) {
  absl::StatusOr<std::unique_ptr<Analyzer>> a = Analyzer::Create(DefaultAlertRules(), {});
  ASSERT_TRUE(a.ok());
  std::vector<PointVerdict> v;
  (*a)->Analyze(Point(kStart, 0.01), &v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_FALSE(std::isnan(v[0].level));
  (*a)->Analyze(Point(kStart + seconds(1), Observation::kMissing), &v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(std::isnan(v[0].level));
  EXPECT_TRUE(std::isnan(v[0].score));
}

// A value series goes through the same analysis as a latency, in its own unit: the points carry
// it, the detectors see its values, an anomaly says which unit its P99 is in, and the default
// rules (on total latency) raise no alert for it.
TEST(AnalyzerTest, ValueSeriesAreAnalysedInTheirUnit) {
  FakeClock clock(kStart);
  Registry registry(clock);
  RegistrySource source(registry, seconds(10));
  Series* size =
      *registry.Values("tailguard_request_input_size", {{"route", "rank"}}, Unit::kCount);
  absl::StatusOr<std::unique_ptr<Analyzer>> a = Analyzer::Create(DefaultAlertRules(), {});
  ASSERT_TRUE(a.ok());
  struct Heard final : Subscriber {
    std::vector<AnomalyEvent> anomalies;
    int alerts = 0;
    void OnAnomaly(const AnomalyEvent& e) override { anomalies.push_back(e); }
    void OnAlertEvent(const AlertEvent&) override { ++alerts; }
  } heard;
  (*a)->Subscribe(&heard);
  Batch batch;
  SeriesPoint last;
  for (int tick = 0; tick < 400; ++tick) {
    // 1000 elements with a little spread, then inputs twenty times wider (a feature service
    // that widened its inputs).
    const uint64_t base = tick < 360 ? 1000 : 20000;
    for (int i = 0; i < 20; ++i) size->Record(base + static_cast<uint64_t>((tick * 7 + i) % 50));
    clock.Advance(seconds(1));
    ASSERT_TRUE(source.Next(batch).ok());
    ASSERT_EQ(batch.points.size(), 1u);
    (*a)->Analyze(batch);
    last = batch.points[0];
  }
  EXPECT_EQ(last.unit, Unit::kCount);
  EXPECT_NEAR(last.p50, 20025, 20025.0 / 128);  // counts, not seconds
  ASSERT_FALSE(heard.anomalies.empty());
  const AnomalyEvent& e = heard.anomalies.back();
  EXPECT_EQ(e.series, size->key());
  EXPECT_EQ(e.unit, Unit::kCount);
  EXPECT_GT(e.p99, 10000);
  EXPECT_GE(e.time, kStart + seconds(360));
  EXPECT_EQ(heard.alerts, 0);
}

// A source ends; Run() stops there, and a source's error comes back as it is.
TEST(AnalyzerTest, RunStopsAtTheEndOfASourceAndReturnsItsError) {
  absl::StatusOr<std::unique_ptr<Analyzer>> a = Analyzer::Create(DefaultAlertRules(), {});
  ASSERT_TRUE(a.ok());
  BatchListSource three(
      {Point(kStart, 0.01), Point(kStart + seconds(1), 0.01), Point(kStart + seconds(2), 0.01)});
  absl::StatusOr<uint64_t> n = (*a)->Run(three);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3u);
  class Broken final : public Source {
    absl::StatusOr<bool> Next(Batch&) override { return absl::UnavailableError("no answer"); }
  } broken;
  EXPECT_EQ((*a)->Run(broken).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tailguard
