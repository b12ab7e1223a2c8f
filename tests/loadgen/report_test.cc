// The report's table and JSON carry the whole spectrum, the rates, errors by kind and drops.
#include "loadgen/report.h"

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tailguard::loadgen {
namespace {

using ::testing::HasSubstr;

Report Sample() {
  Report r;
  r.target = "http://127.0.0.1:8080/";
  r.connections = 64;
  r.timeout = std::chrono::seconds(5);
  r.planned_duration = std::chrono::seconds(10);
  r.elapsed = std::chrono::milliseconds(10020);
  r.expected_requests = 10000;
  r.intended_rate = 1000;
  r.achieved_rate = 999.5;
  r.throughput = 990;
  r.counts.scheduled = 10000;
  r.counts.sent = 9990;
  r.counts.completed = 9990;
  r.counts.dropped = 10;
  r.counts.status_class[2] = 9980;
  r.counts.status_class[5] = 4;
  r.counts.timeouts = 5;
  r.counts.connect_errors = 1;
  for (int i = 1; i <= 9985; ++i) r.latency.Record(static_cast<uint64_t>(i) * 2000);
  r.send_lag.Record(50000);
  r.latency_summary = LatencySummary::Of(r.latency);
  r.send_lag_summary = LatencySummary::Of(r.send_lag);
  PhaseReport p;
  p.name = "warmup";
  p.pattern = "constant 1000/s";
  p.duration = std::chrono::seconds(5);
  r.phases = {p, p};
  return r;
}

TEST(ReportTest, SummaryHasTheWholeSpectrum) {
  Histogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v * 1000);
  const LatencySummary s = LatencySummary::Of(h);
  EXPECT_EQ(s.count, 100000u);
  EXPECT_NEAR(static_cast<double>(s.p50_ns), 50e6, 50e6 * 0.01);
  EXPECT_NEAR(static_cast<double>(s.p75_ns), 75e6, 75e6 * 0.01);
  EXPECT_NEAR(static_cast<double>(s.p90_ns), 90e6, 90e6 * 0.01);
  EXPECT_NEAR(static_cast<double>(s.p95_ns), 95e6, 95e6 * 0.01);
  EXPECT_NEAR(static_cast<double>(s.p99_ns), 99e6, 99e6 * 0.01);
  EXPECT_NEAR(static_cast<double>(s.p999_ns), 99.9e6, 99.9e6 * 0.01);
  EXPECT_NEAR(static_cast<double>(s.p9999_ns), 99.99e6, 99.99e6 * 0.01);
  EXPECT_EQ(s.max_ns, 100000000u);
  EXPECT_NEAR(s.mean_ns, 50.0005e6, 1);
  EXPECT_EQ(LatencySummary::Of(Histogram()).p99_ns, 0u);
}

TEST(ReportTest, InterpolationNarrowsAFixedDelay) {
  // 10 000 values spread evenly over 20.0-20.3 ms: two buckets 262 us wide. The midpoint of the
  // bucket holding P99 is up to 0.65 % off; interpolating by rank is within a few us.
  Histogram h;
  for (uint64_t i = 0; i < 10000; ++i) h.Record(20'000'000 + i * 30);
  const double truth = 20'000'000 + 9899 * 30;
  EXPECT_NEAR(static_cast<double>(InterpolatedQuantile(h, 0.99)), truth, 5000);
  EXPECT_NEAR(static_cast<double>(InterpolatedQuantile(h, 0.5)), 20'000'000 + 4999 * 30, 5000);
  EXPECT_EQ(InterpolatedQuantile(h, 0), h.min());
  EXPECT_EQ(InterpolatedQuantile(h, 1), h.max());
  EXPECT_EQ(InterpolatedQuantile(Histogram(), 0.5), 0u);
  // Small values have a bucket each and stay exact.
  Histogram small;
  for (uint64_t v = 1; v <= 100; ++v) small.Record(v);
  EXPECT_EQ(InterpolatedQuantile(small, 0.99), 99u);
  EXPECT_EQ(InterpolatedQuantile(small, 0.5), 50u);
}

TEST(ReportTest, TextTable) {
  const std::string text = FormatReportText(Sample());
  EXPECT_THAT(text, HasSubstr("1000/s intended, 1000/s achieved"));
  EXPECT_THAT(text, HasSubstr("10000 scheduled, 9990 sent, 9990 completed, 10 dropped"));
  EXPECT_THAT(text, HasSubstr("p99.99"));
  EXPECT_THAT(text, HasSubstr("status 5xx 4, connect errors 1, timeouts 5"));
  EXPECT_THAT(text, HasSubstr("send lag"));
  EXPECT_THAT(text, HasSubstr("phases:"));
  EXPECT_THAT(text, HasSubstr("WARNING: 10 requests were dropped"));
}

TEST(ReportTest, JsonFields) {
  const nlohmann::json j = nlohmann::json::parse(FormatReportJson(Sample()));
  EXPECT_EQ(j["requests"]["scheduled"], 10000);
  EXPECT_EQ(j["requests"]["dropped"], 10);
  EXPECT_EQ(j["requests"]["responses"]["5xx"], 4);
  EXPECT_EQ(j["requests"]["errors"]["timeout"], 5);
  EXPECT_EQ(j["requests"]["errors"]["connect"], 1);
  EXPECT_EQ(j["requests"]["errors"]["total"], 10);
  EXPECT_DOUBLE_EQ(j["intended_rate"].get<double>(), 1000);
  EXPECT_NEAR(j["latency_seconds"]["p99"].get<double>(), 0.01977, 0.0002);
  for (const char* k :
       {"min", "p50", "p75", "p90", "p95", "p99", "p99_9", "p99_99", "max", "mean"}) {
    EXPECT_TRUE(j["latency_seconds"].contains(k)) << k;
  }
  EXPECT_EQ(j["send_lag_seconds"]["max"], 50000e-9);
  EXPECT_EQ(j["phases"].size(), 2u);
  EXPECT_EQ(j["phases"][0]["name"], "warmup");
}

}  // namespace
}  // namespace tailguard::loadgen
