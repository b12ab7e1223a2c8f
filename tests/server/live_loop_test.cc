// The live loop's history: exact points within the hour with the forecast, per-minute points and
// heatmap rows persisted to the history store, a second loop on the same store (a restart a week
// later) answering for last week and for a series only the store knows, heatmaps from slot
// windows and from minute rows, and store failures counted, not fatal. All on a fake clock.
#include "server/live_loop.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/history_store.h"
#include "store/sqlite.h"

namespace tailguard::server {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr std::string_view kMetric = "tailguard_request_duration_seconds";

uint64_t CellSum(const tailguard::Heatmap& h) {
  uint64_t n = 0;
  for (const tailguard::Heatmap::Cell& c : h.cells) n += c.count;
  return n;
}

// A registry on a fake clock with one loop over it.
struct Instance {
  explicit Instance(WallTime start, store::HistoryStore* history = nullptr)
      : clock(start), registry(clock) {
    LiveLoopOptions options;
    options.history = history;
    absl::StatusOr<std::unique_ptr<LiveLoop>> l =
        LiveLoop::Create(registry, AlertConfig{}, options, nullptr);
    EXPECT_TRUE(l.ok()) << l.status();
    if (l.ok()) loop = *std::move(l);
  }

  Series* Get(const std::string& model) {
    absl::StatusOr<Series*> s =
        registry.GetOrCreate(kMetric, {{"model", model}, {"stage", "total"}});
    EXPECT_TRUE(s.ok()) << s.status();
    return *s;
  }

  // `ticks` seconds, each recording `per_tick` latencies of `ns` into `series` (if any).
  void Run(int ticks, Series* series = nullptr, uint64_t ns = 0, int per_tick = 0) {
    for (int i = 0; i < ticks; ++i) {
      for (int j = 0; j < per_tick; ++j) series->Record(ns);
      clock.Advance(seconds(1));
      loop->Tick();
    }
  }

  FakeClock clock;
  Registry registry;
  std::unique_ptr<LiveLoop> loop;
};

class LiveLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           Cat("tailguard_live_loop_", info->name(), "_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::unique_ptr<store::HistoryStore> OpenHistory() {
    absl::StatusOr<std::unique_ptr<store::HistoryStore>> h =
        store::HistoryStore::Open((dir_ / "tailguard.db").string());
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? *std::move(h) : nullptr;
  }

  std::filesystem::path dir_;
  const WallTime start_ = FakeClock::DefaultStart();
};

TEST_F(LiveLoopTest, ExactPointsCarryTheForecast) {
  Instance a(start_);
  Series* rank = a.Get("rank");
  a.Run(120, rank, 20'000'000, 10);  // 20 ms, 10 a second
  const std::string id = LiveLoop::SeriesId(rank->key());
  const WallTime now = a.registry.Now();
  absl::StatusOr<std::vector<HistoryPoint>> h =
      a.loop->History(id, now - seconds(60), now, seconds(10));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->size(), 6u);
  for (const HistoryPoint& p : *h) {
    EXPECT_EQ(p.count, 100u);
    EXPECT_NEAR(p.p99, 0.020, 0.0002);
    // A flat series: Holt-Winters forecasts it, with a band around it.
    ASSERT_FALSE(std::isnan(p.forecast));
    EXPECT_NEAR(p.forecast, 0.020, 0.001);
    EXPECT_LE(p.forecast_lower, p.forecast);
    EXPECT_GE(p.forecast_upper, p.forecast);
  }
  // The snapshot shows the same forecast.
  std::vector<SeriesSnapshot> snap = a.loop->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_NEAR(snap[0].stats.forecast, 0.020, 0.001);
  EXPECT_TRUE(a.loop->StoredSeries().empty());  // no store

  // Unknown ids and bad ranges as before.
  EXPECT_TRUE(absl::IsNotFound(
      a.loop->History("0123456789abcdef", now - seconds(60), now, seconds(10)).status()));
  EXPECT_TRUE(absl::IsNotFound(
      a.loop->Heatmap("0123456789abcdef", now - seconds(60), now, seconds(10)).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(a.loop->Heatmap(id, now, now - seconds(1), seconds(10)).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(a.loop->Heatmap(id, now - hours(1), now, Duration(1)).status()));
}

TEST_F(LiveLoopTest, HeatmapFromSlotWindows) {
  Instance a(start_);
  Series* rank = a.Get("rank");
  a.Run(30, rank, 5'000'000, 4);   // 5 ms
  a.Run(30, rank, 80'000'000, 1);  // 80 ms
  const std::string id = LiveLoop::SeriesId(rank->key());
  const WallTime now = a.registry.Now();
  absl::StatusOr<tailguard::Heatmap> h = a.loop->Heatmap(id, now - seconds(60), now, seconds(30));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->times.size(), 2u);
  EXPECT_EQ(h->times[1], now);
  EXPECT_EQ(CellSum(*h), 150u);
  // Rows span 5 ms to 80 ms only: four doublings, four buckets each, plus one.
  const int lo = HeatmapBucketIndex(5'000'000), hi = HeatmapBucketIndex(80'000'000);
  ASSERT_EQ(h->bounds.size(), static_cast<size_t>(hi - lo + 2));
  EXPECT_LE(h->bounds.front(), 0.005);
  EXPECT_GT(h->bounds.back(), 0.080);
  ASSERT_EQ(h->cells.size(), 2u);
  EXPECT_EQ(h->cells[0].column, 0u);
  EXPECT_EQ(h->cells[0].row, 0u);
  EXPECT_EQ(h->cells[0].count, 120u);
  EXPECT_EQ(h->cells[1].column, 1u);
  EXPECT_EQ(h->cells[1].row, static_cast<uint32_t>(hi - lo));
}

TEST_F(LiveLoopTest, HeatmapOlderThanTheWindowSpanFromMinuteRowsInMemory) {
  Instance a(start_);
  Series* rank = a.Get("rank");
  a.Run(180, rank, 10'000'000, 2);  // three minutes at 10 ms
  a.Run(3600 + 300);                // then over an hour of nothing
  const std::string id = LiveLoop::SeriesId(rank->key());
  absl::StatusOr<tailguard::Heatmap> h =
      a.loop->Heatmap(id, start_, start_ + minutes(4), seconds(20));  // step rounded up to 1 min
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->times.size(), 4u);
  EXPECT_EQ(CellSum(*h), 360u);
  ASSERT_EQ(h->bounds.size(), 2u);  // one bucket
  absl::StatusOr<std::vector<HistoryPoint>> p =
      a.loop->History(id, start_, start_ + minutes(4), minutes(1));
  ASSERT_TRUE(p.ok());
  uint64_t n = 0;
  for (const HistoryPoint& x : *p) n += x.count;
  EXPECT_EQ(n, 360u);
}

TEST_F(LiveLoopTest, ARestartAWeekLaterAnswersFromTheStore) {
  std::unique_ptr<store::HistoryStore> history = OpenHistory();
  ASSERT_NE(history, nullptr);
  std::string rank_id, risk_id;
  {
    Instance a(start_, history.get());
    Series* rank = a.Get("rank");
    Series* risk = a.Get("risk");
    rank_id = LiveLoop::SeriesId(rank->key());
    risk_id = LiveLoop::SeriesId(risk->key());
    for (int i = 0; i < 300; ++i) {
      rank->Record(30'000'000);
      risk->Record(2'000'000);
      risk->Record(2'000'000);
      a.clock.Advance(seconds(1));
      a.loop->Tick();
    }
    EXPECT_EQ(a.loop->history_write_failures(), 0u);
  }
  absl::StatusOr<std::vector<store::StoredSeriesInfo>> stored = history->ListSeries();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 2u);

  // A week later a new process records only "rank".
  Instance b(start_ + hours(24 * 7), history.get());
  Series* rank = b.Get("rank");
  b.Run(10, rank, 40'000'000, 1);

  // Last week, a series only the store knows: every minute it wrote, 2 requests a second.
  absl::StatusOr<std::vector<HistoryPoint>> risk =
      b.loop->History(risk_id, start_, start_ + minutes(5), minutes(1));
  ASSERT_TRUE(risk.ok()) << risk.status();
  uint64_t n = 0;
  for (const HistoryPoint& p : *risk) {
    n += p.count;
    if (p.count > 0) {
      EXPECT_NEAR(p.p99, 0.002, 0.00002);
    }
  }
  EXPECT_GE(n, 2u * 240);  // the minute points written (the first closes after one tick)
  EXPECT_LE(n, 2u * 300);
  // The last minute point carries the detector's forecast at the tick that closed it.
  EXPECT_FALSE(std::isnan(risk->back().forecast));

  // The same range of the live series, also from the store.
  absl::StatusOr<std::vector<HistoryPoint>> old =
      b.loop->History(rank_id, start_, start_ + minutes(5), minutes(5));
  ASSERT_TRUE(old.ok());
  ASSERT_EQ(old->size(), 1u);
  EXPECT_GE((*old)[0].count, 240u);
  EXPECT_NEAR((*old)[0].p99, 0.030, 0.0003);
  // The exact span is still the registry's.
  const WallTime now = b.registry.Now();
  absl::StatusOr<std::vector<HistoryPoint>> recent =
      b.loop->History(rank_id, now - seconds(10), now, seconds(10));
  ASSERT_TRUE(recent.ok());
  ASSERT_EQ(recent->size(), 1u);
  EXPECT_EQ((*recent)[0].count, 10u);
  EXPECT_NEAR((*recent)[0].p99, 0.040, 0.0004);

  // Heatmaps of last week from the stored rows.
  absl::StatusOr<tailguard::Heatmap> h =
      b.loop->Heatmap(risk_id, start_, start_ + minutes(5), minutes(1));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(CellSum(*h), n);
  EXPECT_EQ(h->bounds.size(), 2u);

  // The overview lists the series only the store knows.
  std::vector<StoredSeries> only = b.loop->StoredSeries();
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].id, risk_id);
  EXPECT_THAT(only[0].key, HasSubstr("model=\"risk\""));
  EXPECT_EQ(only[0].metric, kMetric);
  EXPECT_GE(only[0].last, start_ + minutes(4));

  EXPECT_TRUE(
      absl::IsNotFound(b.loop->History("0123456789abcdef", start_, now, minutes(1)).status()));
}

TEST_F(LiveLoopTest, StoreFailuresAreCountedNotFatal) {
  std::unique_ptr<store::HistoryStore> history = OpenHistory();
  ASSERT_NE(history, nullptr);
  {
    // Someone breaks the file under us.
    absl::StatusOr<store::Database> db = store::Database::Open((dir_ / "tailguard.db").string());
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("DROP TABLE series_minutes").ok());
  }
  std::FILE* log = std::tmpfile();
  Instance a(start_);
  LiveLoopOptions options;
  options.history = history.get();
  options.log = log;
  absl::StatusOr<std::unique_ptr<LiveLoop>> loop =
      LiveLoop::Create(a.registry, AlertConfig{}, options, nullptr);
  ASSERT_TRUE(loop.ok());
  Series* rank = a.Get("rank");
  for (int i = 0; i < 130; ++i) {
    rank->Record(1'000'000);
    a.clock.Advance(seconds(1));
    (*loop)->Tick();
  }
  // Three minutes began (at 1 s, 61 s, 121 s): three failed writes, and the first prune.
  EXPECT_EQ((*loop)->history_write_failures(), 4u);
  EXPECT_EQ((*loop)->ticks(), 130u);
  std::rewind(log);
  char line[512] = {};
  ASSERT_NE(std::fgets(line, sizeof(line), log), nullptr);
  EXPECT_THAT(std::string(line), HasSubstr("history write failed (skipped)"));
  std::fclose(log);
  // The live view still works.
  const WallTime now = a.registry.Now();
  absl::StatusOr<std::vector<HistoryPoint>> h =
      (*loop)->History(LiveLoop::SeriesId(rank->key()), now - seconds(10), now, seconds(10));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)[0].count, 10u);
}

}  // namespace
}  // namespace tailguard::server
