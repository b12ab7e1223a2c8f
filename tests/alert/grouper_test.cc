// Grouping, de-duplication, repeats and resolved notifications, driven through the engine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "alert_test_util.h"

namespace tailguard {
namespace {

using alert_test::hours;
using alert_test::minutes;
using alert_test::P99;
using alert_test::seconds;
using alert_test::T0;

// Fires on the first breaching evaluation and resolves on the first clear one, so the tests
// control exactly when alerts start and end; the grouping timers are the defaults (30 s, 5 m,
// 4 h) unless a test says otherwise.
constexpr std::string_view kFast = R"(
    debounce: {pre_alert_after: 1, alert_after: 0s, resolve_after: 0s, deescalate_after: 0s}
)";

class GroupingTest : public ::testing::Test {
 protected:
  // Grouping tests observe sparsely and jump time ahead, so series never go stale here
  // (staleness has its own test in engine_test.cc).
  void Load(const std::string& yaml) {
    absl::StatusOr<AlertConfig> config = ParseAlertConfig("stale_after: 0s\n" + yaml, "test.yaml");
    ASSERT_TRUE(config.ok()) << config.status();
    auto engine = AlertEngine::Create(*config, sink_);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }
  // A rule "slow" on P99 above 200 ms for receiver wecom, plus `route` at the top.
  void LoadSimple(const std::string& route = "") {
    Load(route + "rules:\n  - name: slow\n    above: 200ms\n    receivers: [wecom]\n" +
         std::string(kFast));
  }
  void Fire(WallTime t, const Labels& labels) { engine_->Observe(P99(t, labels, 0.300)); }
  void Clear(WallTime t, const Labels& labels) { engine_->Observe(P99(t, labels, 0.100)); }
  const std::vector<Notification>& notes() const { return sink_.notifications; }

  CollectingAlertSink sink_;
  std::unique_ptr<AlertEngine> engine_;
  Labels a_ = {{"model", "m1"}, {"route", "/a"}};
  Labels b_ = {{"model", "m2"}, {"route", "/b"}};
};

TEST_F(GroupingTest, GroupWaitGathersAlertsIntoOneNotification) {
  LoadSimple();
  Fire(T0(), a_);
  Fire(T0() + seconds(10), b_);
  engine_->Advance(T0() + seconds(29));
  EXPECT_TRUE(notes().empty());
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(notes().size(), 1u);
  const Notification& n = notes()[0];
  EXPECT_EQ(n.time, T0() + seconds(30));
  EXPECT_EQ(n.receiver, "wecom");
  EXPECT_EQ(n.group_key, "{alertname=\"slow\"}");
  EXPECT_EQ(n.status, NotifyStatus::kFiring);
  EXPECT_EQ(n.sequence, 1u);
  EXPECT_FALSE(n.repeat);
  ASSERT_EQ(n.alerts.size(), 2u);
  EXPECT_EQ(n.alerts[0].series, "tailguard_request_duration_seconds{model=\"m1\",route=\"/a\"}");
  EXPECT_EQ(n.alerts[0].starts_at, T0());
  EXPECT_EQ(n.alerts[1].starts_at, T0() + seconds(10));
  EXPECT_EQ(n.alerts[0].severity, "critical");
  EXPECT_EQ(n.alerts[0].value, 0.300);
  EXPECT_EQ(n.alerts[0].threshold, 0.200);
  EXPECT_THAT(n.alerts[0].labels,
              ::testing::ElementsAre(std::pair<std::string, std::string>("alertname", "slow"),
                                     std::pair<std::string, std::string>("model", "m1"),
                                     std::pair<std::string, std::string>("route", "/a"),
                                     std::pair<std::string, std::string>("severity", "critical")));
}

TEST_F(GroupingTest, NotificationsDueBeforeAnObservationGoOutFirst) {
  LoadSimple();
  Fire(T0(), a_);
  Fire(T0() + seconds(31), a_);  // still firing; the group was due at 30 s
  ASSERT_EQ(notes().size(), 1u);
  EXPECT_EQ(notes()[0].time, T0() + seconds(30));
}

TEST_F(GroupingTest, OneNotificationPerRepeatIntervalWhileFiring) {
  LoadSimple();
  // Firing every second for 10 hours: no storm, one message every 4 hours.
  for (int s = 0; s <= 10 * 3600; ++s) Fire(T0() + seconds(s), a_);
  ASSERT_EQ(notes().size(), 3u);
  EXPECT_EQ(notes()[0].time, T0() + seconds(30));
  // Repeats are checked at group_interval ticks: 30 s + 48 * 5 min.
  EXPECT_EQ(notes()[1].time, T0() + seconds(30) + hours(4));
  EXPECT_TRUE(notes()[1].repeat);
  EXPECT_EQ(notes()[1].sequence, 2u);
  EXPECT_EQ(notes()[2].time, T0() + seconds(30) + hours(8));
  EXPECT_NE(notes()[0].idempotency_key, notes()[1].idempotency_key);
  EXPECT_EQ(sink_.events.size(), 2u);  // PreAlert and Fire, once
}

TEST_F(GroupingTest, RepeatsAreStampedWhenDueEvenAfterALongJump) {
  LoadSimple();
  Fire(T0(), a_);
  engine_->Advance(T0() + hours(9));
  ASSERT_EQ(notes().size(), 3u);
  EXPECT_EQ(notes()[2].time, T0() + seconds(30) + hours(8));
}

TEST_F(GroupingTest, ANewAlertJoinsAtTheNextGroupInterval) {
  LoadSimple();
  Fire(T0(), a_);
  engine_->Advance(T0() + seconds(30));
  Fire(T0() + minutes(1), b_);
  engine_->Advance(T0() + minutes(5) + seconds(29));
  ASSERT_EQ(notes().size(), 1u);
  engine_->Advance(T0() + minutes(5) + seconds(30));
  ASSERT_EQ(notes().size(), 2u);
  EXPECT_FALSE(notes()[1].repeat);
  EXPECT_EQ(notes()[1].alerts.size(), 2u);
  EXPECT_EQ(notes()[1].sequence, 2u);
}

TEST_F(GroupingTest, ResolvedNotificationWhenTheGroupsAlertsEnd) {
  LoadSimple();
  Fire(T0(), a_);
  Fire(T0(), b_);
  engine_->Advance(T0() + seconds(30));
  Clear(T0() + minutes(2), a_);
  engine_->Advance(T0() + minutes(5) + seconds(30));
  ASSERT_EQ(notes().size(), 2u);
  // One still fires: a firing message listing the resolved one after it.
  EXPECT_EQ(notes()[1].status, NotifyStatus::kFiring);
  ASSERT_EQ(notes()[1].alerts.size(), 2u);
  EXPECT_EQ(notes()[1].alerts[0].status, NotifyStatus::kFiring);
  EXPECT_EQ(notes()[1].alerts[1].status, NotifyStatus::kResolved);
  EXPECT_EQ(notes()[1].alerts[1].ends_at, T0() + minutes(2));
  Clear(T0() + minutes(7), b_);
  engine_->Advance(T0() + minutes(10) + seconds(30));
  ASSERT_EQ(notes().size(), 3u);
  EXPECT_EQ(notes()[2].status, NotifyStatus::kResolved);
  ASSERT_EQ(notes()[2].alerts.size(), 1u);
  EXPECT_EQ(notes()[2].alerts[0].status, NotifyStatus::kResolved);
  EXPECT_EQ(notes()[2].alerts[0].value, 0.100);
  // The group is gone: nothing more, ever.
  engine_->Advance(T0() + hours(24));
  EXPECT_EQ(notes().size(), 3u);
}

TEST_F(GroupingTest, AlertThatEndsWithinGroupWaitIsNeverSent) {
  LoadSimple();
  Fire(T0(), a_);
  Clear(T0() + seconds(10), a_);
  engine_->Advance(T0() + hours(1));
  EXPECT_TRUE(notes().empty());
  EXPECT_EQ(sink_.events.size(), 3u);  // the events still tell the story
}

TEST_F(GroupingTest, RefiringBeforeTheFlushIsNotAResolution) {
  LoadSimple();
  Fire(T0(), a_);
  engine_->Advance(T0() + seconds(30));
  Clear(T0() + minutes(1), a_);
  Fire(T0() + minutes(2), a_);
  engine_->Advance(T0() + minutes(5) + seconds(30));
  ASSERT_EQ(notes().size(), 2u);
  ASSERT_EQ(notes()[1].alerts.size(), 1u);
  EXPECT_EQ(notes()[1].alerts[0].status, NotifyStatus::kFiring);
  EXPECT_EQ(notes()[1].alerts[0].starts_at, T0() + minutes(2));
}

TEST_F(GroupingTest, GroupByLabelsSplitsGroups) {
  LoadSimple("route:\n  group_by: [alertname, model]\n");
  Fire(T0(), a_);
  Fire(T0(), b_);
  engine_->Advance(T0() + seconds(30));
  ASSERT_EQ(notes().size(), 2u);
  std::set<std::string> keys = {notes()[0].group_key, notes()[1].group_key};
  EXPECT_THAT(keys, ::testing::ElementsAre("{alertname=\"slow\",model=\"m1\"}",
                                           "{alertname=\"slow\",model=\"m2\"}"));
  EXPECT_EQ(notes()[0].group_labels.size(), 2u);
  EXPECT_EQ(notes()[0].alerts.size(), 1u);
}

TEST_F(GroupingTest, GroupByEverythingIsOneGroupPerAlert) {
  LoadSimple("route:\n  group_by: ['...']\n  group_wait: 0s\n");
  Fire(T0(), a_);
  Fire(T0(), b_);
  engine_->Advance(T0());
  ASSERT_EQ(notes().size(), 2u);
  EXPECT_EQ(notes()[0].alerts.size(), 1u);
}

TEST_F(GroupingTest, ReceiverOptionsOverrideTheRoute) {
  Load(R"(
route: {group_wait: 10s}
receivers:
  - name: wecom
  - name: phone
    repeat_interval: 30m
    group_interval: 1m
rules:
  - name: slow
    above: 200ms
    receivers: [wecom, phone]
)" + std::string(kFast));
  Fire(T0(), a_);
  engine_->Advance(T0() + hours(1));
  int wecom = 0;
  int phone = 0;
  for (const Notification& n : notes()) (n.receiver == "wecom" ? wecom : phone)++;
  EXPECT_EQ(wecom, 1);
  EXPECT_EQ(phone, 2);  // at 10 s and 30 min 10 s
}

TEST_F(GroupingTest, DefaultReceiverGetsAlertsWithoutReceivers) {
  Load("rules:\n  - name: slow\n    above: 200ms\n" + std::string(kFast));
  Fire(T0(), a_);
  engine_->Advance(T0() + minutes(1));
  ASSERT_EQ(notes().size(), 1u);
  EXPECT_EQ(notes()[0].receiver, "default");

  sink_.Clear();
  Load("route: {receiver: ''}\nrules:\n  - name: slow\n    above: 200ms\n" + std::string(kFast));
  Fire(T0(), a_);
  engine_->Advance(T0() + minutes(1));
  EXPECT_TRUE(notes().empty());
  EXPECT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kFire), 1);
}

TEST_F(GroupingTest, TiersRouteToMoreReceiversAsTheyEscalate) {
  // The default tiers: +10 % wecom, +30 % sms and phone, +50 % degrade. Baseline 100 ms.
  Load("rules:\n  - name: risk\n" + std::string(kFast) + "    tiers: default\n");
  const auto at = [&](WallTime t, double p99) { engine_->Observe(P99(t, a_, p99)); };
  at(T0(), 0.115);               // warning
  at(T0() + minutes(1), 0.135);  // critical: escalates at once (escalate_after 1)
  engine_->Advance(T0() + minutes(1) + seconds(30));
  ASSERT_EQ(notes().size(), 3u);
  EXPECT_EQ(notes()[0].receiver, "wecom");
  EXPECT_EQ(notes()[0].alerts[0].severity, "warning");
  EXPECT_EQ(notes()[1].receiver, "sms");  // due at the same time: in receiver order
  EXPECT_EQ(notes()[2].receiver, "phone");
  EXPECT_EQ(notes()[1].alerts[0].severity, "critical");
  // The wecom group hears about the new severity at its next interval.
  engine_->Advance(T0() + minutes(5) + seconds(30));
  ASSERT_EQ(notes().size(), 4u);
  EXPECT_EQ(notes()[3].receiver, "wecom");
  EXPECT_EQ(notes()[3].alerts[0].severity, "critical");
  EXPECT_FALSE(notes()[3].repeat);
  // Back to warning: sms and phone get a resolved message; wecom a change.
  at(T0() + minutes(6), 0.115);
  engine_->Advance(T0() + minutes(11));
  ASSERT_EQ(notes().size(), 7u);
  for (int i = 4; i < 6; ++i) {
    EXPECT_NE(notes()[i].receiver, "wecom");
    EXPECT_EQ(notes()[i].status, NotifyStatus::kResolved);
    EXPECT_EQ(notes()[i].alerts[0].ends_at, T0() + minutes(6));
  }
  EXPECT_EQ(notes()[6].receiver, "wecom");
  EXPECT_EQ(notes()[6].status, NotifyStatus::kFiring);
  EXPECT_EQ(notes()[6].alerts[0].severity, "warning");

  const std::vector<AlertEventKind> kinds = alert_test::Kinds(sink_.events);
  EXPECT_THAT(kinds,
              ::testing::ElementsAre(AlertEventKind::kPreAlert, AlertEventKind::kFire,
                                     AlertEventKind::kEscalate, AlertEventKind::kDeescalate));
}

TEST_F(GroupingTest, FlappingSendsNothing) {
  // The default debounce: alternating breaches and bursts of two never notify.
  Load("rules:\n  - name: slow\n    above: 200ms\n");
  for (int s = 0; s < 3600; ++s) {
    engine_->Observe(P99(T0() + seconds(s), a_, s % 2 == 0 ? 0.3 : 0.1));
    engine_->Observe(P99(T0() + seconds(s), b_, s % 3 == 2 ? 0.1 : 0.3));
  }
  engine_->Advance(T0() + hours(2));
  EXPECT_TRUE(notes().empty());
  EXPECT_TRUE(sink_.events.empty());
}

}  // namespace
}  // namespace tailguard
