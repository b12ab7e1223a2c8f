// The event store: migrations, alert episodes, acknowledgements and archiving, the timeline,
// the outbox, silences, engine state, transactions and several stores on one file.
#include "store/event_store.h"

#include <cmath>
#include <thread>

#include "alert/notify/silences.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store_test_util.h"

namespace tailguard::store_test {
namespace {

using store::AlertDetail;
using store::AlertQuery;
using store::AlertRow;
using store::Database;
using store::DiagnosisCauseRow;
using store::DiagnosisRow;
using store::EpisodeState;
using store::EventStore;
using store::NotificationRow;
using store::OutboxItem;
using store::OutboxQuery;
using store::Silence;
using store::Statement;
using store::TimelineEntry;
using store::TimelineType;
using store::TransitionRow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using State = OutboxItem::State;

#define ASSERT_OK(expr)                              \
  do {                                               \
    const absl::Status status_ = (expr);             \
    ASSERT_TRUE(status_.ok()) << status_.ToString(); \
  } while (0)

int64_t Scalar(const std::string& path, std::string_view sql) {
  absl::StatusOr<Database> db = Database::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  absl::StatusOr<Statement> st = db->Prepare(sql);
  EXPECT_TRUE(st.ok()) << st.status();
  absl::StatusOr<bool> row = st->Step();
  EXPECT_TRUE(row.ok() && *row);
  return st->ColumnInt64(0);
}

std::string Text(const std::string& path, std::string_view sql) {
  absl::StatusOr<Database> db = Database::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  absl::StatusOr<Statement> st = db->Prepare(sql);
  EXPECT_TRUE(st.ok()) << st.status();
  absl::StatusOr<bool> row = st->Step();
  EXPECT_TRUE(row.ok() && *row);
  return st->ColumnText(0);
}

std::vector<AlertRow> List(EventStore& s, AlertQuery q = {}) {
  absl::StatusOr<std::vector<AlertRow>> rows = s.ListAlerts(q);
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *rows : std::vector<AlertRow>{};
}

AlertRow Only(EventStore& s) {
  std::vector<AlertRow> rows = List(s, {.include_archived = true});
  EXPECT_EQ(rows.size(), 1u);
  return rows.empty() ? AlertRow{} : rows[0];
}

std::vector<std::string> Kinds(const std::vector<TimelineEntry>& t) {
  std::vector<std::string> out;
  for (const TimelineEntry& e : t) out.push_back(e.kind);
  return out;
}

std::vector<std::string> Keys(const std::vector<OutboxItem>& items) {
  std::vector<std::string> out;
  for (const OutboxItem& o : items) out.push_back(o.idempotency_key);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Opening and migrations

using EventStoreMigrationTest = StoreTest;

TEST_F(EventStoreMigrationTest, NewFileGetsTheCurrentSchema) {
  ASSERT_NE(OpenStore(), nullptr);
  EXPECT_EQ(Scalar(Path(), "PRAGMA user_version"), store::SchemaVersion());
  EXPECT_EQ(Scalar(Path(),
                   "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name IN "
                   "('alerts', 'events', 'outbox', 'outbox_alerts', 'silences', "
                   "'annotations', 'engine_state')"),
            7);
  EXPECT_EQ(Text(Path(), "PRAGMA integrity_check"), "ok");
}

TEST_F(EventStoreMigrationTest, ReopeningKeepsDataAndVersion) {
  {
    std::unique_ptr<EventStore> s = OpenStore();
    ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  }
  std::unique_ptr<EventStore> s = OpenStore();
  EXPECT_EQ(List(*s).size(), 1u);
  EXPECT_EQ(Scalar(Path(), "PRAGMA user_version"), store::SchemaVersion());
}

TEST_F(EventStoreMigrationTest, MigratesAVersion1File) {
  ASSERT_GE(store::SchemaVersion(), 2);
  {
    // What tailguard with schema version 1 wrote: its tables, an alert and a pending item.
    absl::StatusOr<Database> db = Database::Open(Path());
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_OK(db->Exec(store::Migrations()[0]));
    ASSERT_OK(db->Exec("PRAGMA user_version = 1"));
    ASSERT_OK(db->Exec(
        Cat("INSERT INTO alerts (rule, series, metric, labels, stat, state, tier, severity, value, "
            "threshold, baseline_p99, started_at, fired_at, updated_at) VALUES ('",
            kRule, "', '",
            "m{model=\"rank\"}', 'm', '{model=\"rank\"}', 'p99', 'alert', 0, 'warning', 0.2, 0.11, "
            "0.1, ",
            T0().time_since_epoch().count(), ", ", T0().time_since_epoch().count(), ", ",
            T0().time_since_epoch().count(), ")")));
    ASSERT_OK(db->Exec(Cat(
        "INSERT INTO outbox (idempotency_key, receiver, group_key, status, sequence, is_repeat, "
        "summary, created_at, method, url, headers, body, state, next_attempt_at) VALUES "
        "('k1', 'wecom', '{}', 'firing', 1, 0, 'one', ",
        T0().time_since_epoch().count(), ", 'POST', 'http://x/', '', X'7B7D', 'pending', ",
        T0().time_since_epoch().count(), ")")));
  }
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Scalar(Path(), "PRAGMA user_version"), store::SchemaVersion());
  // The old rows read back; the tables of later versions work.
  std::vector<AlertRow> rows = List(*s);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].labels, (Labels{{"model", "rank"}}));
  EXPECT_EQ(rows[0].state, EpisodeState::kAlert);
  EXPECT_EQ(rows[0].unit, "seconds");  // episodes before schema 5 were all on latencies
  absl::StatusOr<std::vector<OutboxItem>> due = s->Due(T0(), 10);
  ASSERT_TRUE(due.ok()) << due.status();
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].body, "{}");
  EXPECT_TRUE(s->AddSilence({.matchers = "{model=\"rank\"}",
                             .starts_at = T0(),
                             .ends_at = T0() + hours(1),
                             .created_by = "ops",
                             .comment = "maintenance"})
                  .ok());
  EXPECT_TRUE(s->Annotate(rows[0].id, "root_cause", "feature store slow", T0()).ok());
  EXPECT_TRUE(s->SaveEngineState("state", T0()).ok());
}

TEST_F(EventStoreMigrationTest, RefusesAFileFromANewerVersion) {
  {
    absl::StatusOr<Database> db = Database::Open(Path());
    ASSERT_TRUE(db.ok());
    ASSERT_OK(db->Exec(Cat("PRAGMA user_version = ", store::SchemaVersion() + 1)));
  }
  absl::StatusOr<std::unique_ptr<EventStore>> s = EventStore::Open(Path());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr(Path()));
  EXPECT_THAT(s.status().message(), HasSubstr("created by a newer tailguard"));
  // Nothing was changed.
  EXPECT_EQ(Scalar(Path(), "PRAGMA user_version"), store::SchemaVersion() + 1);
  EXPECT_EQ(Scalar(Path(), "SELECT COUNT(*) FROM sqlite_schema"), 0);
}

TEST_F(EventStoreMigrationTest, MissingDirectoryGivesAClearError) {
  const std::string path = (dir_ / "missing" / "events.db").string();
  absl::StatusOr<std::unique_ptr<EventStore>> s = EventStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr(path));
  EXPECT_THAT(s.status().message(), HasSubstr("directory"));
  EXPECT_THAT(s.status().message(), HasSubstr("does not exist"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "missing"));
}

// ---------------------------------------------------------------------------------------------
// Alert episodes

using EventStoreAlertTest = StoreTest;

TEST_F(EventStoreAlertTest, EpisodeFromPreAlertThroughResolve) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  AlertRow r = Only(*s);
  EXPECT_GT(r.id, 0);
  EXPECT_EQ(r.rule, kRule);
  EXPECT_EQ(r.series, SeriesKey());
  EXPECT_EQ(r.metric, kMetric);
  EXPECT_EQ(r.labels, SeriesLabels());
  EXPECT_EQ(r.stat, "p99");
  EXPECT_EQ(r.state, EpisodeState::kPreAlert);
  EXPECT_EQ(r.tier, 0);
  EXPECT_EQ(r.severity, "warning");
  EXPECT_EQ(r.started_at, T0());
  EXPECT_FALSE(r.fired_at.has_value());
  EXPECT_TRUE(r.active());

  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kFire, T0() + seconds(30), 0, 0)));
  r = Only(*s);
  EXPECT_EQ(r.state, EpisodeState::kAlert);
  EXPECT_EQ(r.fired_at, T0() + seconds(30));

  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kEscalate, T0() + seconds(60), 0, 2)));
  r = Only(*s);
  EXPECT_EQ(r.tier, 2);
  EXPECT_EQ(r.severity, "emergency");
  EXPECT_DOUBLE_EQ(r.value, 0.17);
  EXPECT_EQ(r.fired_at, T0() + seconds(30));  // kept

  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kDeescalate, T0() + seconds(120), 2, 1)));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kResolve, T0() + minutes(4), 1, -1)));
  r = Only(*s);
  EXPECT_EQ(r.state, EpisodeState::kResolved);
  EXPECT_EQ(r.tier, 1);
  EXPECT_EQ(r.ended_at, T0() + minutes(4));
  EXPECT_EQ(r.updated_at, T0() + minutes(4));
  EXPECT_FALSE(r.active());
  EXPECT_TRUE(List(*s, {.active_only = true}).empty());

  absl::StatusOr<AlertDetail> d = s->GetAlert(r.id);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(Kinds(d->timeline),
              ElementsAre("pre_alert", "fire", "escalate", "deescalate", "resolve"));
  const TimelineEntry& fire = d->timeline[1];
  EXPECT_EQ(fire.type, TimelineType::kTransition);
  EXPECT_EQ(fire.alert_id, r.id);
  EXPECT_EQ(fire.from_state, "pre_alert");
  EXPECT_EQ(fire.to_state, "alert");
  EXPECT_EQ(fire.time, T0() + seconds(30));
  EXPECT_THAT(fire.actions, ElementsAre("degrade"));
  EXPECT_EQ(d->timeline[4].from_tier, 1);
  EXPECT_EQ(d->timeline[4].to_tier, -1);
}

TEST_F(EventStoreAlertTest, CancelEndsAnEpisodeThatNeverFired) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kCancel, T0() + seconds(5), 0, -1)));
  AlertRow r = Only(*s);
  EXPECT_EQ(r.state, EpisodeState::kCancelled);
  EXPECT_FALSE(r.fired_at.has_value());
  EXPECT_EQ(r.ended_at, T0() + seconds(5));
}

TEST_F(EventStoreAlertTest, EachPreAlertStartsANewEpisode) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kCancel, T0() + seconds(5), 0, -1)));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0() + seconds(10), -1, 0)));
  // A second series of the same rule is its own episode.
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0() + seconds(11), -1, 0, "fraud")));
  std::vector<AlertRow> rows = List(*s);
  ASSERT_EQ(rows.size(), 3u);  // newest first
  EXPECT_EQ(rows[0].series, SeriesKey("fraud"));
  EXPECT_EQ(rows[1].started_at, T0() + seconds(10));
  EXPECT_EQ(rows[1].state, EpisodeState::kPreAlert);
  EXPECT_EQ(rows[2].state, EpisodeState::kCancelled);
  EXPECT_NE(rows[1].id, rows[2].id);
}

TEST_F(EventStoreAlertTest, APreAlertWhileTheStoreHoldsAnActiveEpisodeAbandonsIt) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0() + minutes(1), -1, 0)));
  std::vector<AlertRow> rows = List(*s);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].state, EpisodeState::kPreAlert);
  EXPECT_EQ(rows[1].state, EpisodeState::kAbandoned);
  EXPECT_EQ(rows[1].ended_at, T0() + minutes(1));
}

TEST_F(EventStoreAlertTest, FireWithoutPreAlertCreatesTheEpisode) {
  std::unique_ptr<EventStore> s = OpenStore();
  TransitionRow fire = Event(AlertEventKind::kFire, T0() + seconds(30), 0, 0);
  fire.breach_start = T0();
  ASSERT_OK(s->RecordEvent(fire));
  AlertRow r = Only(*s);
  EXPECT_EQ(r.state, EpisodeState::kAlert);
  EXPECT_EQ(r.started_at, T0());
  EXPECT_EQ(r.fired_at, T0() + seconds(30));
}

TEST_F(EventStoreAlertTest, ResolveWithoutEpisodeIsStillInTheTimeline) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kResolve, T0(), 0, -1)));
  EXPECT_TRUE(List(*s).empty());
  absl::StatusOr<std::vector<TimelineEntry>> t = s->ListTimeline(T0(), 0);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].alert_id, 0);
  EXPECT_EQ((*t)[0].kind, "resolve");
}

// The store checks a row's state against its change; the alert side's rows always agree.
TEST_F(EventStoreAlertTest, AStateThatDoesNotGoWithTheChangeIsRefused) {
  std::unique_ptr<EventStore> s = OpenStore();
  TransitionRow end = Event(AlertEventKind::kResolve, T0(), 0, -1);
  end.state = EpisodeState::kAlert;
  EXPECT_EQ(s->RecordEvent(end).code(), absl::StatusCode::kInvalidArgument);
  TransitionRow start = Event(AlertEventKind::kPreAlert, T0(), -1, 0);
  start.state = EpisodeState::kAbandoned;
  EXPECT_EQ(s->RecordEvent(start).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(List(*s).empty());
  EXPECT_TRUE(s->ListTimeline(WallTime{}, 0)->empty());
}

// No data is not the end of an episode (issue 16): the episode stays in Alert, its value
// unknown, the no_data transition in its timeline.
TEST_F(EventStoreAlertTest, NoDataKeepsTheEpisodeOpen) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kFire, T0() + seconds(30), 0, 0)));
  TransitionRow gap = Event(AlertEventKind::kNoData, T0() + minutes(2), 0, 0);
  gap.value = std::nan("");
  ASSERT_OK(s->RecordEvent(gap));
  AlertRow r = Only(*s);
  EXPECT_EQ(r.state, EpisodeState::kAlert);
  EXPECT_TRUE(r.active());
  EXPECT_FALSE(r.ended_at.has_value());
  EXPECT_TRUE(std::isnan(r.value));
  EXPECT_EQ(r.updated_at, T0() + minutes(2));
  absl::StatusOr<AlertDetail> d = s->GetAlert(r.id);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_THAT(Kinds(d->timeline), ElementsAre("pre_alert", "fire", "no_data"));
}

TEST_F(EventStoreAlertTest, MissingStatisticIsStoredAsNull) {
  std::unique_ptr<EventStore> s = OpenStore();
  TransitionRow e = Event(AlertEventKind::kPreAlert, T0(), -1, 0);
  e.value = std::nan("");
  e.threshold = std::nan("");
  ASSERT_OK(s->RecordEvent(e));
  AlertRow r = Only(*s);
  EXPECT_TRUE(std::isnan(r.value));
  EXPECT_TRUE(std::isnan(r.threshold));
  EXPECT_EQ(Scalar(Path(), "SELECT COUNT(*) FROM alerts WHERE value IS NULL"), 1);
}

// The store keeps what it is given: a statistic and a unit as their names, whatever they are
// (a newer build's statistic reads back as its name, not as an error).
TEST_F(EventStoreAlertTest, StatisticAndUnitAreKeptAsGiven) {
  std::unique_ptr<EventStore> s = OpenStore();
  TransitionRow e = Event(AlertEventKind::kPreAlert, T0(), -1, 0);
  e.stat = "p42";
  e.unit = "bytes";
  ASSERT_OK(s->RecordEvent(e));
  AlertRow r = Only(*s);
  EXPECT_EQ(r.stat, "p42");
  EXPECT_EQ(r.unit, "bytes");
  // Rows the alert side makes carry the series' unit; a latency's is "seconds".
  EXPECT_EQ(Event(AlertEventKind::kPreAlert, T0(), -1, 0).unit, "seconds");
}

TEST_F(EventStoreAlertTest, LabelsWithQuotesAndNewlinesRoundTrip) {
  std::unique_ptr<EventStore> s = OpenStore();
  TransitionRow e = Event(AlertEventKind::kPreAlert, T0(), -1, 0);
  e.labels = {{"model", "a\"b\\c\nd,e}"}, {"route", ""}, {"stage", "total"}};
  ASSERT_OK(s->RecordEvent(e));
  EXPECT_EQ(Only(*s).labels, e.labels);
}

TEST_F(EventStoreAlertTest, ListFilters) {
  std::unique_ptr<EventStore> s = OpenStore();
  // rank: ended at T0+1m; fraud: ended at T0+10m; search: active; other rule: active.
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0, "rank")));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kCancel, T0() + minutes(1), 0, -1, "rank")));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0() + minutes(2), -1, 0, "fraud")));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kCancel, T0() + minutes(10), 0, -1, "fraud")));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0() + minutes(3), -1, 0, "search")));
  TransitionRow other = Event(AlertEventKind::kPreAlert, T0() + minutes(4), -1, 0, "rank");
  other.rule = "error_ratio";
  ASSERT_OK(s->RecordEvent(other));

  auto series = [](const std::vector<AlertRow>& rows) {
    std::vector<std::string> out;
    for (const AlertRow& r : rows) out.push_back(Cat(r.rule, " ", r.labels[0].second));
    return out;
  };
  EXPECT_THAT(series(List(*s)), ElementsAre("error_ratio rank", Cat(kRule, " search"),
                                            Cat(kRule, " fraud"), Cat(kRule, " rank")));
  EXPECT_THAT(series(List(*s, {.active_only = true})),
              ElementsAre("error_ratio rank", Cat(kRule, " search")));
  EXPECT_THAT(series(List(*s, {.rule = "error_ratio"})), ElementsAre("error_ratio rank"));
  EXPECT_THAT(series(List(*s, {.since = T0() + minutes(5)})),
              ElementsAre("error_ratio rank", Cat(kRule, " search"), Cat(kRule, " fraud")));
  EXPECT_THAT(series(List(*s, {.limit = 2})),
              ElementsAre("error_ratio rank", Cat(kRule, " search")));
}

TEST_F(EventStoreAlertTest, EndActiveAlertsAbandonsOnlyActiveOnes) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0, "rank")));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kCancel, T0() + minutes(1), 0, -1, "rank")));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0, "fraud")));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kFire, T0() + seconds(30), 0, 0, "fraud")));
  absl::StatusOr<int> n = s->EndActiveAlerts(T0() + hours(1));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  EXPECT_TRUE(List(*s, {.active_only = true}).empty());
  EXPECT_EQ(List(*s)[0].state, EpisodeState::kAbandoned);
}

// ---------------------------------------------------------------------------------------------
// Acknowledgements, archiving, annotations

using EventStoreAckTest = StoreTest;

TEST_F(EventStoreAckTest, AckRecordsWhoWhenAndWhy) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kFire, T0() + seconds(30), 0, 0)));
  const int64_t id = Only(*s).id;
  ASSERT_OK(s->Ack(id, "alice", "looking at the feature store", T0() + minutes(1)));
  AlertRow r = Only(*s);
  EXPECT_EQ(r.acked_by, "alice");
  EXPECT_EQ(r.acked_at, T0() + minutes(1));
  EXPECT_EQ(r.ack_comment, "looking at the feature store");

  absl::Status again = s->Ack(id, "bob", "", T0() + minutes(2));
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("alice"));
  EXPECT_EQ(s->Ack(id + 100, "bob", "", T0()).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s->Ack(id, "", "", T0()).code(), absl::StatusCode::kInvalidArgument);

  absl::StatusOr<AlertDetail> d = s->GetAlert(id);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->timeline.size(), 3u);
  EXPECT_EQ(d->timeline[2].type, TimelineType::kAck);
  EXPECT_EQ(d->timeline[2].detail, "alice: looking at the feature store");
  EXPECT_EQ(Only(*s).acked_by, "alice");  // unchanged by the failed calls
}

TEST_F(EventStoreAckTest, OnlyEndedAlertsCanBeArchived) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  const int64_t id = Only(*s).id;
  absl::Status active = s->Archive(id, T0() + minutes(1));
  EXPECT_EQ(active.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(active.message(), HasSubstr("still active"));
  EXPECT_EQ(s->Archive(id + 1, T0()).code(), absl::StatusCode::kNotFound);

  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kCancel, T0() + minutes(1), 0, -1)));
  ASSERT_OK(s->Archive(id, T0() + minutes(2)));
  ASSERT_OK(s->Archive(id, T0() + minutes(3)));  // no change
  EXPECT_TRUE(List(*s).empty());
  std::vector<AlertRow> all = List(*s, {.include_archived = true});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].archived_at, T0() + minutes(2));
  // GetAlert still finds it.
  EXPECT_TRUE(s->GetAlert(id).ok());
}

TEST_F(EventStoreAckTest, ArchiveEndedBeforeArchivesOldEndedEpisodes) {
  std::unique_ptr<EventStore> s = OpenStore();
  const std::vector<std::pair<std::string, int>> ended = {{"a", 1}, {"b", 2}, {"c", 30}};
  for (const auto& [model, minute] : ended) {
    ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0, model)));
    ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kCancel, T0() + minutes(minute), 0, -1, model)));
  }
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0, "active")));

  absl::StatusOr<int> n = s->ArchiveEndedBefore(T0() + minutes(10), T0() + hours(1));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 2);
  n = s->ArchiveEndedBefore(T0() + minutes(10), T0() + hours(2));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0);
  std::vector<AlertRow> visible = List(*s);
  ASSERT_EQ(visible.size(), 2u);
  for (const AlertRow& r : List(*s, {.include_archived = true})) {
    if (r.archived_at.has_value()) {
      EXPECT_EQ(*r.archived_at, T0() + hours(1));
    }
  }
}

TEST_F(EventStoreAckTest, Annotations) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  const int64_t id = Only(*s).id;
  absl::StatusOr<int64_t> active = s->AnnotateActive(
      kRule, SeriesKey(), "root_cause", "dependency: redis fail-over", T0() + seconds(40));
  ASSERT_TRUE(active.ok()) << active.status();
  EXPECT_EQ(*active, id);
  ASSERT_TRUE(s->Annotate(id, "note", "paged the feature team", T0() + seconds(50)).ok());
  EXPECT_EQ(s->Annotate(id + 1, "note", "x", T0()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s->Annotate(id, "", "x", T0()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Annotate(id, "note", "", T0()).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s->AnnotateActive(kRule, SeriesKey("fraud"), "note", "x", T0()).status().code(),
            absl::StatusCode::kNotFound);

  absl::StatusOr<AlertDetail> d = s->GetAlert(id);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->annotations.size(), 2u);
  EXPECT_EQ(d->annotations[0].kind, "root_cause");
  EXPECT_EQ(d->annotations[0].text, "dependency: redis fail-over");
  EXPECT_EQ(d->annotations[0].time, T0() + seconds(40));
  EXPECT_EQ(d->annotations[1].kind, "note");
}

TEST_F(EventStoreAckTest, DiagnosesRoundTripWithTheirCausesAndChanges) {
  std::unique_ptr<EventStore> s = OpenStore();
  EXPECT_EQ(s->RecordDiagnosis(kRule, SeriesKey(), {}).status().code(),
            absl::StatusCode::kNotFound);  // never alerted
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kFire, T0() + seconds(5), 0, 0)));
  const int64_t id = Only(*s).id;
  DiagnosisRow d;
  d.time = T0() + seconds(5);
  d.quadrant = "dependency";
  d.summary = "dependency: feature rose from 0.005 to 0.12";
  d.changes = {{T0(), "model", "model=rank", "default version v1 -> v2:\tgraph a -> b"}};
  d.symptoms = {"tailguard_request_duration_seconds{route=\"rank\",stage=\"total\"}"};
  d.series_considered = 12;
  d.seconds = 0.004;
  DiagnosisCauseRow c = FeatureCause();
  d.causes.push_back(c);
  c.rank = 2;
  c.series = "infer";
  c.explained = std::nan("");
  c.points.clear();
  d.causes.push_back(c);
  absl::StatusOr<int64_t> got = s->RecordDiagnosis(kRule, SeriesKey(), d);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, id);
  // After the episode ended, the next diagnosis still goes to it (the latest of the pair).
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kResolve, T0() + minutes(1), 0, -1)));
  d.time = T0() + minutes(1);
  d.summary = "later";
  d.causes.clear();
  ASSERT_TRUE(s->RecordDiagnosis(kRule, SeriesKey(), d).ok());

  absl::StatusOr<std::vector<DiagnosisRow>> list = s->ListDiagnoses(id);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  const DiagnosisRow& first = (*list)[0];
  EXPECT_EQ(first.alert_id, id);
  EXPECT_EQ(first.summary, "dependency: feature rose from 0.005 to 0.12");
  ASSERT_EQ(first.changes.size(), 1u);
  EXPECT_EQ(first.changes[0].time, T0());
  EXPECT_EQ(first.changes[0].what, "default version v1 -> v2: graph a -> b");  // tab: a space
  EXPECT_EQ(first.symptoms, d.symptoms);
  EXPECT_EQ(first.series_considered, 12);
  ASSERT_EQ(first.causes.size(), 2u);
  EXPECT_EQ(first.causes[0].series, "feature");
  EXPECT_DOUBLE_EQ(first.causes[0].peak, 0.12);
  EXPECT_DOUBLE_EQ(first.causes[0].explained, 0.95);
  EXPECT_EQ(first.causes[0].onset, T0() + seconds(1));
  ASSERT_EQ(first.causes[0].points.size(), 3u);
  EXPECT_DOUBLE_EQ(first.causes[0].points[2].second, 0.12);
  EXPECT_TRUE(std::isnan(first.causes[1].explained));
  EXPECT_TRUE(first.causes[1].points.empty());
  EXPECT_EQ((*list)[1].summary, "later");
  EXPECT_TRUE((*list)[1].causes.empty());
  EXPECT_EQ(s->ListDiagnoses(id + 1).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(EventStoreAckTest, GetAlertOfUnknownIdIsNotFound) {
  std::unique_ptr<EventStore> s = OpenStore();
  absl::StatusOr<AlertDetail> d = s->GetAlert(42);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(d.status().message(), HasSubstr("alert 42"));
}

// ---------------------------------------------------------------------------------------------
// Timeline

using EventStoreTimelineTest = StoreTest;

TEST_F(EventStoreTimelineTest, ActionsAndMutedNotificationsJoinTheTimeline) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  const TransitionRow fire = Event(AlertEventKind::kFire, T0() + seconds(30), 0, 2);
  ASSERT_OK(s->RecordEvent(fire));
  ASSERT_OK(s->RecordAction(T0() + seconds(30), "degrade", fire, "breaker opened: shed 20%"));
  ASSERT_OK(s->RecordMuted(T0() + seconds(60), kRule, SeriesKey(), "silence 3"));
  ASSERT_OK(s->RecordMuted(T0() + seconds(61), "other", SeriesKey(), "silence 3"));

  absl::StatusOr<std::vector<TimelineEntry>> t = s->ListTimeline(T0(), 0);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 5u);
  EXPECT_EQ((*t)[2].type, TimelineType::kAction);
  EXPECT_EQ((*t)[2].kind, "degrade");
  EXPECT_EQ((*t)[2].detail, "breaker opened: shed 20%");
  EXPECT_EQ((*t)[2].to_tier, 2);
  EXPECT_EQ((*t)[2].alert_id, (*t)[0].alert_id);
  EXPECT_EQ((*t)[3].type, TimelineType::kMuted);
  EXPECT_EQ((*t)[3].detail, "silence 3");
  EXPECT_EQ((*t)[3].alert_id, (*t)[0].alert_id);
  EXPECT_EQ((*t)[4].alert_id, 0);  // no such episode

  t = s->ListTimeline(T0() + seconds(30), 2);
  ASSERT_TRUE(t.ok());
  EXPECT_THAT(Kinds(*t), ElementsAre("fire", "degrade"));

  absl::StatusOr<AlertDetail> d = s->GetAlert((*t)[0].alert_id);
  ASSERT_TRUE(d.ok());
  EXPECT_THAT(Kinds(d->timeline), ElementsAre("pre_alert", "fire", "degrade", "muted"));
}

// ---------------------------------------------------------------------------------------------
// The outbox

using EventStoreOutboxTest = StoreTest;

TEST_F(EventStoreOutboxTest, EnqueueStoresTheNotificationLinkedToItsAlerts) {
  std::unique_ptr<EventStore> s = OpenStore();
  const WallTime fired = T0() + seconds(30);
  for (const char* m : {"rank", "fraud"}) {
    ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0, m)));
    ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kFire, fired, 0, 0, m)));
  }
  const NotificationRow n = Note("wecom/1", T0() + minutes(1), {"rank", "fraud"}, fired);
  bool inserted = false;
  absl::StatusOr<int64_t> id = s->Enqueue(n, Request(n), &inserted);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(inserted);

  std::vector<AlertRow> rows = List(*s);
  ASSERT_EQ(rows.size(), 2u);
  for (const AlertRow& r : rows) {
    absl::StatusOr<AlertDetail> d = s->GetAlert(r.id);
    ASSERT_TRUE(d.ok());
    ASSERT_EQ(d->notifications.size(), 1u);
    EXPECT_EQ(d->notifications[0].outbox.id, *id);
    EXPECT_EQ(d->notifications[0].outbox.state, State::kPending);
    EXPECT_EQ(d->notifications[0].status, "firing");
    EXPECT_EQ(d->notifications[0].severity, "warning");
  }

  // The resolved message links to the same, now ended, episode.
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kResolve, T0() + minutes(5), 0, -1, "rank")));
  const NotificationRow resolved =
      Note("wecom/2", T0() + minutes(6), {"rank"}, fired, NotifyStatus::kResolved);
  ASSERT_TRUE(s->Enqueue(resolved, Request(resolved)).ok());
  const int64_t rank = rows[0].series == SeriesKey("rank") ? rows[0].id : rows[1].id;
  absl::StatusOr<AlertDetail> d = s->GetAlert(rank);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->notifications.size(), 2u);
  EXPECT_EQ(d->notifications[1].status, "resolved");
  EXPECT_EQ(d->notifications[1].outbox.status, "resolved");
}

TEST_F(EventStoreOutboxTest, EnqueueIsIdempotentByKey) {
  std::unique_ptr<EventStore> s = OpenStore();
  const NotificationRow n = Note("wecom/g/1", T0(), {"rank"});
  bool inserted = false;
  absl::StatusOr<int64_t> first = s->Enqueue(n, Request(n), &inserted);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(inserted);
  OutboxItem changed = Request(n);
  changed.body = "something else";
  absl::StatusOr<int64_t> second = s->Enqueue(n, changed, &inserted);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(inserted);
  EXPECT_EQ(*first, *second);
  absl::StatusOr<std::vector<OutboxItem>> all = s->ListOutbox({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].body, Request(n).body);
  EXPECT_EQ(Scalar(Path(), "SELECT COUNT(*) FROM outbox_alerts"), 1);
}

TEST_F(EventStoreOutboxTest, ReceiverWithoutTargetIsRecordedAsSkipped) {
  std::unique_ptr<EventStore> s = OpenStore();
  const NotificationRow n = Note("default/1", T0(), {"rank"});
  OutboxItem item;
  item.summary = "1 alert firing";
  absl::StatusOr<int64_t> id = s->Enqueue(n, item);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<std::vector<OutboxItem>> due = s->Due(T0() + hours(1), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_TRUE(due->empty());
  absl::StatusOr<std::optional<WallTime>> next = s->NextAttempt();
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->has_value());
  absl::StatusOr<std::vector<OutboxItem>> all = s->ListOutbox({});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  const OutboxItem& o = (*all)[0];
  EXPECT_EQ(o.state, State::kSkipped);
  EXPECT_EQ(o.receiver, "wecom");  // from the notification
  EXPECT_EQ(o.status, "firing");
  EXPECT_EQ(o.created, T0());
  EXPECT_EQ(o.summary, "1 alert firing");
  absl::StatusOr<store::OutboxStats> stats = s->CountOutbox();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->all.skipped, 1);
  EXPECT_EQ(stats->all.total(), 1);
}

TEST_F(EventStoreOutboxTest, EnqueueRejectsMissingKeyAndBadHeadersWithoutLeakingValues) {
  std::unique_ptr<EventStore> s = OpenStore();
  NotificationRow n = Note("", T0(), {"rank"});
  EXPECT_EQ(s->Enqueue(n, Request(n)).status().code(), absl::StatusCode::kInvalidArgument);

  n.idempotency_key = "k";
  OutboxItem item = Request(n, "https://hooks.example.com/x?key=topsecret");
  item.headers.push_back({"X-Token", "secret-value\r\nInjected: 1"});
  absl::Status bad = s->Enqueue(n, item).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("X-Token"));
  EXPECT_THAT(bad.message(), Not(HasSubstr("secret-value")));
  EXPECT_THAT(bad.message(), Not(HasSubstr("topsecret")));
  absl::StatusOr<std::vector<OutboxItem>> all = s->ListOutbox({});
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST_F(EventStoreOutboxTest, RequestIsStoredExactly) {
  std::unique_ptr<EventStore> s = OpenStore();
  const NotificationRow n = Note("k", T0(), {"rank"});
  OutboxItem item = Request(n, "https://hooks.example.com/x?key=topsecret");
  item.method = "PUT";
  item.headers.push_back({"X-Empty", ""});
  item.headers.push_back({"X-Spaces", "  padded: value  "});
  item.body = std::string("binary\0body\xff\n", 14);
  ASSERT_TRUE(s->Enqueue(n, item).ok());
  absl::StatusOr<std::vector<OutboxItem>> due = s->Due(T0(), 1);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  const OutboxItem& o = (*due)[0];
  EXPECT_EQ(o.method, "PUT");
  EXPECT_EQ(o.url, item.url);
  EXPECT_EQ(o.headers, item.headers);
  EXPECT_EQ(o.body, item.body);
  EXPECT_EQ(o.idempotency_key, "k");
  EXPECT_EQ(o.group_key, n.group_key);
  EXPECT_EQ(o.next_attempt, T0());
  EXPECT_EQ(o.attempts, 0);
}

TEST_F(EventStoreOutboxTest, DueIsOldestFirstAndRespectsTimeAndLimit) {
  std::unique_ptr<EventStore> s = OpenStore();
  for (auto [key, offset] :
       std::vector<std::pair<std::string, int>>{{"c", 2}, {"a", 0}, {"b", 1}}) {
    const NotificationRow n = Note(key, T0() + seconds(offset), {"rank"});
    ASSERT_TRUE(s->Enqueue(n, Request(n)).ok());
  }
  absl::StatusOr<std::vector<OutboxItem>> due = s->Due(T0() + seconds(1), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_THAT(Keys(*due), ElementsAre("a", "b"));
  due = s->Due(T0() + seconds(10), 2);
  ASSERT_TRUE(due.ok());
  EXPECT_THAT(Keys(*due), ElementsAre("a", "b"));
  due = s->Due(T0() - seconds(1), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_TRUE(due->empty());
  EXPECT_EQ(s->Due(T0(), 0).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::optional<WallTime>> next = s->NextAttempt();
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, T0());
}

TEST_F(EventStoreOutboxTest, DueGivesOnlyTheOldestPendingMessageOfAGroup) {
  std::unique_ptr<EventStore> s = OpenStore();
  std::vector<int64_t> ids;
  for (auto [key, offset] : std::vector<std::pair<std::string, int>>{
           {"firing", 0}, {"resolved", 1}, {"other-receiver", 2}}) {
    NotificationRow n = Note(key, T0() + seconds(offset), {"rank"});
    n.group_key = "{alertname=\"g\"}";
    if (key == "other-receiver") n.receiver = "sms";
    absl::StatusOr<int64_t> id = s->Enqueue(n, Request(n));
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  // firing waits for its retry; resolved, due, waits behind it. Another receiver's does not.
  ASSERT_OK(s->MarkRetry(ids[0], T0() + seconds(30), 503, "HTTP 503: busy"));
  absl::StatusOr<std::vector<OutboxItem>> due = s->Due(T0() + seconds(10), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_THAT(Keys(*due), ElementsAre("other-receiver"));
  absl::StatusOr<std::optional<WallTime>> next = s->NextAttempt(std::vector<std::string>{"sms"});
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, T0() + seconds(30));  // firing's retry, not resolved's time
  ASSERT_OK(s->MarkDelivered(ids[0], T0() + seconds(30), 200));
  due = s->Due(T0() + seconds(30), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_THAT(Keys(*due), ElementsAre("resolved", "other-receiver"));
}

TEST_F(EventStoreOutboxTest, RetryDeliverAndGiveUp) {
  std::unique_ptr<EventStore> s = OpenStore();
  std::vector<int64_t> ids;
  for (const char* key : {"a", "b", "c"}) {
    NotificationRow n = Note(key, T0(), {"rank"});
    if (std::string_view(key) == "c") n.receiver = "sms";
    absl::StatusOr<int64_t> id = s->Enqueue(n, Request(n));
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
  }
  // a: 503, retry in 10 s; then delivered.
  ASSERT_OK(s->MarkRetry(ids[0], T0() + seconds(10), 503, "HTTP 503: busy"));
  absl::StatusOr<std::vector<OutboxItem>> due = s->Due(T0() + seconds(5), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_THAT(Keys(*due), ElementsAre("b", "c"));
  due = s->Due(T0() + seconds(10), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_THAT(Keys(*due), ElementsAre("a", "b", "c"));
  EXPECT_EQ((*due)[0].attempts, 1);
  EXPECT_EQ((*due)[0].last_http_status, 503);
  EXPECT_EQ((*due)[0].last_error, "HTTP 503: busy");
  EXPECT_EQ((*due)[0].next_attempt, T0() + seconds(10));
  ASSERT_OK(s->MarkDelivered(ids[0], T0() + seconds(11), 200));
  // b: gave up.
  ASSERT_OK(s->MarkFailed(ids[1], T0() + seconds(12), 400, "HTTP 400: bad request"));

  absl::StatusOr<std::optional<WallTime>> next = s->NextAttempt();
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, T0());  // c
  due = s->Due(T0() + hours(1), 10);
  ASSERT_TRUE(due.ok());
  EXPECT_THAT(Keys(*due), ElementsAre("c"));

  absl::StatusOr<std::vector<OutboxItem>> delivered = s->ListOutbox({.state = State::kDelivered});
  ASSERT_TRUE(delivered.ok());
  ASSERT_EQ(delivered->size(), 1u);
  EXPECT_EQ((*delivered)[0].attempts, 2);
  EXPECT_EQ((*delivered)[0].delivered_at, T0() + seconds(11));
  EXPECT_EQ((*delivered)[0].last_http_status, 200);
  EXPECT_EQ((*delivered)[0].last_error, "");
  absl::StatusOr<std::vector<OutboxItem>> failed = s->ListOutbox({.state = State::kFailed});
  ASSERT_TRUE(failed.ok());
  ASSERT_EQ(failed->size(), 1u);
  EXPECT_EQ((*failed)[0].failed_at, T0() + seconds(12));
  EXPECT_EQ((*failed)[0].last_error, "HTTP 400: bad request");
  absl::StatusOr<std::vector<OutboxItem>> sms = s->ListOutbox({.receiver = "sms"});
  ASSERT_TRUE(sms.ok());
  EXPECT_THAT(Keys(*sms), ElementsAre("c"));
  absl::StatusOr<std::vector<OutboxItem>> newest = s->ListOutbox({.limit = 2});
  ASSERT_TRUE(newest.ok());
  EXPECT_THAT(Keys(*newest), ElementsAre("c", "b"));

  // Only pending items take outcomes.
  absl::Status twice = s->MarkDelivered(ids[0], T0() + seconds(20), 200);
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(twice.message(), HasSubstr("delivered"));
  EXPECT_EQ(s->MarkRetry(ids[1], T0(), 0, "").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s->MarkFailed(999, T0(), 0, "").code(), absl::StatusCode::kNotFound);

  absl::StatusOr<store::OutboxStats> stats = s->CountOutbox();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->all.pending, 1);
  EXPECT_EQ(stats->all.delivered, 1);
  EXPECT_EQ(stats->all.failed, 1);
  EXPECT_EQ(stats->all.skipped, 0);
  EXPECT_EQ(stats->by_receiver["wecom"].total(), 2);
  EXPECT_EQ(stats->by_receiver["sms"].pending, 1);
  EXPECT_EQ(stats->oldest_pending, T0());
}

TEST_F(EventStoreOutboxTest, PendingItemsSurviveARestart) {
  const NotificationRow n = Note("wecom/g/7", T0(), {"rank"});
  {
    std::unique_ptr<EventStore> s = OpenStore();
    ASSERT_TRUE(s->Enqueue(n, Request(n)).ok());
    // Closed without delivering: the process "stops" here.
  }
  std::unique_ptr<EventStore> s = OpenStore();
  absl::StatusOr<std::vector<OutboxItem>> due = s->Due(T0() + seconds(1), 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].idempotency_key, "wecom/g/7");
  EXPECT_EQ((*due)[0].body, Request(n).body);
  EXPECT_EQ((*due)[0].headers, Request(n).headers);
  // Re-enqueueing the same notification after the restart does not duplicate it.
  bool inserted = true;
  ASSERT_TRUE(s->Enqueue(n, Request(n), &inserted).ok());
  EXPECT_FALSE(inserted);
}

TEST_F(EventStoreOutboxTest, TwoStoresOnOneFileSeeEachOthersWrites) {
  std::unique_ptr<EventStore> loop = OpenStore();
  std::unique_ptr<EventStore> cli = OpenStore();
  ASSERT_NE(loop, nullptr);
  ASSERT_NE(cli, nullptr);
  ASSERT_OK(loop->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  const NotificationRow n = Note("k", T0(), {"rank"});
  absl::StatusOr<int64_t> id = loop->Enqueue(n, Request(n));
  ASSERT_TRUE(id.ok());

  EXPECT_EQ(List(*cli).size(), 1u);
  absl::StatusOr<std::vector<OutboxItem>> due = cli->Due(T0(), 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 1u);
  ASSERT_OK(cli->MarkDelivered(*id, T0() + seconds(1), 200));
  ASSERT_OK(cli->Ack(List(*cli)[0].id, "alice", "", T0() + seconds(2)));

  EXPECT_EQ(loop->MarkDelivered(*id, T0() + seconds(1), 200).code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<OutboxItem>> all = loop->ListOutbox({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[0].state, State::kDelivered);
  EXPECT_EQ(List(*loop)[0].acked_by, "alice");
}

TEST_F(EventStoreOutboxTest, ConcurrentThreadsShareOneStore) {
  std::unique_ptr<EventStore> s = OpenStore();
  constexpr int kThreads = 4;
  constexpr int kEach = 50;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const NotificationRow n = Note(Cat("t", t, "/", i), T0() + seconds(i), {"rank"});
        if (!s->Enqueue(n, Request(n)).ok()) ++failures;
        if (!s->Due(T0() + seconds(i), 5).ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  absl::StatusOr<store::OutboxStats> stats = s->CountOutbox();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->all.pending, kThreads * kEach);
}

// ---------------------------------------------------------------------------------------------
// Silences (their matchers are checked and matched on the alert side: notify/silences_test.cc)

using EventStoreSilenceTest = StoreTest;

TEST_F(EventStoreSilenceTest, AddValidates) {
  std::unique_ptr<EventStore> s = OpenStore();
  auto code = [&](const Silence& x) { return s->AddSilence(x).status().code(); };
  EXPECT_EQ(code(MakeSilence("{model=\"x\"}", T0(), T0())), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(MakeSilence("{model=\"x\"}", T0(), T0() - seconds(1))),
            absl::StatusCode::kInvalidArgument);
  Silence no_author = MakeSilence("{model=\"x\"}");
  no_author.created_by = " ";
  EXPECT_EQ(code(no_author), absl::StatusCode::kInvalidArgument);
  Silence no_comment = MakeSilence("{model=\"x\"}");
  no_comment.comment = "";
  EXPECT_EQ(code(no_comment), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<Silence>> all = s->ListSilences(T0(), true);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());

  absl::StatusOr<int64_t> id = s->AddSilence(MakeSilence("{model=\"rank\"}"));
  ASSERT_TRUE(id.ok()) << id.status();
  all = s->ListSilences(T0(), false);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].id, *id);
  EXPECT_EQ((*all)[0].matchers, "{model=\"rank\"}");
  EXPECT_EQ((*all)[0].created_by, "alice");
  EXPECT_EQ((*all)[0].comment, "model rollout");
  EXPECT_EQ((*all)[0].created_at, T0());  // defaults to starts_at
}

TEST_F(EventStoreSilenceTest, ExpiringEndsASilence) {
  std::unique_ptr<EventStore> s = OpenStore();
  absl::StatusOr<int64_t> now_id = s->AddSilence(MakeSilence("{model=\"rank\"}"));
  absl::StatusOr<int64_t> later_id =
      s->AddSilence(MakeSilence("{model=\"fraud\"}", T0() + hours(2), T0() + hours(3)));
  ASSERT_TRUE(now_id.ok() && later_id.ok());
  // Silences that have not started yet are listed too.
  absl::StatusOr<std::vector<Silence>> current = s->ListSilences(T0() + minutes(1), false);
  ASSERT_TRUE(current.ok());
  EXPECT_EQ(current->size(), 2u);

  const WallTime now = T0() + minutes(10);
  ASSERT_OK(s->ExpireSilence(*now_id, now));
  ASSERT_OK(s->ExpireSilence(*later_id, now));
  absl::Status again = s->ExpireSilence(*now_id, now + seconds(1));
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.message(), HasSubstr("expired"));
  EXPECT_EQ(s->ExpireSilence(99, now).code(), absl::StatusCode::kNotFound);

  current = s->ListSilences(now, false);
  ASSERT_TRUE(current.ok());
  EXPECT_TRUE(current->empty());
  absl::StatusOr<std::vector<Silence>> all = s->ListSilences(now, true);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, *later_id);  // newest first
  EXPECT_EQ((*all)[0].starts_at, now);
  EXPECT_EQ((*all)[0].ends_at, now);
  EXPECT_EQ((*all)[1].starts_at, T0());
  EXPECT_EQ((*all)[1].ends_at, now);
}

// ---------------------------------------------------------------------------------------------
// Engine state and transactions

using EventStoreStateTest = StoreTest;

TEST_F(EventStoreStateTest, EngineStateRoundTrip) {
  std::unique_ptr<EventStore> s = OpenStore();
  absl::StatusOr<std::optional<std::string>> state = s->LoadEngineState();
  ASSERT_TRUE(state.ok());
  EXPECT_FALSE(state->has_value());
  const std::string blob("\x01\x00\xffstate", 8);
  ASSERT_OK(s->SaveEngineState(blob, T0()));
  ASSERT_OK(s->SaveEngineState(blob + "v2", T0() + seconds(1)));
  s.reset();
  s = OpenStore();
  state = s->LoadEngineState();
  ASSERT_TRUE(state.ok());
  ASSERT_TRUE(state->has_value());
  EXPECT_EQ(**state, blob + "v2");
  EXPECT_EQ(Scalar(Path(), "SELECT COUNT(*) FROM engine_state"), 1);
}

TEST_F(EventStoreStateTest, TransactionCommitsATickAtomically) {
  std::unique_ptr<EventStore> s = OpenStore();
  const NotificationRow n = Note("k", T0() + seconds(30), {"rank"}, T0() + seconds(30));
  ASSERT_OK(s->RunInTransaction([&]() -> absl::Status {
    if (absl::Status st = s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)); !st.ok()) {
      return st;
    }
    if (absl::Status st = s->RecordEvent(Event(AlertEventKind::kFire, T0() + seconds(30), 0, 0));
        !st.ok()) {
      return st;
    }
    if (absl::Status st = s->Enqueue(n, Request(n)).status(); !st.ok()) return st;
    return s->SaveEngineState("tick 30", T0() + seconds(30));
  }));
  EXPECT_EQ(List(*s).size(), 1u);
  absl::StatusOr<AlertDetail> d = s->GetAlert(List(*s)[0].id);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->notifications.size(), 1u);
  EXPECT_EQ(**s->LoadEngineState(), "tick 30");
}

TEST_F(EventStoreStateTest, FailedTransactionLeavesNothing) {
  std::unique_ptr<EventStore> s = OpenStore();
  const NotificationRow n = Note("k", T0(), {"rank"});
  absl::Status st = s->RunInTransaction([&]() -> absl::Status {
    EXPECT_TRUE(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)).ok());
    EXPECT_TRUE(s->Enqueue(n, Request(n)).ok());
    EXPECT_TRUE(s->SaveEngineState("tick", T0()).ok());
    EXPECT_TRUE(s->AddSilence(MakeSilence("{model=\"rank\"}")).ok());
    return absl::UnavailableError("the tick failed");
  });
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(List(*s, {.include_archived = true}).empty());
  EXPECT_TRUE(s->ListOutbox({})->empty());
  EXPECT_TRUE(s->ListTimeline(WallTime{}, 0)->empty());
  EXPECT_FALSE(s->LoadEngineState()->has_value());
  EXPECT_TRUE(s->ListSilences(T0(), true)->empty());
  // The store works normally afterwards.
  ASSERT_OK(s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0)));
  EXPECT_EQ(List(*s).size(), 1u);
}

TEST_F(EventStoreStateTest, AFailedCallInsideATransactionUndoesOnlyItself) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RunInTransaction([&]() -> absl::Status {
    EXPECT_EQ(s->Ack(7, "alice", "", T0()).code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(notify::AddSilence(*s, MakeSilence("{")).status().code(),
              absl::StatusCode::kInvalidArgument);
    return s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0));
  }));
  EXPECT_EQ(List(*s).size(), 1u);
}

TEST_F(EventStoreStateTest, NestedRunInTransaction) {
  std::unique_ptr<EventStore> s = OpenStore();
  ASSERT_OK(s->RunInTransaction([&]() -> absl::Status {
    EXPECT_FALSE(s->RunInTransaction([&]() -> absl::Status {
                    EXPECT_TRUE(s->SaveEngineState("inner", T0()).ok());
                    return absl::InternalError("inner fails");
                  }).ok());
    return s->RecordEvent(Event(AlertEventKind::kPreAlert, T0(), -1, 0));
  }));
  EXPECT_EQ(List(*s).size(), 1u);
  EXPECT_FALSE(s->LoadEngineState()->has_value());
}

}  // namespace
}  // namespace tailguard::store_test
