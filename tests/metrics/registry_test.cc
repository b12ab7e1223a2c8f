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
  options.max_series = kStageCount + 2;  // one RequestMetrics, the "aaa" series and one more
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
