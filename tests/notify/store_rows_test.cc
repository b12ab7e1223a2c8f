// The alert engine's output as the event store's rows (alert/notify/store_rows.h): what each
// transition does to its episode, and every field with the names the store keeps.
#include "alert/notify/store_rows.h"

#include <chrono>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tailguard::notify {
namespace {

using std::chrono::seconds;
using store::EpisodeChange;
using store::EpisodeState;
using ::testing::ElementsAre;

const WallTime kT0 = WallTime(seconds(1762300800));

TEST(StoreRowTest, EachTransitionSaysWhatItDoesToItsEpisode) {
  struct Case {
    AlertEventKind kind;
    AlertState from;
    AlertState to;
    EpisodeChange change;
    EpisodeState state;  // not used for kNoData
    std::string_view name;
  };
  const Case cases[] = {
      {AlertEventKind::kPreAlert, AlertState::kNormal, AlertState::kPreAlert, EpisodeChange::kStart,
       EpisodeState::kPreAlert, "pre_alert"},
      {AlertEventKind::kFire, AlertState::kPreAlert, AlertState::kAlert, EpisodeChange::kUpdate,
       EpisodeState::kAlert, "fire"},
      {AlertEventKind::kEscalate, AlertState::kAlert, AlertState::kAlert, EpisodeChange::kUpdate,
       EpisodeState::kAlert, "escalate"},
      // A higher tier while still in pre_alert stays pre_alert.
      {AlertEventKind::kEscalate, AlertState::kPreAlert, AlertState::kPreAlert,
       EpisodeChange::kUpdate, EpisodeState::kPreAlert, "escalate"},
      {AlertEventKind::kDeescalate, AlertState::kAlert, AlertState::kAlert, EpisodeChange::kUpdate,
       EpisodeState::kAlert, "deescalate"},
      {AlertEventKind::kNoData, AlertState::kAlert, AlertState::kAlert, EpisodeChange::kNoData,
       EpisodeState::kAlert, "no_data"},
      {AlertEventKind::kCancel, AlertState::kPreAlert, AlertState::kNormal, EpisodeChange::kEnd,
       EpisodeState::kCancelled, "cancel"},
      {AlertEventKind::kResolve, AlertState::kAlert, AlertState::kNormal, EpisodeChange::kEnd,
       EpisodeState::kResolved, "resolve"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    AlertEvent e;
    e.kind = c.kind;
    e.from_state = c.from;
    e.to_state = c.to;
    const store::TransitionRow r = StoreRow(e);
    EXPECT_EQ(r.change, c.change);
    if (c.change != EpisodeChange::kNoData) {
      EXPECT_EQ(store::EpisodeStateName(r.state), store::EpisodeStateName(c.state));
    }
    EXPECT_EQ(r.kind, c.name);
    EXPECT_EQ(r.from_state, AlertStateName(c.from));
    EXPECT_EQ(r.to_state, AlertStateName(c.to));
  }
}

TEST(StoreRowTest, ATransitionKeepsEveryField) {
  AlertEvent e;
  e.time = kT0 + seconds(30);
  e.kind = AlertEventKind::kFire;
  e.from_state = AlertState::kPreAlert;
  e.to_state = AlertState::kAlert;
  e.from_tier = 0;
  e.to_tier = 1;
  e.rule = "errors";
  e.series = "tailguard_requests_total{model=\"rank\"}";
  e.metric = "tailguard_requests_total";
  e.labels = {{"model", "rank"}};
  e.stat = Statistic::kErrorRatio;
  e.severity = "critical";
  e.value = 0.2;
  e.threshold = 0.05;
  e.baseline_p99 = 0.1;
  e.breach_start = kT0;
  e.schedule = "weekend";
  e.actions = {"degrade", "page"};
  e.unit = Unit::kBytes;
  const store::TransitionRow r = StoreRow(e);
  EXPECT_EQ(r.unit, "bytes");
  EXPECT_EQ(r.time, kT0 + seconds(30));
  EXPECT_EQ(r.from_state, "pre_alert");
  EXPECT_EQ(r.to_state, "alert");
  EXPECT_EQ(r.from_tier, 0);
  EXPECT_EQ(r.to_tier, 1);
  EXPECT_EQ(r.rule, "errors");
  EXPECT_EQ(r.series, e.series);
  EXPECT_EQ(r.metric, "tailguard_requests_total");
  EXPECT_EQ(r.labels, e.labels);
  EXPECT_EQ(r.stat, "error_ratio");
  EXPECT_EQ(r.severity, "critical");
  EXPECT_DOUBLE_EQ(r.value, 0.2);
  EXPECT_DOUBLE_EQ(r.threshold, 0.05);
  EXPECT_DOUBLE_EQ(r.baseline_p99, 0.1);
  EXPECT_EQ(r.breach_start, kT0);
  EXPECT_EQ(r.schedule, "weekend");
  EXPECT_THAT(r.actions, ElementsAre("degrade", "page"));
}

TEST(StoreRowTest, ANotificationKeepsItsAlertsWithTheirStatusesByName) {
  Notification n;
  n.time = kT0 + seconds(60);
  n.receiver = "wecom";
  n.route = "route.routes[0]";
  n.group_key = "{alertname=\"p99\"}";
  n.status = NotifyStatus::kFiring;
  n.sequence = 3;
  n.repeat = true;
  n.idempotency_key = "wecom/route.routes[0]/g/3";
  NotifiedAlert firing;
  firing.rule = "p99";
  firing.series = "m{model=\"rank\"}";
  firing.labels = {{"alertname", "p99"}, {"model", "rank"}, {"severity", "warning"}};
  firing.annotations = {{"summary", "slow"}};
  firing.status = NotifyStatus::kFiring;
  firing.tier = 1;
  firing.severity = "warning";
  firing.value = 0.3;
  firing.threshold = 0.2;
  firing.baseline_p99 = 0.1;
  firing.starts_at = kT0;
  NotifiedAlert resolved = firing;
  resolved.series = "m{model=\"fraud\"}";
  resolved.status = NotifyStatus::kResolved;
  resolved.ends_at = kT0 + seconds(50);
  n.alerts = {firing, resolved};

  const store::NotificationRow r = StoreRow(n);
  EXPECT_EQ(r.time, kT0 + seconds(60));
  EXPECT_EQ(r.receiver, "wecom");
  EXPECT_EQ(r.group_key, n.group_key);
  EXPECT_EQ(r.status, "firing");
  EXPECT_EQ(r.sequence, 3u);
  EXPECT_TRUE(r.repeat);
  EXPECT_EQ(r.idempotency_key, n.idempotency_key);
  ASSERT_EQ(r.alerts.size(), 2u);
  const store::NotifiedAlertRow& a = r.alerts[0];
  EXPECT_EQ(a.rule, "p99");
  EXPECT_EQ(a.series, firing.series);
  EXPECT_EQ(a.labels, firing.labels);
  EXPECT_EQ(a.annotations, firing.annotations);
  EXPECT_EQ(a.status, "firing");
  EXPECT_EQ(a.tier, 1);
  EXPECT_EQ(a.severity, "warning");
  EXPECT_DOUBLE_EQ(a.value, 0.3);
  EXPECT_DOUBLE_EQ(a.threshold, 0.2);
  EXPECT_DOUBLE_EQ(a.baseline_p99, 0.1);
  EXPECT_EQ(a.starts_at, kT0);
  EXPECT_EQ(a.ends_at, WallTime{});
  EXPECT_EQ(r.alerts[1].status, "resolved");
  EXPECT_EQ(r.alerts[1].ends_at, kT0 + seconds(50));
  n.status = NotifyStatus::kResolved;
  EXPECT_EQ(StoreRow(n).status, "resolved");
}

}  // namespace
}  // namespace tailguard::notify
