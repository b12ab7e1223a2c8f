// Registry, Series and RequestTimer on a fake clock.
#include "tailguard/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace tailguard {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

TEST(RegistryTest, SameNameAndLabelsInAnyOrderIsTheSameSeries) {
  Registry reg;
  Series* a = *reg.GetOrCreate("latency_seconds", {{"model", "m"}, {"route", "/r"}});
  Series* b = *reg.GetOrCreate("latency_seconds", {{"route", "/r"}, {"model", "m"}});
  Series* c = *reg.GetOrCreate("latency_seconds", {{"route", "/r"}, {"model", "other"}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a->key(), "latency_seconds{model=\"m\",route=\"/r\"}");
  EXPECT_EQ(a->label("route"), "/r");
  EXPECT_EQ(a->label("nope"), "");
  EXPECT_EQ(reg.Find("latency_seconds", {{"route", "/r"}, {"model", "m"}}), a);
  EXPECT_EQ(reg.Find("latency_seconds", {{"route", "/x"}}), nullptr);
  ASSERT_EQ(reg.AllSeries().size(), 2u);
  EXPECT_EQ(reg.AllSeries()[0], a);  // sorted by key: "m" < "other"
}

TEST(RegistryTest, LabelValuesAreEscapedInTheKey) {
  Registry reg;
  Series* s = *reg.GetOrCreate("x", {{"path", "a\"b\\c\nd"}});
  EXPECT_EQ(s->key(), "x{path=\"a\\\"b\\\\c\\nd\"}");
}

TEST(RegistryTest, RejectsInvalidNamesWithAClearMessage) {
  Registry reg;
  EXPECT_THAT(reg.GetOrCreate("9lives", {}).status().message(),
              HasSubstr("metric name \"9lives\""));
  EXPECT_THAT(reg.GetOrCreate("ok", {{"bad-label", "v"}}).status().message(),
              HasSubstr("label name \"bad-label\""));
  EXPECT_THAT(reg.GetOrCreate("ok", {{"__reserved", "v"}}).status().message(), HasSubstr("\"__\""));
  EXPECT_THAT(reg.GetOrCreate("ok", {{"a", "1"}, {"a", "2"}}).status().message(),
              HasSubstr("given twice"));
  EXPECT_THAT(reg.Requests({"", "v1", "/r"}).status().message(), HasSubstr("need a model"));
  EXPECT_TRUE(reg.AllSeries().empty());
}

TEST(RegistryTest, ConcurrentLookupsAgree) {
  Registry reg;
  std::vector<Series*> found(8);
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        Series* s = *reg.GetOrCreate("x", {{"i", std::to_string(i)}});
        s->Record(1);
        if (i == 7) found[static_cast<size_t>(t)] = s;
      }
    });
  }
  for (auto& t : ts) t.join();
  for (Series* s : found) EXPECT_EQ(s, found[0]);
  EXPECT_EQ(reg.AllSeries().size(), 200u);
  reg.Collect();
  EXPECT_EQ(found[0]->LastInterval().count(), 8u);
}

TEST(RegistryTest, CollectFeedsWindowsOnTheFakeClock) {
  FakeClock clock;
  Registry reg(clock);
  Series* s = *reg.GetOrCreate("x", {});
  for (int sec = 0; sec < 20; ++sec) {
    for (int i = 0; i < 10; ++i) s->Record(static_cast<uint64_t>(sec + 1) * 1000);
    clock.Advance(seconds(1));
    reg.Collect();
  }
  EXPECT_EQ(s->Window(kWindow10s, clock.WallNow()).count(), 100u);
  EXPECT_NEAR(static_cast<double>(s->Window(kWindow10s, clock.WallNow()).min()), 11'000,
              11'000.0 / 128);
  EXPECT_EQ(s->Window(kWindow1m, clock.WallNow()).count(), 200u);
  EXPECT_EQ(s->Cumulative().count(), 200u);
  EXPECT_EQ(s->LastInterval().count(), 10u);
  clock.Advance(seconds(15));
  reg.Collect();
  EXPECT_TRUE(s->Window(kWindow10s, clock.WallNow()).empty());
  EXPECT_GT(s->MemoryBytes(), 0u);
}

TEST(RequestTimerTest, MeasuresStagesTotalAndFirstToken) {
  FakeClock clock;
  Registry reg(clock);
  RequestMetrics& m = **reg.Requests({"llm", "v2", "/v1/chat/completions"});
  {
    RequestTimer t(m);
    clock.Advance(milliseconds(5));
    t.EndStage(Stage::kFeatureFetch);
    clock.Advance(milliseconds(1));
    t.EndStage(Stage::kPreprocess);
    clock.Advance(milliseconds(300));
    t.FirstToken();
    clock.Advance(milliseconds(700));
    t.EndStage(Stage::kInference);
    t.set_input_size(512);
    t.set_status(200, false);
    t.set_trace_id("0af7651916cd43dd8448eb211c80319c");
  }
  reg.Collect();
  const auto p50 = [&](Stage s) { return m.stage(s).LastInterval().Quantile(0.5); };
  EXPECT_NEAR(static_cast<double>(p50(Stage::kFeatureFetch)), 5e6, 5e6 / 128);
  EXPECT_NEAR(static_cast<double>(p50(Stage::kPreprocess)), 1e6, 1e6 / 128);
  EXPECT_NEAR(static_cast<double>(p50(Stage::kFirstToken)), 306e6, 306e6 / 128);
  EXPECT_NEAR(static_cast<double>(p50(Stage::kInference)), 1000e6, 1000e6 / 128);
  EXPECT_NEAR(static_cast<double>(p50(Stage::kTotal)), 1006e6, 1006e6 / 128);
  EXPECT_TRUE(m.stage(Stage::kPostprocess).LastInterval().empty());
  EXPECT_EQ(m.stage(Stage::kTotal).key(),
            "tailguard_request_duration_seconds{model=\"llm\",route=\"/v1/chat/completions\","
            "stage=\"total\",version=\"v2\"}");
  // Few requests: the sampler kept this one whole.
  std::vector<SampledRequest> kept = m.sampler().Drain();
  ASSERT_EQ(kept.size(), 1u);
  const RequestRecord& r = kept[0].record;
  EXPECT_EQ(r.total_ns(), 1006'000'000u);
  EXPECT_EQ(r.input_size, 512u);
  EXPECT_EQ(r.trace(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(r.start, FakeClock::DefaultStart());
  // The input size went into the route's value histogram, in counts.
  const Series& size = m.input_size();
  EXPECT_EQ(size.key(),
            "tailguard_request_input_size{model=\"llm\",route=\"/v1/chat/completions\","
            "version=\"v2\"}");
  EXPECT_EQ(size.unit(), Unit::kCount);
  EXPECT_EQ(size.LastInterval().count(), 1u);
  EXPECT_NEAR(static_cast<double>(size.LastInterval().max()), 512, 512.0 / 128);
}

TEST(RequestTimerTest, ARequestWithoutAnInputSizeRecordsNone) {
  FakeClock clock;
  Registry reg(clock);
  RequestMetrics& m = **reg.Requests({"rank", "v1", "/rank"});
  { RequestTimer t(m); }
  reg.Collect();
  EXPECT_EQ(m.stage(Stage::kTotal).LastInterval().count(), 1u);
  EXPECT_TRUE(m.input_size().LastInterval().empty());
}

TEST(ValueSeriesTest, ValuesKeepTheirUnitAndEveryValue) {
  FakeClock clock;
  Registry reg(clock);
  Series* batch = *reg.Values("batch_size", {{"model", "rank"}}, Unit::kCount);
  EXPECT_EQ(batch->kind(), SeriesKind::kHistogram);
  EXPECT_EQ(batch->unit(), Unit::kCount);
  for (uint64_t v : {1, 2, 8, 8, 32}) batch->Record(v);
  clock.Advance(seconds(1));
  reg.Collect();
  const Histogram h = batch->LastInterval();
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.min(), 1u);  // below 128 every value has a bucket of its own: exact
  EXPECT_EQ(h.max(), 32u);
  EXPECT_EQ(h.Quantile(0.5), 8u);
  EXPECT_EQ(*reg.Values("batch_size", {{"model", "rank"}}, Unit::kCount), batch);
}

TEST(ValueSeriesTest, AGaugeIsSampledOncePerCollection) {
  FakeClock clock;
  Registry reg(clock);
  Series* queued = *reg.Gauge("queue_depth", {{"model", "rank"}}, Unit::kCount);
  EXPECT_EQ(queued->kind(), SeriesKind::kGauge);
  // Levels 3, 5, 4, then below zero (sampled as 0), one per slot.
  queued->Add(3);
  clock.Advance(seconds(1));
  reg.Collect();
  queued->Add(2);
  clock.Advance(seconds(1));
  reg.Collect();
  queued->Add(-1);
  clock.Advance(seconds(1));
  reg.Collect();
  EXPECT_EQ(queued->level(), 4);
  const Histogram w = queued->Window(kWindow10s, clock.WallNow());
  EXPECT_EQ(w.count(), 3u);
  EXPECT_EQ(w.min(), 3u);
  EXPECT_EQ(w.max(), 5u);
  queued->Set(-2);
  clock.Advance(seconds(1));
  reg.Collect();
  EXPECT_EQ(queued->LastInterval().count(), 1u);
  EXPECT_EQ(queued->LastInterval().max(), 0u);
}

TEST(ValueSeriesTest, ANameKeepsItsKindAndUnit) {
  Registry reg;
  ASSERT_TRUE(reg.Values("size_bytes", {{"route", "a"}}, Unit::kBytes).ok());
  // Another label set of the same name must measure the same thing: one Prometheus family.
  absl::StatusOr<Series*> s = reg.Gauge("size_bytes", {{"route", "b"}}, Unit::kBytes);
  EXPECT_TRUE(absl::IsFailedPrecondition(s.status())) << s.status();
  EXPECT_THAT(std::string(s.status().message()),
              HasSubstr("size_bytes is a histogram of bytes; asked for a gauge of bytes"));
  EXPECT_TRUE(absl::IsFailedPrecondition(reg.GetOrCreate("size_bytes", {}).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(reg.Values("size_bytes", {}, Unit::kCount).status()));
  EXPECT_EQ(reg.AllSeries().size(), 1u);
  EXPECT_EQ(reg.refused(), 0u);  // a caller's mistake, not a bound
  // Request metrics refuse a clash whole, before making any series.
  ASSERT_TRUE(reg.Gauge(std::string(kRequestInputSizeMetric), {}, Unit::kCount).ok());
  absl::StatusOr<RequestMetrics*> m = reg.Requests({"a", "1", "r"});
  EXPECT_TRUE(absl::IsFailedPrecondition(m.status())) << m.status();
  EXPECT_EQ(reg.AllSeries().size(), 2u);
}

TEST(ValueSeriesTest, UnitNamesReadBack) {
  for (Unit u : {Unit::kNanoseconds, Unit::kBytes, Unit::kCount}) {
    EXPECT_EQ(ParseUnit(UnitName(u)), u);
  }
  EXPECT_EQ(UnitName(Unit::kNanoseconds), "seconds");
  EXPECT_EQ(ParseUnit("ms"), std::nullopt);
}

TEST(RequestTimerTest, FinishIsIdempotent) {
  FakeClock clock;
  Registry reg(clock);
  RequestMetrics& m = **reg.Requests({"m", "v", "/r"});
  {
    RequestTimer t(m);
    clock.Advance(milliseconds(2));
    EXPECT_EQ(t.Finish(), SampleDecision::kKept);
    EXPECT_EQ(t.Finish(), SampleDecision::kSkipped);
  }
  reg.Collect();
  EXPECT_EQ(m.stage(Stage::kTotal).LastInterval().count(), 1u);
  EXPECT_EQ(reg.Requests({"m", "v", "/r"}).value(), &m);
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

TEST(RequestTimerTest, ExpectedIntervalCorrectsForCoordinatedOmission) {
  FakeClock clock;
  Registry reg(clock);
  RequestMetrics& m = **reg.Requests({"m", "v", "/r"});
  {
    RequestTimer t(m);
    t.set_expected_interval(std::chrono::milliseconds(10));
    clock.Advance(std::chrono::milliseconds(100));  // a 100 ms stall at one request per 10 ms
  }
  reg.Collect();
  // 100 ms, plus the 90, 80, ..., 10 ms the requests stuck behind it would have seen.
  EXPECT_EQ(m.stage(Stage::kTotal).LastInterval().count(), 10u);
}

TEST(SeriesTest, MemoryCountsPerThreadWriters) {
  Registry reg;
  Series* s = *reg.GetOrCreate("x", {});
  const size_t before = s->MemoryBytes();
  s->Record(1);
  EXPECT_GE(s->MemoryBytes(), before + BucketLayout::kBucketCount * sizeof(uint32_t));
}

TEST(RegistryLimitsTest, RefusesLongLabelValuesAndSeriesPastTheLimit) {
  RegistryOptions options;
  options.max_label_value_bytes = 16;
  // One RequestMetrics (a series per stage and the input size), the "aaa" series and one more.
  options.max_series = kStageCount + 3;
  Registry r(Clock::Real(), options);
  absl::StatusOr<Series*> s = r.GetOrCreate("m", {{"model", std::string(17, 'a')}});
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
  EXPECT_THAT(std::string(s.status().message()), ::testing::HasSubstr("max_label_value_bytes"));
  EXPECT_TRUE(r.GetOrCreate("m", {{"model", std::string(16, 'a')}}).ok());
  EXPECT_TRUE(r.Requests({"a", "1", "r"}).ok());
  // The next RequestMetrics would pass the limit: refused whole, no half set of series.
  const size_t before = r.AllSeries().size();
  absl::StatusOr<RequestMetrics*> m = r.Requests({"b", "1", "r"});
  EXPECT_TRUE(absl::IsResourceExhausted(m.status())) << m.status();
  EXPECT_EQ(r.AllSeries().size(), before);
  // One more series fits; after it, none, but existing ones are still found.
  EXPECT_TRUE(r.GetOrCreate("m", {{"model", "x"}}).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(r.GetOrCreate("m", {{"model", "y"}}).status()));
  EXPECT_TRUE(r.GetOrCreate("m", {{"model", "x"}}).ok());
  EXPECT_TRUE(r.Requests({"a", "1", "r"}).ok());
  EXPECT_EQ(r.refused(), 3u);
}

}  // namespace
}  // namespace tailguard
