// SaveState / RestoreState: a restarted engine does exactly what one that never stopped does;
// a damaged state is refused cleanly; a changed configuration keeps what still applies.
#include "alert/state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "alert_test_util.h"
#include "common/encoding.h"
#include "common/strings.h"

namespace tailguard {
namespace {

using alert_test::hours;
using alert_test::kMetric;
using alert_test::minutes;
using alert_test::P99;
using alert_test::seconds;
using alert_test::T0;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Str(const Labels& labels) {
  std::string out;
  for (const auto& [n, v] : labels) out += Cat(n, '=', v, ',');
  return out;
}

std::string Num(double v) { return std::isnan(v) ? "nan" : Cat(v); }

std::string Str(const AlertEvent& e) {
  return Cat(e.time.time_since_epoch().count(), " ", AlertEventKindName(e.kind), " ", e.rule, " ",
             e.series, " ", e.from_tier, "->", e.to_tier, " ", e.severity, " ", Num(e.value), " ",
             Num(e.threshold), " ", e.breach_start.time_since_epoch().count(), " ", e.schedule);
}

std::string Str(const NotifiedAlert& a) {
  return Cat(a.rule, " ", a.series, " ", Str(a.labels), " ", NotifyStatusName(a.status), " ",
             a.tier, " ", a.severity, " ", Num(a.value), " ", Num(a.threshold), " ",
             a.starts_at.time_since_epoch().count(), " ", a.ends_at.time_since_epoch().count());
}

std::string Str(const Notification& n) {
  std::string out =
      Cat(n.time.time_since_epoch().count(), " ", n.receiver, " ", n.route, " ", n.group_key, " ",
          NotifyStatusName(n.status), " ", n.sequence, " ", n.repeat, " ", n.idempotency_key, " [");
  for (const NotifiedAlert& a : n.alerts) out += Str(a) + "; ";
  return out + "]";
}

std::string Str(const MutedAlert& m) {
  return Cat(m.time.time_since_epoch().count(), " ", m.rule, " ", m.series, " ", m.reason, " ",
             m.detail);
}

// Everything a sink heard, in order, as text.
class RecordingSink final : public AlertSink {
 public:
  void OnEvent(const AlertEvent& e) override { log.push_back("event " + Str(e)); }
  void OnNotification(const Notification& n) override { log.push_back("notify " + Str(n)); }
  void OnMuted(const MutedAlert& m) override { log.push_back("muted " + Str(m)); }
  std::vector<std::string> log;
};

// Silences model="m3" from 300 s to 450 s.
class WindowMuter final : public AlertMuter {
 public:
  bool Silenced(LabelSpan labels, WallTime t) const override {
    if (t < T0() + seconds(300) || t >= T0() + seconds(450)) return false;
    for (const auto& [n, v] : labels) {
      if (n == "model" && v == "m3") return true;
    }
    return false;
  }
};

// Routes, inhibition, a maintenance window, silences, staleness, escalation: every piece of
// state the engine keeps is exercised within 25 minutes.
constexpr std::string_view kConfig = R"(
stale_after: 1m
route:
  group_by: [alertname, model]
  group_wait: 5s
  group_interval: 20s
  repeat_interval: 2m
  routes:
    - matchers: ['severity="emergency"']
      receiver: lead
      continue: true
    - matchers: ['model="m2"']
      receiver: m2team
      group_by: ['...']
schedules:
  - {name: maint, from: "2025-11-05 00:08", to: "2025-11-05 00:10"}
maintenance: [maint]
rules:
  - name: risk
    debounce: {pre_alert_after: 2, alert_after: 5s, resolve_after: 15s}
  - name: errors
    stat: error_ratio
    tiers:
      - {above: 0.05, severity: warning, receivers: [wecom]}
      - {above: 0.2, severity: critical, receivers: [sms]}
    debounce: {pre_alert_after: 2, alert_after: 5s, resolve_after: 15s}
)";

constexpr int kSteps = 1500;

// The observations of second `i`.
void Step(AlertEngine& engine, int i) {
  const WallTime t = T0() + seconds(i);
  const Labels m1 = {{"model", "m1"}, {"stage", "total"}};
  const Labels m2 = {{"model", "m2"}, {"stage", "total"}};
  const Labels m3 = {{"model", "m3"}, {"stage", "total"}};
  // m1 climbs the tiers and comes back every 400 s.
  const int phase = i % 400;
  const double p1 = phase < 100 ? 0.115 : phase < 200 ? 0.135 : phase < 250 ? 0.16 : 0.09;
  Observation o1 = P99(t, m1, p1);
  o1.error_ratio = phase >= 150 && phase < 300 ? 0.1 : 0.0;
  engine.Observe(o1);
  // m2: a minute bad, 20 s good, with single good seconds inside the bad minute.
  const bool bad = (i / 20) % 4 != 0 && i % 17 != 0;
  engine.Observe(P99(t, m2, bad ? 0.2 : 0.1));
  // m3 breaches from 50 s and stops reporting at 500 s (stale, then resolved); back at 900 s.
  if (i < 500 || i >= 900) {
    Observation o3 = P99(t, m3, i >= 50 ? 0.3 : 0.1);
    o3.error_ratio = i >= 60 && i < 500 ? 0.5 : 0.0;
    engine.Observe(o3);
  }
  if (i % 3 == 0) engine.Advance(t);
}

std::unique_ptr<AlertEngine> MakeEngine(AlertSink& sink, const AlertMuter* muter,
                                        std::string_view yaml = kConfig) {
  absl::StatusOr<AlertConfig> config = ParseAlertConfig(yaml, "state.yaml");
  EXPECT_TRUE(config.ok()) << config.status();
  auto engine = AlertEngine::Create(*config, sink, muter);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return *std::move(engine);
}

TEST(AlertStateTest, ARestartedEngineDoesExactlyWhatAnUninterruptedOneDoes) {
  WindowMuter muter;
  RecordingSink a_sink;
  auto a = MakeEngine(a_sink, &muter);
  for (int i = 0; i < kSteps; ++i) Step(*a, i);
  // The script must exercise what it is meant to.
  const auto count = [&](std::string_view what) {
    int n = 0;
    for (const std::string& line : a_sink.log) n += line.find(what) != std::string::npos;
    return n;
  };
  ASSERT_GT(count("event "), 30);
  ASSERT_GT(count("notify "), 30);
  ASSERT_GT(count(" escalate "), 2);
  ASSERT_GT(count(" lead "), 1);
  ASSERT_GT(count(" m2team "), 1);
  ASSERT_GT(count(" inhibit "), 0);
  ASSERT_GT(count(" silence"), 0);
  ASSERT_GT(count(" maintenance "), 0);

  for (int split : {1, 7, 58, 137, 301, 449, 520, 777, 905, 1100, 1499}) {
    SCOPED_TRACE(Cat("split at ", split, " s"));
    RecordingSink sink;
    auto b = MakeEngine(sink, &muter);
    for (int i = 0; i < split; ++i) Step(*b, i);
    const std::string state = b->SaveState();
    b.reset();
    auto c = MakeEngine(sink, &muter);
    ASSERT_TRUE(c->RestoreState(state).ok());
    EXPECT_EQ(c->SaveState(), state);  // restoring loses nothing
    for (int i = split; i < kSteps; ++i) Step(*c, i);
    ASSERT_EQ(sink.log.size(), a_sink.log.size());
    for (size_t k = 0; k < sink.log.size(); ++k) ASSERT_EQ(sink.log[k], a_sink.log[k]) << k;
    // (The states may differ in bytes: an idle machine is not saved, and comes back new.)
    const auto active = [](const AlertEngine& e) {
      std::vector<std::string> out;
      for (const ActiveAlert& x : e.ActiveAlerts()) {
        out.push_back(Cat(x.rule, " ", x.series, " ", AlertStateName(x.state), " ", x.tier, " ",
                          x.since.time_since_epoch().count()));
      }
      return out;
    };
    EXPECT_EQ(active(*c), active(*a));
  }
}

class RestoreTest : public ::testing::Test {
 protected:
  void Load(std::string_view yaml) {
    absl::StatusOr<AlertConfig> config = ParseAlertConfig(yaml, "r.yaml");
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *config;
    Restart();
  }
  // A new engine (same configuration unless given), empty.
  void Restart() {
    sink_.Clear();
    auto engine = AlertEngine::Create(config_, sink_);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }
  // Saves, restarts, restores.
  void SaveAndRestart(std::optional<std::string_view> new_yaml = std::nullopt) {
    const std::string state = engine_->SaveState();
    if (new_yaml) {
      Load(*new_yaml);
    } else {
      Restart();
    }
    const absl::Status s = engine_->RestoreState(state);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_TRUE(sink_.events.empty());
    EXPECT_TRUE(sink_.notifications.empty());
  }

  AlertConfig config_;
  CollectingAlertSink sink_;
  std::unique_ptr<AlertEngine> engine_;
  Labels a_ = {{"model", "m1"}};
  Labels b_ = {{"model", "m2"}};
};

constexpr std::string_view kSlow = R"(
stale_after: 0s
rules:
  - name: slow
    above: 200ms
    receivers: [wecom]
  - name: other
    above: 250ms
    receivers: [wecom]
)";

TEST_F(RestoreTest, ARestoredActiveAlertDoesNotFireAgain) {
  Load(kSlow);
  for (int s = 0; s <= 60; ++s) engine_->Observe(P99(T0() + seconds(s), a_, 0.220));
  engine_->Advance(T0() + seconds(60));
  ASSERT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kFire), 1);
  ASSERT_EQ(sink_.notifications.size(), 1u);
  const std::string key = sink_.notifications[0].idempotency_key;
  SaveAndRestart();
  ASSERT_EQ(engine_->ActiveAlerts().size(), 1u);
  EXPECT_EQ(engine_->ActiveAlerts()[0].state, AlertState::kAlert);
  EXPECT_EQ(engine_->ActiveAlerts()[0].since, T0() + seconds(30));
  EXPECT_EQ(engine_->StateOf("slow", kMetric, a_), AlertState::kAlert);
  // Still breaching for five hours: no event, one repeat at 4 h with the next sequence.
  for (int s = 61; s <= 5 * 3600; s += 10) engine_->Observe(P99(T0() + seconds(s), a_, 0.220));
  EXPECT_TRUE(sink_.events.empty());
  ASSERT_EQ(sink_.notifications.size(), 1u);
  EXPECT_TRUE(sink_.notifications[0].repeat);
  EXPECT_EQ(sink_.notifications[0].sequence, 2u);
  EXPECT_NE(sink_.notifications[0].idempotency_key, key);
  // It ends: one resolve, one resolved message.
  for (int s = 5 * 3600; s <= 5 * 3600 + 600; s += 10) {
    engine_->Observe(P99(T0() + seconds(s + 1), a_, 0.1));
  }
  EXPECT_EQ(alert_test::Kinds(sink_.events), std::vector<AlertEventKind>{AlertEventKind::kResolve});
  EXPECT_EQ(sink_.notifications.back().status, NotifyStatus::kResolved);
}

TEST_F(RestoreTest, APendingNotificationComesOutOnce) {
  Load(R"(
stale_after: 0s
rules:
  - name: slow
    above: 200ms
    receivers: [wecom]
    debounce: {pre_alert_after: 1, alert_after: 0s}
)");
  engine_->Observe(P99(T0(), a_, 0.3));
  engine_->Advance(T0() + seconds(10));
  ASSERT_TRUE(sink_.notifications.empty());  // due at 30 s
  SaveAndRestart();
  engine_->Advance(T0() + seconds(29));
  EXPECT_TRUE(sink_.notifications.empty());
  engine_->Advance(T0() + minutes(3));
  ASSERT_EQ(sink_.notifications.size(), 1u);
  const Notification& n = sink_.notifications[0];
  EXPECT_EQ(n.time, T0() + seconds(30));
  EXPECT_EQ(n.sequence, 1u);
  EXPECT_EQ(n.idempotency_key,
            Cat("wecom|{alertname=\"slow\"}|", T0().time_since_epoch().count(), "|1"));
  EXPECT_TRUE(sink_.events.empty());
}

TEST_F(RestoreTest, ABreachBeingCountedIsKept) {
  Load(kSlow);  // pre_alert_after 3
  engine_->Observe(P99(T0(), a_, 0.3));
  engine_->Observe(P99(T0() + seconds(1), a_, 0.3));
  SaveAndRestart();
  engine_->Observe(P99(T0() + seconds(2), a_, 0.3));
  EXPECT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kPreAlert), 2);  // both rules
  // An old observation is still recognised as one.
  engine_->Observe(P99(T0() + seconds(1), a_, 0.3));
  EXPECT_EQ(engine_->stats().out_of_order, 1u);
}

TEST_F(RestoreTest, AlertsOfARemovedRuleShowAsResolved) {
  Load(R"(
stale_after: 0s
route: {group_by: [model]}
rules:
  - {name: slow, above: 200ms, receivers: [wecom], debounce: {pre_alert_after: 1, alert_after: 0s}}
  - {name: other, above: 250ms, receivers: [wecom], debounce: {pre_alert_after: 1, alert_after: 0s}}
)");
  engine_->Observe(P99(T0(), a_, 0.3));
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(sink_.notifications.size(), 1u);
  ASSERT_EQ(sink_.notifications[0].alerts.size(), 2u);
  SaveAndRestart(R"(
stale_after: 0s
route: {group_by: [model]}
rules:
  - {name: slow, above: 200ms, receivers: [wecom], debounce: {pre_alert_after: 1, alert_after: 0s}}
)");
  ASSERT_EQ(engine_->ActiveAlerts().size(), 1u);
  EXPECT_EQ(engine_->ActiveAlerts()[0].rule, "slow");
  engine_->Advance(T0() + minutes(5) + seconds(30));
  ASSERT_EQ(sink_.notifications.size(), 1u);
  const Notification& n = sink_.notifications[0];
  EXPECT_EQ(n.sequence, 2u);
  ASSERT_EQ(n.alerts.size(), 2u);
  EXPECT_EQ(n.alerts[0].rule, "slow");
  EXPECT_EQ(n.alerts[1].rule, "other");
  EXPECT_EQ(n.alerts[1].status, NotifyStatus::kResolved);
  EXPECT_EQ(n.alerts[1].ends_at, T0());
}

TEST_F(RestoreTest, GroupsOfRemovedReceiversAndRoutesAreDropped) {
  Load(R"(
stale_after: 0s
route:
  routes:
    - {matchers: ['model="m1"'], receiver: team}
rules:
  - {name: slow, above: 200ms, receivers: [wecom], debounce: {pre_alert_after: 1, alert_after: 0s}}
)");
  engine_->Observe(P99(T0(), a_, 0.3));
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(sink_.notifications.size(), 2u);
  // The route and the wecom receiver are gone; the alert now goes to sms, a new group.
  SaveAndRestart(R"(
stale_after: 0s
rules:
  - {name: slow, above: 200ms, receivers: [sms], debounce: {pre_alert_after: 1, alert_after: 0s}}
)");
  engine_->Advance(T0() + hours(5));
  ASSERT_EQ(sink_.notifications.size(), 2u);  // sms at +30 s of its group, and a repeat
  for (const Notification& n : sink_.notifications) EXPECT_EQ(n.receiver, "sms");
  EXPECT_EQ(sink_.notifications[0].sequence, 1u);
}

TEST_F(RestoreTest, SeriesTheRuleNoLongerSelectsAreDropped) {
  Load(kSlow);
  for (int s = 0; s <= 40; ++s) engine_->Observe(P99(T0() + seconds(s), a_, 0.3));
  ASSERT_EQ(engine_->ActiveAlerts().size(), 2u);
  SaveAndRestart(R"(
stale_after: 0s
rules:
  - {name: slow, select: '{model="m2"}', above: 200ms, receivers: [wecom]}
  - {name: other, above: 250ms, receivers: [wecom]}
)");
  ASSERT_EQ(engine_->ActiveAlerts().size(), 1u);
  EXPECT_EQ(engine_->ActiveAlerts()[0].rule, "other");
}

// A state from the middle of a busy run: series, machines, live alerts, groups.
std::string BusyState() {
  WindowMuter muter;
  RecordingSink sink;
  auto engine = MakeEngine(sink, &muter);
  for (int i = 0; i < 320; ++i) Step(*engine, i);
  return engine->SaveState();
}

// An alert on a size keeps its unit through a restart: the restored alert, its no-data event
// when the series goes quiet, and the resolved message after it all say bytes.
constexpr std::string_view kWideInputs = R"(
stale_after: 30s
rules:
  - name: wide_inputs
    above: 20000
    receivers: [wecom]
)";

Observation Bytes(WallTime t, const Labels& labels, double v) {
  Observation o = P99(t, labels, v);
  o.unit = Unit::kBytes;
  return o;
}

TEST_F(RestoreTest, AnAlertKeepsItsSeriesUnit) {
  Load(kWideInputs);
  for (int s = 0; s <= 60; ++s) engine_->Observe(Bytes(T0() + seconds(s), a_, 40000));
  engine_->Advance(T0() + seconds(60));
  ASSERT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kFire), 1);
  for (const AlertEvent& e : sink_.events) EXPECT_EQ(e.unit, Unit::kBytes);
  ASSERT_EQ(sink_.notifications.size(), 1u);
  ASSERT_EQ(sink_.notifications[0].alerts.size(), 1u);
  EXPECT_EQ(sink_.notifications[0].alerts[0].unit, Unit::kBytes);
  SaveAndRestart();
  // Restored with its series, before the series says anything again.
  ASSERT_EQ(engine_->ActiveAlerts().size(), 1u);
  EXPECT_EQ(engine_->ActiveAlerts()[0].unit, Unit::kBytes);
  // The series goes quiet: the alert holds for want of data, in bytes still.
  engine_->Advance(T0() + seconds(120));
  ASSERT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kNoData), 1);
  for (const AlertEvent& e : sink_.events) EXPECT_EQ(e.unit, Unit::kBytes);
  // It comes back small: resolved, and the message says bytes.
  for (int s = 121; s <= 800; s += 10) engine_->Observe(Bytes(T0() + seconds(s), a_, 1000));
  ASSERT_FALSE(sink_.notifications.empty());
  EXPECT_EQ(sink_.notifications.back().status, NotifyStatus::kResolved);
  EXPECT_EQ(sink_.notifications.back().alerts[0].unit, Unit::kBytes);
}

// A state saved by the previous version (1, without units) restores, its alerts as latencies;
// the same state as this version writes it keeps the unit.
TEST_F(RestoreTest, AVersionOneStateRestores) {
  Load(kWideInputs);
  for (int s = 0; s <= 60; ++s) engine_->Observe(Bytes(T0() + seconds(s), a_, 40000));
  ASSERT_EQ(engine_->ActiveAlerts().size(), 1u);
  const std::string v2 = engine_->SaveState();
  absl::StatusOr<alert_internal::SavedState> saved = alert_internal::DecodeState(v2);
  ASSERT_TRUE(saved.ok()) << saved.status();
  const std::string v1 = alert_internal::EncodeState(*saved, 1);
  ASSERT_LT(v1.size(), v2.size());
  Restart();
  absl::Status s = engine_->RestoreState(v1);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(engine_->ActiveAlerts().size(), 1u);
  EXPECT_EQ(engine_->ActiveAlerts()[0].state, AlertState::kAlert);
  EXPECT_EQ(engine_->ActiveAlerts()[0].unit, Unit::kNanoseconds);
  Restart();
  s = engine_->RestoreState(v2);
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(engine_->ActiveAlerts().size(), 1u);
  EXPECT_EQ(engine_->ActiveAlerts()[0].unit, Unit::kBytes);
}

TEST(AlertStateCorruptionTest, EveryTruncationIsRefused) {
  const std::string state = BusyState();
  ASSERT_GT(state.size(), 500u);
  WindowMuter muter;
  RecordingSink sink;
  auto engine = MakeEngine(sink, &muter);
  for (size_t n = 0; n < state.size(); ++n) {
    const absl::Status s = engine->RestoreState(std::string_view(state).substr(0, n));
    ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << n;
    ASSERT_THAT(std::string(s.message()), StartsWith("alert state: ")) << n;
    ASSERT_TRUE(engine->ActiveAlerts().empty()) << n;
  }
  EXPECT_TRUE(engine->RestoreState(state).ok());
  EXPECT_FALSE(engine->ActiveAlerts().empty());
  // A failed restore leaves the engine empty, not half-restored.
  EXPECT_FALSE(engine->RestoreState("garbage").ok());
  EXPECT_TRUE(engine->ActiveAlerts().empty());
  EXPECT_TRUE(sink.log.empty());
}

TEST(AlertStateCorruptionTest, EveryFlippedByteIsRefused) {
  const std::string state = BusyState();
  RecordingSink sink;
  auto engine = MakeEngine(sink, nullptr);
  for (size_t i = 0; i < state.size(); ++i) {
    std::string bad = state;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    ASSERT_FALSE(engine->RestoreState(bad).ok()) << i;
  }
}

TEST(AlertStateCorruptionTest, GarbageIsRefusedAndNeverCrashes) {
  std::mt19937_64 rng(20251105);
  RecordingSink sink;
  auto engine = MakeEngine(sink, nullptr);
  for (int round = 0; round < 3000; ++round) {
    std::string bytes(rng() % 300, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    if (round % 2 == 1) {
      // A valid header and checksum around random bytes: the parser itself must cope.
      std::string framed = "TGAS";
      encoding::PutVarint(framed, 1);
      framed += bytes;
      encoding::PutFixed32(framed, encoding::Crc32(framed));
      bytes = framed;
    }
    const absl::Status s = engine->RestoreState(bytes);
    if (s.ok()) {
      // Whatever it accepted, the engine keeps working.
      engine->Observe(P99(T0(), {{"model", "m1"}}, 0.3));
      engine->Advance(T0() + minutes(1));
    } else {
      ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST(AlertStateCorruptionTest, MutatedStatesWithAGoodChecksumAreHandled) {
  // Behind a valid checksum: whatever is accepted saves and restores to the same state.
  const std::string state = BusyState();
  std::mt19937_64 rng(7);
  RecordingSink sink;
  WindowMuter muter;
  auto engine = MakeEngine(sink, &muter);
  int accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = state.substr(0, state.size() - 4);
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      bytes[5 + rng() % (bytes.size() - 5)] = static_cast<char>(rng());
    }
    encoding::PutFixed32(bytes, encoding::Crc32(bytes));
    const absl::Status s = engine->RestoreState(bytes);
    if (!s.ok()) {
      ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      ASSERT_TRUE(engine->ActiveAlerts().empty());
      continue;
    }
    ++accepted;
    const std::string saved = engine->SaveState();
    ASSERT_TRUE(engine->RestoreState(saved).ok());
    ASSERT_EQ(engine->SaveState(), saved) << round;
  }
  EXPECT_GT(accepted, 100);  // the mutations reach past the parser
  EXPECT_TRUE(sink.log.empty());
}

TEST(AlertStateCorruptionTest, AHugeLengthIsRefusedWithoutAllocating) {
  std::string bytes = "TGAS";
  encoding::PutVarint(bytes, 1);
  encoding::PutVarint(bytes, 0);                  // next stale check
  encoding::PutVarint(bytes, uint64_t{1} << 60);  // series count
  encoding::PutFixed32(bytes, encoding::Crc32(bytes));
  RecordingSink sink;
  auto engine = MakeEngine(sink, nullptr);
  const absl::Status s = engine->RestoreState(bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("list longer than the input"));

  std::string version3 = "TGAS";
  encoding::PutVarint(version3, 3);
  encoding::PutFixed32(version3, encoding::Crc32(version3));
  EXPECT_EQ(std::string(engine->RestoreState(version3).message()),
            "alert state: unknown version 3 (this build reads 1 to 2)");
  EXPECT_EQ(std::string(engine->RestoreState("{\"json\": 1}").message()),
            "alert state: not an alert engine state");
}

}  // namespace
}  // namespace tailguard
