// The history store: minutes written and read back by range, series listing, heatmap rows,
// replacement, pruning, reopening, the migration from schema version 2, and sharing the file
// with the event store.
#include "store/history_store.h"

#include <cmath>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/schema.h"
#include "store/sqlite.h"
#include "store_test_util.h"

namespace tailguard::store_test {
namespace {

using store::HistoryStore;
using store::MinuteRow;
using store::SeriesMinutes;
using store::StoredSeriesInfo;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

#define ASSERT_OK(expr)                              \
  do {                                               \
    const absl::Status status_ = (expr);             \
    ASSERT_TRUE(status_.ok()) << status_.ToString(); \
  } while (0)

MinuteRow Minute(WallTime t, double p99, HeatmapRow heatmap = {}) {
  MinuteRow r;
  r.time = t;
  r.count = 100;
  r.p50 = p99 / 2;
  r.p99 = p99;
  r.mean = p99 / 3;
  r.max = p99 * 2;
  r.anomaly_score = 0.1;
  r.baseline_p99 = 0.1;
  r.forecast = 0.11;
  r.forecast_lower = 0.09;
  r.forecast_upper = 0.13;
  if (!heatmap.empty()) r.heatmap = EncodeHeatmapRow(heatmap);
  return r;
}

SeriesMinutes Series(const std::string& model, std::vector<MinuteRow> minutes) {
  return {SeriesKey(model), std::string(kMetric), SeriesLabels(model), std::move(minutes)};
}

std::vector<WallTime> Times(const std::vector<MinuteRow>& rows) {
  std::vector<WallTime> out;
  for (const MinuteRow& r : rows) out.push_back(r.time);
  return out;
}

class HistoryStoreTest : public StoreTest {
 protected:
  std::unique_ptr<HistoryStore> Open() {
    absl::StatusOr<std::unique_ptr<HistoryStore>> s = HistoryStore::Open(Path());
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }
};

TEST_F(HistoryStoreTest, WritesAndReadsMinutesByRange) {
  std::unique_ptr<HistoryStore> h = Open();
  ASSERT_NE(h, nullptr);
  const WallTime t = T0();
  const std::vector<SeriesMinutes> batch = {
      Series("rank",
             {Minute(t + minutes(1), 0.12, {{40, 60}, {44, 40}}), Minute(t + minutes(2), 0.2)}),
      Series("risk", {Minute(t + minutes(1), 0.05)})};
  ASSERT_OK(h->WriteMinutes(batch));
  const std::string rank = store::HistorySeriesId(SeriesKey("rank"));
  EXPECT_EQ(rank.size(), 16u);

  absl::StatusOr<std::vector<MinuteRow>> rows = h->ReadPoints(rank, t, t + minutes(2));
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 2u);
  const MinuteRow& m = (*rows)[0];
  EXPECT_EQ(m.time, t + minutes(1));
  EXPECT_EQ(m.count, 100u);
  EXPECT_DOUBLE_EQ(m.p99, 0.12);
  EXPECT_DOUBLE_EQ(m.p50, 0.06);
  EXPECT_TRUE(std::isnan(m.p90));  // missing stays missing
  EXPECT_DOUBLE_EQ(m.max, 0.24);
  EXPECT_DOUBLE_EQ(m.forecast, 0.11);
  EXPECT_DOUBLE_EQ(m.forecast_lower, 0.09);
  EXPECT_DOUBLE_EQ(m.forecast_upper, 0.13);
  EXPECT_TRUE(m.heatmap.empty());  // points come without heatmaps

  // (from, to]: the minute ending at `from` is not in the range.
  rows = h->ReadPoints(rank, t + minutes(1), t + minutes(5));
  ASSERT_TRUE(rows.ok());
  EXPECT_THAT(Times(*rows), ElementsAre(t + minutes(2)));
  rows = h->ReadPoints("0000000000000000", t, t + hours(1));
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE(rows->empty());

  absl::StatusOr<std::vector<store::StoredHeatmapRow>> hm =
      h->ReadHeatmapRows(rank, t, t + hours(1));
  ASSERT_TRUE(hm.ok()) << hm.status();
  ASSERT_EQ(hm->size(), 1u);  // the second minute has none
  EXPECT_EQ((*hm)[0].time, t + minutes(1));
  EXPECT_THAT((*hm)[0].row, ElementsAre(HeatmapCount{40, 60}, HeatmapCount{44, 40}));

  absl::StatusOr<std::vector<store::StoredSeriesInfo>> all = h->ListSeries();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, rank);
  EXPECT_EQ((*all)[0].key, SeriesKey("rank"));
  EXPECT_EQ((*all)[0].metric, kMetric);
  EXPECT_EQ((*all)[0].labels, SeriesLabels("rank"));
  EXPECT_EQ((*all)[0].first, t + minutes(1));
  EXPECT_EQ((*all)[0].last, t + minutes(2));
  EXPECT_EQ((*all)[1].key, SeriesKey("risk"));

  absl::StatusOr<std::optional<store::StoredSeriesInfo>> one = h->FindSeries(rank);
  ASSERT_TRUE(one.ok());
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->key, SeriesKey("rank"));
  one = h->FindSeries("ffffffffffffffff");
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->has_value());
}

TEST_F(HistoryStoreTest, ImportReplacesMinutesAndCounts) {
  std::unique_ptr<HistoryStore> h = Open();
  const WallTime t = T0();
  absl::StatusOr<store::ImportSummary> s = h->ImportPoints(
      std::vector{Series("rank", {Minute(t + minutes(1), 0.1), Minute(t + minutes(2), 0.1)})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->series, 1);
  EXPECT_EQ(s->points, 2);
  EXPECT_EQ(s->replaced, 0);
  s = h->ImportPoints(
      std::vector{Series("rank", {Minute(t + minutes(2), 0.3), Minute(t + minutes(3), 0.1)})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->replaced, 1);
  absl::StatusOr<std::vector<MinuteRow>> rows =
      h->ReadPoints(store::HistorySeriesId(SeriesKey("rank")), t, t + hours(1));
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_DOUBLE_EQ((*rows)[1].p99, 0.3);
}

TEST_F(HistoryStoreTest, BadBatchWritesNothing) {
  std::unique_ptr<HistoryStore> h = Open();
  const WallTime t = T0();
  MinuteRow corrupt = Minute(t + minutes(2), 0.1);
  corrupt.heatmap = "\x07garbage";
  absl::Status s = h->WriteMinutes(
      std::vector{Series("rank", {Minute(t + minutes(1), 0.1)}), Series("risk", {corrupt})});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("unknown version 7"));
  s = h->WriteMinutes(std::vector{SeriesMinutes{"", "m", {}, {Minute(t, 0.1)}}});
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  absl::StatusOr<std::vector<store::StoredSeriesInfo>> all = h->ListSeries();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST_F(HistoryStoreTest, PruneDeletesOldMinutesAndEmptySeries) {
  std::unique_ptr<HistoryStore> h = Open();
  const WallTime t = T0();
  ASSERT_OK(h->WriteMinutes(
      std::vector{Series("rank", {Minute(t + minutes(1), 0.1), Minute(t + hours(2), 0.1)}),
                  Series("old", {Minute(t + minutes(1), 0.1)})}));
  absl::StatusOr<store::PruneResult> pruned = h->Prune(t + hours(1));
  ASSERT_TRUE(pruned.ok()) << pruned.status();
  EXPECT_EQ(pruned->deleted, 2);
  EXPECT_TRUE(pruned->done);
  absl::StatusOr<std::vector<store::StoredSeriesInfo>> all = h->ListSeries();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].key, SeriesKey("rank"));
  EXPECT_EQ((*all)[0].first, t + hours(2));
  pruned = h->Prune(t + hours(1));
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(pruned->deleted, 0);
  EXPECT_TRUE(pruned->done);
}

TEST_F(HistoryStoreTest, ReopenKeepsHistoryAndSharesTheFileWithTheEventStore) {
  const WallTime t = T0();
  {
    std::unique_ptr<store::EventStore> events = OpenStore();
    ASSERT_NE(events, nullptr);
    std::unique_ptr<HistoryStore> h = Open();
    ASSERT_OK(h->WriteMinutes(std::vector{Series("rank", {Minute(t + minutes(1), 0.1)})}));
    ASSERT_OK(events->RecordEvent(Event(AlertEventKind::kPreAlert, t, -1, 0)));
  }
  std::unique_ptr<HistoryStore> h = Open();
  absl::StatusOr<std::vector<MinuteRow>> rows =
      h->ReadPoints(store::HistorySeriesId(SeriesKey("rank")), t, t + hours(1));
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 1u);
  std::unique_ptr<store::EventStore> events = OpenStore();
  absl::StatusOr<std::vector<store::AlertRow>> alerts = events->ListAlerts({});
  ASSERT_TRUE(alerts.ok());
  EXPECT_EQ(alerts->size(), 1u);
}

TEST_F(HistoryStoreTest, MigratesAVersionTwoStore) {
  ASSERT_EQ(store::SchemaVersion(), 6);
  {
    // A file as tailguard with schema version 2 left it, with an alert in it.
    absl::StatusOr<store::Database> db = store::Database::Open(Path());
    ASSERT_TRUE(db.ok());
    ASSERT_OK(db->Exec(store::Migrations()[0]));
    ASSERT_OK(db->Exec(store::Migrations()[1]));
    ASSERT_OK(db->Exec("PRAGMA user_version = 2"));
    ASSERT_OK(
        db->Exec("INSERT INTO alerts (rule, series, metric, labels, stat, state, tier, severity, "
                 "started_at, updated_at) VALUES ('r', 's', 'm', '{}', 'p99', 'alert', 0, "
                 "'warning', 1, 1)"));
  }
  std::unique_ptr<HistoryStore> h = Open();
  ASSERT_NE(h, nullptr);
  ASSERT_OK(h->WriteMinutes(std::vector{Series("rank", {Minute(T0(), 0.1)})}));
  absl::StatusOr<store::Database> db = store::Database::Open(Path());
  ASSERT_TRUE(db.ok());
  absl::StatusOr<store::Statement> st = db->Prepare(
      "SELECT (SELECT user_version FROM pragma_user_version), (SELECT COUNT(*) FROM alerts)");
  ASSERT_TRUE(st.ok()) << st.status();
  absl::StatusOr<bool> row = st->Step();
  ASSERT_TRUE(row.ok() && *row);
  EXPECT_EQ(st->ColumnInt64(0), store::SchemaVersion());
  EXPECT_EQ(st->ColumnInt64(1), 1);  // the old data survived
}

TEST_F(HistoryStoreTest, KeepsWhatEachSeriesMeasures) {
  {
    // A file as schema version 4 left it, with a series and no unit column: a latency.
    absl::StatusOr<store::Database> db = store::Database::Open(Path());
    ASSERT_TRUE(db.ok());
    for (int v = 0; v < 4; ++v) ASSERT_OK(db->Exec(store::Migrations()[static_cast<size_t>(v)]));
    ASSERT_OK(db->Exec("PRAGMA user_version = 4"));
    ASSERT_OK(db->Exec(
        "INSERT INTO series (id, key, metric, labels, first_at, last_at) VALUES ('00', 'old{}', "
        "'old', '{}', 1, 1)"));
  }
  std::unique_ptr<HistoryStore> h = Open();
  ASSERT_NE(h, nullptr);
  SeriesMinutes sizes{"tailguard_request_size_bytes{model=\"rank\"}",
                      "tailguard_request_size_bytes",
                      {{"model", "rank"}},
                      {Minute(T0(), 4096)},
                      Unit::kBytes};
  ASSERT_OK(h->WriteMinutes(std::vector{sizes, Series("rank", {Minute(T0(), 0.1)})}));
  absl::StatusOr<std::vector<StoredSeriesInfo>> all = h->ListSeries();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  std::map<std::string, Unit> units;
  for (const StoredSeriesInfo& s : *all) units[s.metric] = s.unit;
  EXPECT_EQ(units["old"], Unit::kNanoseconds);
  EXPECT_EQ(units["tailguard_request_size_bytes"], Unit::kBytes);
  EXPECT_EQ(units[std::string(kMetric)], Unit::kNanoseconds);
  absl::StatusOr<std::vector<MinuteRow>> rows =
      h->ReadPoints(store::HistorySeriesId(sizes.key), T0() - std::chrono::minutes(1), T0());
  ASSERT_TRUE(rows.ok() && rows->size() == 1u);
  EXPECT_EQ((*rows)[0].p99, 4096);
  // The sizes written again as seconds (an import that did not say): the import is refused
  // whole; a live write leaves that series out, writes the others, and names it.
  SeriesMinutes as_seconds = sizes;
  as_seconds.unit = Unit::kNanoseconds;
  as_seconds.minutes = {Minute(T0() + std::chrono::minutes(1), 0.5)};
  EXPECT_TRUE(absl::IsInvalidArgument(h->ImportPoints(std::vector{as_seconds}).status()));
  const SeriesMinutes rank = Series("rank", {Minute(T0() + std::chrono::minutes(1), 0.2)});
  absl::Status refused = h->WriteMinutes(std::vector{as_seconds, rank});
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_THAT(std::string(refused.message()), HasSubstr("is stored in bytes, written in seconds"));
  absl::StatusOr<std::vector<MinuteRow>> ranks =
      h->ReadPoints(store::HistorySeriesId(rank.key), T0(), T0() + std::chrono::minutes(1));
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ(ranks->size(), 1u);  // the other series' minute was written
  // One key in two units within one batch: nothing written.
  SeriesMinutes twice = rank;
  twice.unit = Unit::kCount;
  EXPECT_TRUE(absl::IsInvalidArgument(h->WriteMinutes(std::vector{rank, twice})));
  all = h->ListSeries();
  ASSERT_TRUE(all.ok());
  for (const StoredSeriesInfo& s : *all) {
    if (s.key == sizes.key) {
      EXPECT_EQ(s.unit, Unit::kBytes);
    }
  }
  rows = h->ReadPoints(store::HistorySeriesId(sizes.key), T0() - std::chrono::minutes(1),
                       T0() + std::chrono::minutes(1));
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 1u);
}

TEST_F(HistoryStoreTest, RefusesMemoryAndNewerFiles) {
  absl::StatusOr<std::unique_ptr<HistoryStore>> h = HistoryStore::Open(":memory:");
  EXPECT_TRUE(absl::IsInvalidArgument(h.status())) << h.status();
  {
    absl::StatusOr<store::Database> db = store::Database::Open(Path());
    ASSERT_TRUE(db.ok());
    ASSERT_OK(db->Exec(Cat("PRAGMA user_version = ", store::SchemaVersion() + 1)));
  }
  h = HistoryStore::Open(Path());
  EXPECT_TRUE(absl::IsFailedPrecondition(h.status())) << h.status();
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("newer tailguard"));
}

TEST_F(HistoryStoreTest, ReadsDoNotWaitForAnOpenWriteTransaction) {
  std::unique_ptr<HistoryStore> h = Open();
  const WallTime t = T0();
  ASSERT_OK(h->WriteMinutes(std::vector{Series("rank", {Minute(t + minutes(1), 0.1)})}));
  // Another connection holds the write lock (as the analysis thread does mid-write).
  absl::StatusOr<store::Database> other = store::Database::Open(Path());
  ASSERT_TRUE(other.ok());
  absl::StatusOr<store::Transaction> tx = store::Transaction::Begin(*other);
  ASSERT_TRUE(tx.ok()) << tx.status();
  ASSERT_OK(other->Exec("DELETE FROM series_minutes"));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<MinuteRow>> rows =
      h->ReadPoints(store::HistorySeriesId(SeriesKey("rank")), t, t + hours(1));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->size(), 1u);  // the committed state
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

// An import is checked whole, then written in chunks: between two chunks another connection
// (a gateway on the same file) can take the write lock at once.
TEST_F(HistoryStoreTest, ImportWritesInChunksThatLetOtherWritersIn) {
  std::unique_ptr<HistoryStore> h = Open();
  const WallTime t = T0();
  absl::StatusOr<store::Database> other = store::Database::Open(Path());
  ASSERT_TRUE(other.ok());
  ASSERT_OK(other->Exec("PRAGMA busy_timeout = 0"));  // fail at once rather than wait
  store::ImportOptions options;
  options.rows_per_transaction = 2;
  std::vector<int64_t> progress;
  std::vector<bool> other_got_in;
  options.progress = [&](int64_t points) {
    progress.push_back(points);
    absl::StatusOr<store::Transaction> tx = store::Transaction::Begin(*other);
    other_got_in.push_back(tx.ok());
  };
  absl::StatusOr<store::ImportSummary> s = h->ImportPoints(
      std::vector{Series("rank", {Minute(t + minutes(1), 0.1), Minute(t + minutes(2), 0.1),
                                  Minute(t + minutes(3), 0.1)}),
                  Series("risk", {Minute(t + minutes(1), 0.1), Minute(t + minutes(2), 0.1)})},
      options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->series, 2);
  EXPECT_EQ(s->points, 5);
  EXPECT_THAT(progress, ElementsAre(2, 4, 5));
  EXPECT_THAT(other_got_in, ElementsAre(true, true, true));
  absl::StatusOr<std::vector<store::StoredSeriesInfo>> all = h->ListSeries();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].first, t + minutes(1));  // first_at and last_at span every chunk
  EXPECT_EQ((*all)[0].last, t + minutes(3));

  // A bad row anywhere in the batch: nothing is written, not even the chunks before it.
  MinuteRow corrupt = Minute(t + minutes(9), 0.1);
  corrupt.heatmap = "\x07garbage";
  s = h->ImportPoints(std::vector{Series("new", {Minute(t + minutes(8), 0.1)}),
                                  Series("newer", {Minute(t + minutes(8), 0.1), corrupt})},
                      options);
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
  all = h->ListSeries();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

TEST_F(HistoryStoreTest, VisitMinutesStepsThroughRowsWithDecodedHeatmaps) {
  std::unique_ptr<HistoryStore> h = Open();
  const WallTime t = T0();
  ASSERT_OK(h->WriteMinutes(std::vector{
      Series("rank", {Minute(t + minutes(1), 0.1, {{40, 100}}), Minute(t + minutes(2), 0.2)})}));
  const std::string id = store::HistorySeriesId(SeriesKey("rank"));
  std::vector<std::pair<WallTime, size_t>> seen;  // time, heatmap cells (0 for none)
  ASSERT_OK(h->VisitMinutes(id, t, t + hours(1), /*heatmaps=*/true,
                            [&](const MinuteRow& r, const HeatmapRow* row) {
                              EXPECT_TRUE(r.heatmap.empty());
                              seen.emplace_back(r.time, row == nullptr ? 0 : row->size());
                            }));
  EXPECT_THAT(seen, ElementsAre(std::pair{t + minutes(1), size_t{1}},
                                std::pair{t + minutes(2), size_t{0}}));
  size_t n = 0;
  ASSERT_OK(h->VisitMinutes(id, t, t + hours(1), /*heatmaps=*/false,
                            [&](const MinuteRow&, const HeatmapRow* row) {
                              EXPECT_EQ(row, nullptr);
                              ++n;
                            }));
  EXPECT_EQ(n, 2u);
}

// After the retention is lowered, each prune deletes a bounded batch (oldest series first), so
// no single transaction deletes millions of rows; calls continue until done.
TEST_F(HistoryStoreTest, PruneDeletesInBoundedBatches) {
  std::unique_ptr<HistoryStore> h = Open();
  const WallTime t = T0();
  std::vector<MinuteRow> a, b;
  for (int i = 1; i <= 5; ++i) a.push_back(Minute(t + minutes(i), 0.1));
  a.push_back(Minute(t + hours(2), 0.1));
  for (int i = 1; i <= 4; ++i) b.push_back(Minute(t + minutes(i), 0.1));
  ASSERT_OK(h->WriteMinutes(std::vector{Series("a", a), Series("b", b)}));
  std::vector<int64_t> deleted;
  for (int call = 0; call < 10; ++call) {
    absl::StatusOr<store::PruneResult> r = h->Prune(t + hours(1), 3);
    ASSERT_TRUE(r.ok()) << r.status();
    deleted.push_back(r->deleted);
    if (r->done) break;
    // Between batches the series' first minute follows what is left.
    absl::StatusOr<std::vector<store::StoredSeriesInfo>> all = h->ListSeries();
    ASSERT_TRUE(all.ok());
    for (const store::StoredSeriesInfo& s : *all) {
      absl::StatusOr<std::vector<MinuteRow>> rows = h->ReadPoints(s.id, WallTime(), t + hours(3));
      ASSERT_TRUE(rows.ok());
      ASSERT_FALSE(rows->empty());
      EXPECT_EQ(s.first, rows->front().time) << s.key;
    }
  }
  EXPECT_THAT(deleted, ElementsAre(3, 3, 3));
  absl::StatusOr<std::vector<store::StoredSeriesInfo>> all = h->ListSeries();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].key, SeriesKey("a"));
  EXPECT_EQ((*all)[0].first, t + hours(2));
  EXPECT_TRUE(absl::IsInvalidArgument(h->Prune(t, 0).status()));
}

}  // namespace
}  // namespace tailguard::store_test
