// The live loop's history: exact points within the hour with the forecast, per-minute points and
// heatmap rows persisted to the history store, a second loop on the same store (a restart a week
// later) answering for last week and for a series only the store knows, heatmaps from slot
// windows and from minute rows, and store failures counted, not fatal. All on a fake clock.
#include "server/live_loop.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "common/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/history_store.h"
#include "store/sqlite.h"

namespace tailguard::server {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
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
  explicit Instance(WallTime start, store::HistoryStore* history = nullptr,
                    LiveLoopOptions options = {})
      : clock(start), registry(clock) {
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
  EXPECT_EQ(n, 2u * 300);  // five whole minutes, cut at the minute boundaries
  // The last minute point carries the detector's forecast at the tick that closed it.
  EXPECT_FALSE(std::isnan(risk->back().forecast));

  // The same range of the live series, also from the store.
  absl::StatusOr<std::vector<HistoryPoint>> old =
      b.loop->History(rank_id, start_, start_ + minutes(5), minutes(5));
  ASSERT_TRUE(old.ok());
  ASSERT_EQ(old->size(), 1u);
  EXPECT_EQ((*old)[0].count, 300u);
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

// Value series and gauges keep their unit through the minute history and a restart; heatmaps
// are of latencies only.
TEST_F(LiveLoopTest, ValueSeriesAndGaugesAreKeptInTheirUnit) {
  std::unique_ptr<store::HistoryStore> history = OpenHistory();
  ASSERT_NE(history, nullptr);
  std::string size_id, queue_id;
  {
    Instance a(start_, history.get());
    Series* size =
        *a.registry.Values("tailguard_request_size_bytes", {{"route", "rank"}}, Unit::kBytes);
    Series* queued =
        *a.registry.Gauge("tailguard_model_queue_depth", {{"model", "rank"}}, Unit::kCount);
    size_id = LiveLoop::SeriesId(size->key());
    queue_id = LiveLoop::SeriesId(queued->key());
    queued->Set(6);
    a.Run(130, size, 4096, 2);  // two 4 KiB bodies a second for two minutes and more
    const WallTime now = a.registry.Now();
    absl::StatusOr<std::vector<HistoryPoint>> recent =
        a.loop->History(size_id, now - seconds(10), now, seconds(10));
    ASSERT_TRUE(recent.ok()) << recent.status();
    ASSERT_EQ(recent->size(), 1u);
    EXPECT_EQ((*recent)[0].count, 20u);
    EXPECT_NEAR((*recent)[0].p99, 4096, 4096.0 / 128);  // bytes, not seconds
    absl::StatusOr<tailguard::Heatmap> h =
        a.loop->Heatmap(size_id, now - seconds(60), now, seconds(10));
    EXPECT_TRUE(absl::IsInvalidArgument(h.status())) << h.status();
    EXPECT_THAT(std::string(h.status().message()), HasSubstr("measures bytes"));
  }
  absl::StatusOr<std::vector<store::StoredSeriesInfo>> stored = history->ListSeries();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 2u);
  Instance b(start_ + hours(1), history.get());
  std::map<std::string, StoredSeries> only;
  for (StoredSeries& s : b.loop->StoredSeries()) only[s.id] = s;
  ASSERT_EQ(only.size(), 2u);
  EXPECT_EQ(only[size_id].unit, Unit::kBytes);
  EXPECT_EQ(only[queue_id].unit, Unit::kCount);
  // Known only to the store now: still no heatmap of a size.
  absl::StatusOr<tailguard::Heatmap> stored_heatmap =
      b.loop->Heatmap(size_id, start_, start_ + minutes(2), minutes(1));
  EXPECT_TRUE(absl::IsInvalidArgument(stored_heatmap.status())) << stored_heatmap.status();
  absl::StatusOr<std::vector<HistoryPoint>> sizes =
      b.loop->History(size_id, start_, start_ + minutes(2), minutes(1));
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  ASSERT_EQ(sizes->size(), 2u);
  EXPECT_EQ((*sizes)[0].count, 120u);
  EXPECT_NEAR((*sizes)[0].p50, 4096, 4096.0 / 128);
  absl::StatusOr<std::vector<HistoryPoint>> depth =
      b.loop->History(queue_id, start_, start_ + minutes(2), minutes(1));
  ASSERT_TRUE(depth.ok()) << depth.status();
  ASSERT_EQ(depth->size(), 2u);
  EXPECT_EQ((*depth)[1].count, 60u);  // one sample a second
  EXPECT_EQ((*depth)[1].max, 6);
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
  // Two minutes ended (at 60 s and 120 s): two failed writes, and the first prune.
  EXPECT_EQ((*loop)->history_write_failures(), 3u);
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

// A minute's point is the window [B - 1 min, B) stamped B, whenever the ticks come: a tick half
// a second into the minute, one 0.3 s before its end, and one after a 3-minute stall that
// crossed three boundaries. Every request lands in exactly one minute.
TEST_F(LiveLoopTest, MinutesAreCutAtWallClockBoundaries) {
  std::unique_ptr<store::HistoryStore> history = OpenHistory();
  ASSERT_NE(history, nullptr);
  ASSERT_EQ(start_.time_since_epoch() % minutes(1), Duration::zero());  // on a boundary
  Instance a(start_, history.get());
  Series* rank = a.Get("rank");
  // Records `n` requests, then moves the clock by `d` and ticks: the requests are attributed to
  // the middle of the interval since the last tick.
  auto step = [&](int n, Duration d) {
    for (int i = 0; i < n; ++i) rank->Record(10'000'000);
    a.clock.Advance(d);
    a.loop->Tick();
  };
  step(3, milliseconds(500));     // 00:00.5 (middle 00:00.25)
  step(5, milliseconds(59200));   // 00:59.7 (middle 00:30.1)
  step(7, milliseconds(800));     // 01:00.5 crosses 01:00 (middle 01:00.1)
  step(11, milliseconds(59200));  // 01:59.7 (middle 01:30.1)
  step(13, minutes(3));           // 04:59.7 crosses 02:00, 03:00, 04:00 (middle 03:29.7)
  step(17, milliseconds(800));    // 05:00.5 crosses 05:00 (middle 05:00.1)
  step(0, minutes(1));            // 06:00.5 crosses 06:00
  EXPECT_EQ(a.loop->history_write_failures(), 0u);

  const std::string id = LiveLoop::SeriesId(rank->key());
  absl::StatusOr<std::vector<store::MinuteRow>> rows =
      history->ReadPoints(id, start_ - hours(1), start_ + hours(1));
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<std::pair<int64_t, uint64_t>> got;  // (seconds after start, count)
  uint64_t total = 0;
  for (const store::MinuteRow& r : *rows) {
    got.emplace_back((r.time - start_) / seconds(1), r.count);
    total += r.count;
  }
  EXPECT_THAT(got,
              ::testing::ElementsAre(
                  std::pair<int64_t, uint64_t>{60, 8}, std::pair<int64_t, uint64_t>{120, 18},
                  std::pair<int64_t, uint64_t>{180, 0}, std::pair<int64_t, uint64_t>{240, 13},
                  std::pair<int64_t, uint64_t>{300, 0}, std::pair<int64_t, uint64_t>{360, 17}));
  EXPECT_EQ(total, 3u + 5 + 7 + 11 + 13 + 17);
  // The in-memory minutes are the same ones: each 1-min column is one minute.
  absl::StatusOr<std::vector<HistoryPoint>> p =
      a.loop->History(id, start_, start_ + minutes(6), minutes(1));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 6u);
  EXPECT_EQ((*p)[1].count, 18u);
  EXPECT_EQ((*p)[3].count, 13u);

  // A stall longer than the fine slot ring (5 min): only the minutes it still holds are cut.
  step(19, minutes(10));  // 16:00.5 (middle 11:00.5)
  rows = history->ReadPoints(id, start_ + minutes(6), start_ + hours(1));
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<int64_t> times;
  for (const store::MinuteRow& r : *rows) times.push_back((r.time - start_) / minutes(1));
  EXPECT_THAT(times, ::testing::ElementsAre(13, 14, 15, 16));
}

// Per-minute reads stop at the retention, and a range that would still read more than
// kMaxHistoryMinutes minutes of one series is refused before anything is read.
TEST_F(LiveLoopTest, HistoryReadsAreBoundedByTheRetentionAndAMinuteLimit) {
  std::unique_ptr<store::HistoryStore> history = OpenHistory();
  ASSERT_NE(history, nullptr);
  const WallTime now = start_ + hours(24 * 365);
  const std::string key = Cat(kMetric, "{model=\"old\",stage=\"total\"}");
  store::MinuteRow kept, expired;
  kept.time = now - hours(24);
  kept.count = 5;
  kept.heatmap = EncodeHeatmapRow({{40, 5}});
  expired.time = now - hours(24 * 40);  // older than the 35 days, not pruned yet
  expired.count = 7;
  expired.heatmap = EncodeHeatmapRow({{40, 7}});
  ASSERT_TRUE(
      history
          ->WriteMinutes(std::vector{store::SeriesMinutes{
              key, std::string(kMetric), {{"model", "old"}, {"stage", "total"}}, {expired, kept}}})
          .ok());
  const std::string id = store::HistorySeriesId(key);

  Instance a(now, history.get());
  // `?from=0&step=1e8`: columns of about three years from 1970 on, the last one past now.
  const WallTime to = WallTime(seconds(1'800'000'000));
  ASSERT_GT(to, now);
  absl::StatusOr<std::vector<HistoryPoint>> h =
      a.loop->History(id, WallTime(), to, seconds(100'000'000));
  ASSERT_TRUE(h.ok()) << h.status();
  uint64_t n = 0;
  for (const HistoryPoint& p : *h) n += p.count;
  EXPECT_EQ(n, 5u);  // the expired minute is not read
  absl::StatusOr<tailguard::Heatmap> m =
      a.loop->Heatmap(id, now - hours(24 * 60), now, hours(24 * 60));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(CellSum(*m), 5u);

  // With a ten-year retention the same request would read millions of minutes.
  LiveLoopOptions long_retention;
  long_retention.history_retention = hours(24 * 3650);
  Instance b(now, history.get(), long_retention);
  h = b.loop->History(id, WallTime(), to, seconds(100'000'000));
  EXPECT_TRUE(absl::IsInvalidArgument(h.status())) << h.status();
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("at most 100000 minutes"));
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("narrow from/to"));
  m = b.loop->Heatmap(id, WallTime(), to, seconds(100'000'000));
  EXPECT_TRUE(absl::IsInvalidArgument(m.status())) << m.status();
  // 100 000 minutes is still answered, and now the 40-day-old minute is in range.
  h = b.loop->History(id, now - minutes(kMaxHistoryMinutes), now, minutes(kMaxHistoryMinutes));
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->size(), 1u);
  EXPECT_EQ((*h)[0].count, 12u);
  // A `to` far in the future reads no further than the current minute.
  m = b.loop->Heatmap(id, now - hours(24 * 60), now + hours(24 * 3650), hours(24 * 3650));
  ASSERT_TRUE(m.ok()) << m.status();
}

// Pruning deletes a bounded batch per minute until the old minutes are gone.
TEST_F(LiveLoopTest, PruneDeletesInBoundedBatchesOnFollowingMinutes) {
  std::unique_ptr<store::HistoryStore> history = OpenHistory();
  ASSERT_NE(history, nullptr);
  const std::string key = Cat(kMetric, "{model=\"old\",stage=\"total\"}");
  store::SeriesMinutes old{key, std::string(kMetric), {{"model", "old"}, {"stage", "total"}}, {}};
  for (int i = 0; i < 10; ++i) {
    store::MinuteRow r;
    r.time = start_ - hours(3) + minutes(i);
    r.count = 1;
    old.minutes.push_back(r);
  }
  ASSERT_TRUE(history->WriteMinutes(std::vector{old}).ok());
  const std::string id = store::HistorySeriesId(key);
  auto left = [&] {
    absl::StatusOr<std::vector<store::MinuteRow>> rows =
        history->ReadPoints(id, start_ - hours(4), start_);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? rows->size() : 0u;
  };

  LiveLoopOptions options;
  options.history_retention = hours(1);
  options.history_prune_batch = 4;
  Instance a(start_, history.get(), options);
  a.Run(60);  // the first minute: a prune pass begins
  EXPECT_EQ(left(), 6u);
  a.Run(60);  // and goes on the next minutes
  EXPECT_EQ(left(), 2u);
  a.Run(60);
  EXPECT_EQ(left(), 0u);
  EXPECT_EQ(a.loop->history_write_failures(), 0u);
  absl::StatusOr<std::optional<store::StoredSeriesInfo>> gone = history->FindSeries(id);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());  // the series left without minutes went too
}

}  // namespace
}  // namespace tailguard::server

namespace tailguard::server {
namespace {

// The live error ratio of a route: failed requests (as the gateway counts them: 5xx, upstream
// errors, broken streams) over all its requests in the window (10 s); a 4xx is the client's. An
// error rule alerts on it, and the snapshot shows it on the route's total series only.
TEST(LiveLoopErrorRatioTest, FailedRequestsOfTheRouteOverTheWindow) {
  FakeClock clock(FakeClock::DefaultStart());
  Registry registry(clock);
  absl::StatusOr<RequestMetrics*> m =
      registry.Requests({.model = "rank", .version = "1", .route = "/rank"});
  ASSERT_TRUE(m.ok()) << m.status();
  RouteCounterTable counters;
  RouteCounters* rc = counters.Get(*m, [] { return static_cast<Series*>(nullptr); });
  AlertConfig rules;
  AlertRule errors;
  errors.name = "errors";
  errors.matchers = {{"stage", LabelMatcher::Op::kEqual, "total"}};
  errors.stat = Statistic::kErrorRatio;
  AlertTier t;
  t.above = Threshold::Absolute(0.05);
  t.severity = "critical";
  errors.tiers = {t};
  errors.debounce.pre_alert_after = 1;
  errors.debounce.alert_after = seconds(0);
  rules.rules = {errors};
  absl::StatusOr<std::unique_ptr<LiveLoop>> loop =
      LiveLoop::Create(registry, rules, LiveLoopOptions{}, &counters);
  ASSERT_TRUE(loop.ok()) << loop.status();

  // One second of 20 requests: `failed` of them 503, 3 of them 404, the rest 200.
  auto second = [&](int failed) {
    for (int i = 0; i < 20; ++i) {
      const int code = i < failed ? 503 : i < failed + 3 ? 404 : 200;
      (*m)->stage(Stage::kTotal).Record(10'000'000);
      (*m)->stage(Stage::kInference).Record(5'000'000);
      rc->CountStatus(code);
      if (code >= 500) Add(rc->failed);
    }
    clock.Advance(seconds(1));
    (*loop)->Tick();
  };
  auto total_ratio = [&] {
    double ratio = -1;
    for (const SeriesSnapshot& s : (*loop)->Snapshot()) {
      if (s.series->label("stage") == "total") {
        ratio = s.error_ratio;
      } else {
        EXPECT_TRUE(std::isnan(s.error_ratio)) << s.series->key() << ": only the total has one";
      }
    }
    return ratio;
  };
  for (int i = 0; i < 5; ++i) second(0);
  EXPECT_EQ(total_ratio(), 0.0) << "404s are not failures";
  for (int i = 0; i < 5; ++i) second(4);  // 20 of the window's 200 requests failed
  EXPECT_DOUBLE_EQ(total_ratio(), 0.1);
  std::vector<ActiveAlert> active = (*loop)->ActiveAlerts();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].rule, "errors");
  EXPECT_EQ(active[0].state, AlertState::kAlert);
  for (int i = 0; i < 7; ++i) second(0);  // the window now holds 3 failing seconds of 10
  EXPECT_DOUBLE_EQ(total_ratio(), 12.0 / 200);
  for (int i = 0; i < 3; ++i) second(0);
  EXPECT_EQ(total_ratio(), 0.0) << "the failures left the window";
  bool fired = false;
  for (const TimelineEvent& e : (*loop)->Events(0, 1000)) {
    fired = fired || (e.type == "alert" && e.kind == "fire" && e.rule == "errors");
  }
  EXPECT_TRUE(fired);
}

// The tick is the registry's slot: the windows, the error ratio's ticks and the per-minute cut
// all count slots.
TEST(LiveLoopErrorRatioTest, ATickOtherThanTheRegistrysSlotIsRefused) {
  FakeClock clock(FakeClock::DefaultStart());
  Registry registry(clock);
  LiveLoopOptions options;
  options.tick = seconds(2);
  absl::StatusOr<std::unique_ptr<LiveLoop>> loop =
      LiveLoop::Create(registry, AlertConfig{}, options, nullptr);
  ASSERT_FALSE(loop.ok());
  EXPECT_EQ(loop.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(loop.status().message(), HasSubstr("slot"));
}

}  // namespace
}  // namespace tailguard::server
