// Prometheus text exposition: format, cumulative buckets, escaping, units.
#include "tailguard/exposition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace tailguard {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(ExpositionTest, HistogramLinesForEverySeries) {
  FakeClock clock;
  Registry reg(clock);
  RequestMetrics& m = **reg.Requests({"risk-mlp", "v3", "/v2/models/risk-mlp/infer"});
  RequestRecord r;
  for (int i = 0; i < 100; ++i) {
    r.stage_ns[0] = i < 90 ? 20'000'000 : 400'000'000;  // 90 at 20 ms, 10 at 400 ms
    r.stage_ns[static_cast<size_t>(Stage::kInference)] = 15'000'000;
    m.RecordRequest(r);
  }
  clock.Advance(std::chrono::seconds(1));
  reg.Collect();
  std::string text;
  AppendPrometheusText(reg, DefaultExpositionBuckets(), text);
  const std::string total =
      "tailguard_request_duration_seconds_bucket{model=\"risk-mlp\","
      "route=\"/v2/models/risk-mlp/infer\",stage=\"total\",version=\"v3\",";
  EXPECT_THAT(text, HasSubstr("# TYPE tailguard_request_duration_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr(total + "le=\"0.01\"} 0\n"));
  EXPECT_THAT(text, HasSubstr(total + "le=\"0.025\"} 90\n"));
  EXPECT_THAT(text, HasSubstr(total + "le=\"0.25\"} 90\n"));
  EXPECT_THAT(text, HasSubstr(total + "le=\"0.5\"} 100\n"));
  EXPECT_THAT(text, HasSubstr(total + "le=\"+Inf\"} 100\n"));
  EXPECT_THAT(text, HasSubstr("tailguard_request_duration_seconds_count{model=\"risk-mlp\","
                              "route=\"/v2/models/risk-mlp/infer\",stage=\"total\",version=\"v3\"}"
                              " 100\n"));
  // Sum in seconds: 90 * 0.02 + 10 * 0.4 = 5.8, within bucket resolution.
  const size_t at = text.find(
      "tailguard_request_duration_seconds_sum{model=\"risk-mlp\","
      "route=\"/v2/models/risk-mlp/infer\",stage=\"total\"");
  ASSERT_NE(at, std::string::npos);
  const double sum = std::stod(text.substr(text.find("} ", at) + 2));
  EXPECT_NEAR(sum, 5.8, 5.8 / 100);
  // One HELP and one TYPE per metric name, though there are several stage series.
  size_t types = 0;
  for (const std::string& line : Lines(text)) types += line.rfind("# TYPE", 0) == 0;
  EXPECT_EQ(types, 1u);
  // Stages never recorded are left out until their first value (a route has nine).
  EXPECT_THAT(text, Not(HasSubstr("stage=\"postprocess\"")));
}

TEST(ExpositionTest, BucketsAreCumulativeAndEndAtTheCount) {
  Registry reg;
  Series* s = *reg.GetOrCreate("x_seconds", {});
  for (uint64_t v = 1000; v < 100'000'000'000; v = v * 3 / 2) s->Record(v);
  reg.Collect();
  std::string text;
  AppendPrometheusText(reg, DefaultExpositionBuckets(), text);
  uint64_t previous = 0;
  int buckets = 0;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("x_seconds_bucket{le=", 0) != 0) continue;
    const uint64_t v = std::stoull(line.substr(line.rfind(' ') + 1));
    EXPECT_GE(v, previous) << line;
    previous = v;
    ++buckets;
  }
  EXPECT_EQ(buckets, static_cast<int>(DefaultExpositionBuckets().size()) + 1);
  EXPECT_EQ(previous, s->Cumulative().count());
  EXPECT_THAT(text, HasSubstr("x_seconds_count " + std::to_string(previous) + "\n"));
  EXPECT_THAT(text, Not(HasSubstr("x_seconds_count{")));
}

TEST(ExpositionTest, ValueHistogramsAndGaugesInTheirUnits) {
  FakeClock clock;
  Registry reg(clock);
  Series* size = *reg.Values("tailguard_request_size_bytes", {{"route", "rank"}}, Unit::kBytes);
  for (uint64_t v : {3, 4, 5, 1000}) size->Record(v);
  Series* queued = *reg.Gauge("tailguard_model_queue_depth", {{"model", "rank"}}, Unit::kCount);
  queued->Set(7);
  Series* idle = *reg.Gauge("idle", {}, Unit::kCount);
  idle->Set(2);
  clock.Advance(std::chrono::seconds(1));
  reg.Collect();
  queued->Set(9);  // a gauge shows its level now, not the last sample
  const std::vector<std::string> lines = Lines(PrometheusText(reg));
  auto has = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(has("# TYPE tailguard_request_size_bytes histogram"));
  EXPECT_TRUE(
      has("# HELP tailguard_request_size_bytes Histogram recorded by tailguard, in bytes."));
  // Powers of 4, values unscaled: 3 and 4 at or below 4, 5 at or below 16, 1000 at or below 1024.
  EXPECT_TRUE(has("tailguard_request_size_bytes_bucket{route=\"rank\",le=\"1\"} 0"));
  EXPECT_TRUE(has("tailguard_request_size_bytes_bucket{route=\"rank\",le=\"4\"} 2"));
  EXPECT_TRUE(has("tailguard_request_size_bytes_bucket{route=\"rank\",le=\"16\"} 3"));
  EXPECT_TRUE(has("tailguard_request_size_bytes_bucket{route=\"rank\",le=\"256\"} 3"));
  EXPECT_TRUE(has("tailguard_request_size_bytes_bucket{route=\"rank\",le=\"1024\"} 4"));
  EXPECT_TRUE(has("tailguard_request_size_bytes_bucket{route=\"rank\",le=\"1073741824\"} 4"));
  EXPECT_TRUE(has("tailguard_request_size_bytes_bucket{route=\"rank\",le=\"+Inf\"} 4"));
  // Collected values read as their bucket's midpoint: 1000 as 1004 (values below 128 exactly).
  EXPECT_TRUE(has("tailguard_request_size_bytes_sum{route=\"rank\"} 1016"));
  EXPECT_TRUE(has("tailguard_request_size_bytes_count{route=\"rank\"} 4"));
  EXPECT_TRUE(has("# TYPE tailguard_model_queue_depth gauge"));
  EXPECT_TRUE(has("tailguard_model_queue_depth{model=\"rank\"} 9"));
  EXPECT_TRUE(has("idle 2"));
  EXPECT_EQ(DefaultValueBuckets().size(), 16u);
}

TEST(ExpositionTest, LabelValuesAreEscaped) {
  Registry reg;
  (*reg.GetOrCreate("y_seconds", {{"route", "a\"b\\c\nd"}}))->Record(5);
  reg.Collect();
  std::string text;
  AppendPrometheusText(reg, DefaultExpositionBuckets(), text);
  EXPECT_THAT(text, HasSubstr("y_seconds_count{route=\"a\\\"b\\\\c\\nd\"} 1\n"));
}

}  // namespace
}  // namespace tailguard
