// The route tree, receivers of tiers together with matched routes, inhibition, maintenance
// windows and silences, driven through the engine on given time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "alert_test_util.h"
#include "common/strings.h"

namespace tailguard {
namespace {

using alert_test::hours;
using alert_test::minutes;
using alert_test::P99;
using alert_test::seconds;
using alert_test::T0;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// Fires on the first breaching evaluation and resolves on the first clear one; the grouping
// timers are the defaults (30 s, 5 m, 4 h) unless a test says otherwise.
constexpr std::string_view kFast =
    "    debounce: {pre_alert_after: 1, alert_after: 0s, resolve_after: 0s, "
    "deescalate_after: 0s}\n";

std::string Rule(std::string_view name, std::string_view extra) {
  return Cat("  - name: ", name, "\n", extra, kFast);
}

// Silences by one label value over a time range, like the event store's silences.
class FakeMuter final : public AlertMuter {
 public:
  struct Silence {
    std::string name;
    std::string value;
    WallTime from;
    WallTime to;
  };
  bool Silenced(LabelSpan labels, WallTime t) const override {
    for (const Silence& s : silences) {
      if (t < s.from || t >= s.to) continue;
      for (const auto& [name, value] : labels) {
        if (name == s.name && value == s.value) return true;
      }
    }
    return false;
  }
  std::vector<Silence> silences;
};

class RoutingTest : public ::testing::Test {
 protected:
  void Load(const std::string& yaml, const AlertMuter* muter = nullptr) {
    absl::StatusOr<AlertConfig> config = ParseAlertConfig("stale_after: 0s\n" + yaml, "test.yaml");
    ASSERT_TRUE(config.ok()) << config.status();
    sink_.Clear();
    auto engine = AlertEngine::Create(*config, sink_, muter);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }
  void At(WallTime t, const Labels& labels, double p99) { engine_->Observe(P99(t, labels, p99)); }
  const std::vector<Notification>& notes() const { return sink_.notifications; }
  std::vector<std::string> Receivers() const {
    std::vector<std::string> out;
    for (const Notification& n : notes()) out.push_back(n.receiver);
    return out;
  }
  static std::vector<std::string> Rules(const Notification& n) {
    std::vector<std::string> out;
    for (const NotifiedAlert& a : n.alerts) {
      out.push_back(Cat(a.rule, a.status == NotifyStatus::kFiring ? "" : " (resolved)"));
    }
    return out;
  }

  CollectingAlertSink sink_;
  std::unique_ptr<AlertEngine> engine_;
  Labels a_ = {{"model", "m1"}, {"route", "/a"}};
  Labels b_ = {{"model", "m2"}, {"route", "/b"}};
};

TEST_F(RoutingTest, TheDeepestMatchingRouteWins) {
  Load(R"(route:
  routes:
    - matchers: ['team="risk"']
      receiver: risk-oncall
      routes:
        - matchers: ['severity="critical"']
          receiver: risk-pager
rules:
)" + Rule("slow", "    above: 200ms\n    labels: {team: risk}\n") +
       Rule("slowish", "    above: 150ms\n    severity: warning\n    labels: {team: risk}\n") +
       Rule("other", "    above: 250ms\n    severity: warning\n"));
  At(T0(), a_, 0.300);
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(notes().size(), 3u);
  std::map<std::string, const Notification*> by_receiver;
  for (const Notification& n : notes()) by_receiver[n.receiver] = &n;
  ASSERT_EQ(by_receiver.size(), 3u);
  // critical + team=risk: the child; warning + team=risk: the parent itself.
  EXPECT_EQ(by_receiver["risk-pager"]->route, "route.routes[0].routes[0]");
  EXPECT_THAT(Rules(*by_receiver["risk-pager"]), ElementsAre("slow"));
  EXPECT_EQ(by_receiver["risk-pager"]->idempotency_key,
            Cat("risk-pager|route.routes[0].routes[0]|{alertname=\"slow\"}|",
                (T0()).time_since_epoch().count(), "|1"));
  EXPECT_EQ(by_receiver["risk-oncall"]->route, "route.routes[0]");
  EXPECT_THAT(Rules(*by_receiver["risk-oncall"]), ElementsAre("slowish"));
  // No route and no tier receiver: route.receiver, as before.
  EXPECT_EQ(by_receiver["default"]->route, "");
  EXPECT_THAT(Rules(*by_receiver["default"]), ElementsAre("other"));
}

TEST_F(RoutingTest, MatchingStopsAtTheFirstSiblingUnlessItContinues) {
  const std::string rules = "rules:\n" + Rule("slow", "    above: 200ms\n");
  const auto config = [&](std::string_view cont) {
    return Cat("route:\n  routes:\n    - matchers: ['model=\"m1\"']\n      receiver: first\n", cont,
               "    - matchers: ['alertname=\"slow\"']\n      receiver: second\n", rules);
  };
  Load(config(""));
  At(T0(), a_, 0.300);
  At(T0(), b_, 0.300);
  engine_->Advance(T0() + seconds(30));
  EXPECT_THAT(Receivers(), ElementsAre("first", "second"));
  EXPECT_THAT(Rules(notes()[0]), ElementsAre("slow"));
  EXPECT_EQ(notes()[0].alerts[0].labels[1].second, "m1");
  EXPECT_EQ(notes()[1].alerts[0].labels[1].second, "m2");

  Load(config("      continue: true\n"));
  At(T0(), a_, 0.300);
  engine_->Advance(T0() + seconds(30));
  EXPECT_THAT(Receivers(), ElementsAre("first", "second"));
}

TEST_F(RoutingTest, ChildRoutesInheritGroupingFromTheirParents) {
  Load(R"(route:
  group_wait: 10s
  routes:
    - matchers: ['alertname="slow"']
      receiver: team
      group_by: [alertname, model]
      group_wait: 20s
      routes:
        - matchers: ['model="m1"']
          receiver: pager
          repeat_interval: 1h
rules:
)" + Rule("slow", "    above: 200ms\n"));
  At(T0(), a_, 0.300);
  At(T0(), b_, 0.300);
  engine_->Advance(T0() + hours(2));
  std::vector<std::string> seen;
  for (const Notification& n : notes()) {
    seen.push_back(Cat(n.receiver, " ", n.group_key, " +",
                       std::chrono::duration_cast<seconds>(n.time - T0()).count(), "s"));
  }
  // pager: group_by and group_wait from its parent, its own repeat_interval (on 5 m ticks).
  EXPECT_THAT(seen, ElementsAre("team {alertname=\"slow\",model=\"m2\"} +20s",
                                "pager {alertname=\"slow\",model=\"m1\"} +20s",
                                "pager {alertname=\"slow\",model=\"m1\"} +3620s"));
}

TEST_F(RoutingTest, TierReceiversAndMatchedRoutesBothGetTheAlert) {
  const std::string rules = "rules:\n" + Rule("slow", "    above: 200ms\n    receivers: [wecom]\n");
  Load("route:\n  routes:\n    - {matchers: ['model=\"m1\"'], receiver: sms}\n" + rules);
  At(T0(), a_, 0.300);
  At(T0(), b_, 0.300);
  engine_->Advance(T0() + seconds(30));
  // m1: wecom (its tier) and sms (its route); m2: wecom only. One wecom group for both.
  EXPECT_THAT(Receivers(), UnorderedElementsAre("wecom", "sms"));
  for (const Notification& n : notes()) {
    EXPECT_EQ(n.alerts.size(), n.receiver == "wecom" ? 2u : 1u) << n.receiver;
  }

  // A receiver reached both ways is grouped once, by the route.
  Load("route:\n  routes:\n    - {matchers: ['model=\"m1\"'], receiver: wecom, group_wait: 5s}\n" +
       rules);
  At(T0(), a_, 0.300);
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(notes().size(), 1u);
  EXPECT_EQ(notes()[0].receiver, "wecom");
  EXPECT_EQ(notes()[0].route, "route.routes[0]");
  EXPECT_EQ(notes()[0].time, T0() + seconds(5));

  // A matched route without a receiver adds none: the tiers' receivers still get it, and
  // route.receiver does only when there is no other.
  Load("route:\n  routes:\n    - {matchers: ['model=\"m1\"']}\nrules:\n" +
       Rule("slow", "    above: 200ms\n"));
  At(T0(), a_, 0.300);
  engine_->Advance(T0() + seconds(30));
  EXPECT_THAT(Receivers(), ElementsAre("default"));
}

TEST_F(RoutingTest, RoutesAreMatchedAgainWhenTheSeverityChanges) {
  // The default tiers: +10 % wecom, +30 % sms and phone, +50 % emergency. Baseline 100 ms.
  Load(R"(route:
  routes:
    - matchers: ['severity="emergency"']
      receiver: lead
rules:
)" + Rule("risk", "    tiers: default\n"));
  At(T0(), a_, 0.115);               // warning
  At(T0() + minutes(1), a_, 0.160);  // emergency
  engine_->Advance(T0() + minutes(1) + seconds(30));
  // Due at the same time: route nodes first, then receivers in the order rules name them.
  EXPECT_THAT(Receivers(), ElementsAre("wecom", "lead", "sms", "phone"));
  EXPECT_EQ(notes()[1].route, "route.routes[0]");
  EXPECT_EQ(notes()[1].alerts[0].severity, "emergency");
  At(T0() + minutes(2), a_, 0.115);  // back to warning: lead hears it ended
  engine_->Advance(T0() + minutes(6) + seconds(30));
  bool lead_resolved = false;
  for (const Notification& n : notes()) {
    lead_resolved |= n.receiver == "lead" && n.status == NotifyStatus::kResolved;
  }
  EXPECT_TRUE(lead_resolved);
}

TEST_F(RoutingTest, AnEmergencyMutesTheWarningOfTheSameSeriesByDefault) {
  Load("route:\n  group_by: [model]\nrules:\n" +
       Rule("warn", "    above: 150ms\n    severity: warning\n    receivers: [wecom]\n") +
       Rule("emerg", "    above: 250ms\n    severity: emergency\n    receivers: [wecom]\n"));
  At(T0(), a_, 0.300);  // both fire on m1
  At(T0(), b_, 0.200);  // warn only on m2: nothing mutes it
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(notes().size(), 2u);
  EXPECT_THAT(Rules(notes()[0]), ElementsAre("emerg"));
  EXPECT_EQ(notes()[0].group_key, "{model=\"m1\"}");
  EXPECT_THAT(Rules(notes()[1]), ElementsAre("warn"));
  ASSERT_EQ(sink_.muted.size(), 1u);
  const MutedAlert& m = sink_.muted[0];
  EXPECT_EQ(m.rule, "warn");
  EXPECT_EQ(m.reason, "inhibit");
  EXPECT_EQ(m.series, "tailguard_request_duration_seconds{model=\"m1\",route=\"/a\"}");
  EXPECT_EQ(m.detail, "emerg tailguard_request_duration_seconds{model=\"m1\",route=\"/a\"}");
  EXPECT_EQ(m.time, T0() + seconds(30));
  EXPECT_EQ(engine_->stats().muted_inhibit, 1u);

  // Still muted at the next flushes: reported once.
  engine_->Advance(T0() + minutes(20));
  EXPECT_EQ(sink_.muted.size(), 1u);
  EXPECT_EQ(notes().size(), 2u);
  // The emergency ends: the warning shows at the next interval, next to the resolution.
  At(T0() + minutes(21), a_, 0.200);
  engine_->Advance(T0() + minutes(25) + seconds(30));
  ASSERT_EQ(notes().size(), 3u);
  EXPECT_THAT(Rules(notes()[2]), ElementsAre("warn", "emerg (resolved)"));
}

TEST_F(RoutingTest, ConfiguredInhibitionComparesTheEqualLabels) {
  const std::string rules =
      "rules:\n" + Rule("down", "    stat: error_ratio\n    above: 0.5\n    receivers: [wecom]\n") +
      Rule("slow", "    above: 200ms\n    receivers: [wecom]\n");
  Load(R"(inhibit_rules:
  - source_matchers: ['alertname="down"']
    target_matchers: ['alertname="slow"']
    equal: [model]
)" + rules);
  const auto obs = [&](const Labels& labels, double error_ratio) {
    Observation o = P99(T0(), labels, 0.300);
    o.error_ratio = error_ratio;
    engine_->Observe(o);
  };
  const Labels c = {{"model", "m1"}, {"route", "/c"}};
  obs(a_, 0.9);  // down and slow on m1 /a
  obs(c, 0.0);   // slow on m1 /c: muted by down on m1 /a (same model)
  obs(b_, 0.0);  // slow on m2: not muted
  engine_->Advance(T0() + seconds(30));
  std::set<std::string> muted;
  for (const MutedAlert& m : sink_.muted) muted.insert(Cat(m.rule, " ", m.series));
  EXPECT_THAT(muted,
              ElementsAre("slow tailguard_request_duration_seconds{model=\"m1\",route=\"/a\"}",
                          "slow tailguard_request_duration_seconds{model=\"m1\",route=\"/c\"}"));

  // inhibit_rules: [] turns inhibition off, the default one included.
  Load("inhibit_rules: []\nroute:\n  group_by: [model]\nrules:\n" +
       Rule("warn", "    above: 150ms\n    severity: warning\n") +
       Rule("emerg", "    above: 250ms\n    severity: emergency\n"));
  At(T0(), a_, 0.300);
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(notes().size(), 1u);
  EXPECT_EQ(notes()[0].alerts.size(), 2u);
  EXPECT_TRUE(sink_.muted.empty());
}

TEST_F(RoutingTest, AMaintenanceWindowMutesThenTheNextIntervalNotifies) {
  // T0 is Wednesday 2025-11-05 00:00 UTC.
  Load(R"(schedules:
  - {name: upgrade, from: "2025-11-05 00:00", to: "2025-11-05 00:12"}
maintenance: [upgrade]
rules:
)" + Rule("slow", "    above: 200ms\n    receivers: [wecom]\n"));
  At(T0() + minutes(1), a_, 0.300);
  engine_->Advance(T0() + minutes(12));
  EXPECT_TRUE(notes().empty());
  ASSERT_EQ(sink_.muted.size(), 1u);
  EXPECT_EQ(sink_.muted[0].reason, "maintenance");
  EXPECT_EQ(sink_.muted[0].detail, "upgrade");
  EXPECT_EQ(sink_.muted[0].time, T0() + minutes(1) + seconds(30));
  EXPECT_EQ(engine_->stats().muted_maintenance, 1u);
  // Flushes at 1:30, 6:30, 11:30 were muted; the one at 16:30 is not: notified then, not 4 h
  // later.
  engine_->Advance(T0() + minutes(16) + seconds(29));
  EXPECT_TRUE(notes().empty());
  engine_->Advance(T0() + minutes(16) + seconds(30));
  ASSERT_EQ(notes().size(), 1u);
  EXPECT_EQ(notes()[0].sequence, 1u);
  EXPECT_FALSE(notes()[0].repeat);
}

TEST_F(RoutingTest, RouteMuteDuringCoversTheNodeAndTheTierReceivers) {
  Load(R"(schedules:
  - {name: night, hours: "00:00-06:00"}
route:
  routes:
    - matchers: ['model="batch"']
      mute_during: [night]
      routes:
        - matchers: ['severity="critical"']
          receiver: batch-pager
rules:
)" + Rule("slow", "    above: 200ms\n    receivers: [wecom]\n"));
  const Labels batch = {{"model", "batch"}};
  At(T0(), batch, 0.300);  // midnight: muted for wecom and for batch-pager (inherited)
  At(T0(), a_, 0.300);     // another model: not muted
  engine_->Advance(T0() + hours(6));
  ASSERT_EQ(notes().size(), 2u);  // at 30 s, and the 4 h repeat
  for (const Notification& n : notes()) {
    EXPECT_EQ(n.receiver, "wecom");
    ASSERT_EQ(n.alerts.size(), 1u);
    EXPECT_EQ(n.alerts[0].labels[1].second, "m1");
  }
  ASSERT_EQ(sink_.muted.size(), 1u);
  EXPECT_EQ(sink_.muted[0].detail, "night");
  // 06:00:30 is the first flush after the night: both receivers hear of it.
  engine_->Advance(T0() + hours(6) + seconds(30));
  ASSERT_EQ(notes().size(), 4u);
  EXPECT_EQ(notes()[2].receiver, "batch-pager");
  EXPECT_EQ(notes()[3].receiver, "wecom");
  EXPECT_EQ(notes()[3].alerts.size(), 2u);
  EXPECT_EQ(notes()[3].time, T0() + hours(6) + seconds(30));
}

TEST_F(RoutingTest, SilencedAlertsAreLeftOutUntilTheSilenceEnds) {
  FakeMuter muter;
  muter.silences = {{"model", "m1", T0(), T0() + minutes(20)}};
  Load("rules:\n" + Rule("slow", "    above: 200ms\n    receivers: [wecom]\n"), &muter);
  At(T0(), a_, 0.300);
  At(T0(), b_, 0.300);
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(notes().size(), 1u);
  ASSERT_EQ(notes()[0].alerts.size(), 1u);
  EXPECT_EQ(notes()[0].alerts[0].labels[1].second, "m2");
  ASSERT_EQ(sink_.muted.size(), 1u);
  EXPECT_EQ(sink_.muted[0].reason, "silence");
  EXPECT_EQ(sink_.muted[0].detail, "");
  EXPECT_THAT(sink_.muted[0].labels,
              ElementsAre(std::pair<std::string, std::string>("alertname", "slow"),
                          std::pair<std::string, std::string>("model", "m1"),
                          std::pair<std::string, std::string>("route", "/a"),
                          std::pair<std::string, std::string>("severity", "critical")));
  EXPECT_EQ(engine_->stats().muted_silence, 1u);
  // The silence ends at 20:00; the flush at 20:30 shows both.
  engine_->Advance(T0() + minutes(20) + seconds(29));
  EXPECT_EQ(notes().size(), 1u);
  engine_->Advance(T0() + minutes(20) + seconds(30));
  ASSERT_EQ(notes().size(), 2u);
  EXPECT_EQ(notes()[1].alerts.size(), 2u);
  EXPECT_FALSE(notes()[1].repeat);
  EXPECT_EQ(sink_.muted.size(), 1u);

  // Silenced again: a new mute; the message drops it (the visible set changed).
  muter.silences.push_back({"model", "m1", T0() + minutes(30), T0() + hours(10)});
  engine_->Advance(T0() + minutes(30) + seconds(30));
  ASSERT_EQ(notes().size(), 3u);
  EXPECT_EQ(notes()[2].alerts.size(), 1u);
  EXPECT_EQ(sink_.muted.size(), 2u);
}

TEST_F(RoutingTest, AnAlertSilencedFromItsStartIsNeverSentEvenResolved) {
  FakeMuter muter;
  muter.silences = {{"model", "m1", T0(), T0() + hours(10)}};
  Load("rules:\n" + Rule("slow", "    above: 200ms\n    receivers: [wecom]\n"), &muter);
  At(T0(), a_, 0.300);
  engine_->Advance(T0() + minutes(10));
  At(T0() + minutes(11), a_, 0.100);
  engine_->Advance(T0() + hours(1));
  EXPECT_TRUE(notes().empty());
  EXPECT_EQ(sink_.muted.size(), 1u);
  EXPECT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kResolve), 1);
}

TEST_F(RoutingTest, AllMutedSendsNothingAndRepeatsWait) {
  FakeMuter muter;
  muter.silences = {{"model", "m1", T0() + minutes(1), T0() + hours(10)}};
  Load("rules:\n" + Rule("slow", "    above: 200ms\n    receivers: [wecom]\n"), &muter);
  At(T0(), a_, 0.300);
  engine_->Advance(T0() + hours(9));
  // Shown once at 30 s; then silenced: no empty message, no repeats.
  ASSERT_EQ(notes().size(), 1u);
  // It resolves while silenced: the receiver was shown it firing, so it hears it ended.
  At(T0() + hours(9), a_, 0.100);
  engine_->Advance(T0() + hours(9) + minutes(5));
  ASSERT_EQ(notes().size(), 2u);
  EXPECT_EQ(notes()[1].status, NotifyStatus::kResolved);
  EXPECT_THAT(Rules(notes()[1]), ElementsAre("slow (resolved)"));
}

// Behaviour change (issue 5): an alert that joins a group and resolves between two flushes was
// sent as resolved to a receiver that never saw it fire. It is not sent at all now.
TEST_F(RoutingTest, AResolutionIsSentOnlyToReceiversThatSawTheAlertFire) {
  Load("rules:\n" + Rule("slow", "    above: 200ms\n    receivers: [wecom]\n"));
  At(T0(), a_, 0.300);
  engine_->Advance(T0() + seconds(30));
  At(T0() + minutes(1), b_, 0.300);
  At(T0() + minutes(2), b_, 0.100);
  engine_->Advance(T0() + minutes(20));
  ASSERT_EQ(notes().size(), 1u);
}

TEST_F(RoutingTest, NotifiedAlertsCarryTheRuleStatistic) {
  Load("rules:\n" + Rule("busy", "    stat: rate\n    above: 100\n"));
  Observation o = P99(T0(), a_, 0.1);
  o.rate = 150;
  engine_->Observe(o);
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(notes().size(), 1u);
  EXPECT_EQ(notes()[0].alerts[0].stat, Statistic::kRate);
}

}  // namespace
}  // namespace tailguard
