// The cause ranker on shaped cases: a step on the culprit with smaller propagated symptoms, a
// late alert, a dependency with no resource moving, directions and the offline time limit.
#include "diagnose/ranker.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tailguard::diagnose {
namespace {

// One point a second from t0 to t1 (exclusive): `normal` cycles before `onset`, then `after`.
TimedSeries Step(const std::string& name, int t0, int t1, int onset, std::vector<double> normal,
                 double after) {
  TimedSeries s;
  s.name = name;
  for (int t = t0; t < t1; ++t) {
    s.times.push_back(t);
    s.values.push_back(t < onset ? normal[static_cast<size_t>(t - t0) % normal.size()] : after);
  }
  return s;
}

const Candidate* Find(const Ranking& r, const std::string& name) {
  for (const Candidate& c : r.ranked) {
    if (c.series == name) return &c;
  }
  return nullptr;
}

TEST(RankerTest, RationaleSaysValuesInTheirMetricsUnit) {
  // Prometheus names carry the unit: a latency in seconds reads as a duration, a size in bytes
  // as bytes; a name without one (offline series) keeps four significant digits.
  const std::string stage = "tailguard_request_duration_seconds{stage=\"feature_fetch\"}";
  const std::string rss = "tailguard_process_resident_memory_bytes{}";
  std::vector<TimedSeries> s = {
      Step(stage, 0, 1300, 1000, {0.004, 0.005, 0.006, 0.005}, 0.12),
      Step(rss, 0, 1300, 1000, {1048576, 1048576, 2097152, 1048576}, 8388608),
  };
  Ranking r = RankCauses(s, 1000);
  ASSERT_NE(Find(r, stage), nullptr);
  ASSERT_NE(Find(r, rss), nullptr);
  EXPECT_THAT(Find(r, stage)->rationale,
              ::testing::StartsWith(stage + " rose from 5.00ms to 120ms ("));
  EXPECT_THAT(Find(r, rss)->rationale,
              ::testing::StartsWith(rss + " rose from 1.00MiB to 8.00MiB ("));
}

TEST(RankerTest, CulpritFirstPropagatedSymptomsApart) {
  // a's CPU steps from ~10 to 90 at t=1000; b's CPU (it calls a) rises a little; both latencies
  // rise a lot, more than any CPU in IQRs, but they are symptoms.
  std::vector<TimedSeries> s = {
      Step("b/cpu", 0, 1300, 1000, {19, 20, 21, 20}, 23),
      Step("a/cpu", 0, 1300, 1000, {9, 10, 11, 10}, 90),
      Step("a/latency_p99_s", 0, 1300, 1000, {0.1, 0.1, 0.1, 0.1}, 2.0),
      Step("b/latency_p99_s", 0, 1300, 1000, {0.2, 0.2, 0.2, 0.2}, 2.2),
      Step("c/mem_mb", 0, 1300, 1000, {50, 51, 52, 51}, 51),
  };
  Ranking r = RankCauses(s, 1000);
  ASSERT_EQ(r.ranked.size(), 5u);
  EXPECT_EQ(r.ranked[0].series, "a/cpu");
  EXPECT_EQ(r.quadrant, Quadrant::kHardware);
  // Sorted cycle {9,10,11,10}: q1 9.75, q3 10.25, IQR 0.5 -> (90 - 10) / 0.5 = 160.
  EXPECT_DOUBLE_EQ(r.ranked[0].evidence.baseline.median, 10);
  EXPECT_DOUBLE_EQ(r.ranked[0].evidence.baseline.iqr, 0.5);
  EXPECT_DOUBLE_EQ(r.ranked[0].evidence.score, 160);
  EXPECT_DOUBLE_EQ(r.ranked[0].evidence.onset_time, 1000);
  EXPECT_EQ(r.ranked[0].rationale,
            "a/cpu rose from 10 to 90 (160.0 IQRs above its baseline) at +0s");
  // b's CPU: (23 - 20) / 0.5 = 6, a cause that moved, before the symptoms.
  EXPECT_EQ(r.ranked[1].series, "b/cpu");
  EXPECT_DOUBLE_EQ(r.ranked[1].evidence.score, 6);
  EXPECT_EQ(r.ranked[2].signal.kind, SignalKind::kSymptom);
  EXPECT_EQ(r.ranked[3].signal.kind, SignalKind::kSymptom);
  EXPECT_EQ(r.symptoms.size(), 2u);
  // c did not move (its normal top, 52 against 51 over 1 % of 51): last, no confidence.
  EXPECT_EQ(r.ranked[4].series, "c/mem_mb");
  EXPECT_NEAR(r.ranked[4].evidence.score, 1 / 0.51, 1e-12);
  EXPECT_EQ(r.ranked[4].confidence, 0);
  // The confidence is shared by the causes that moved: 160 and 6.
  double total = 0;
  for (const Candidate& c : r.ranked) total += c.confidence;
  EXPECT_NEAR(total, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.ranked[0].confidence, 160.0 / 166);
  EXPECT_DOUBLE_EQ(r.ranked[1].confidence, 6.0 / 166);
}

TEST(RankerTest, LateAlertKeepsTheOnsetOutOfTheBaseline) {
  // The alert fires 60 s after the onset. With the default guard band the baseline ends before
  // the onset and the score is the full step; without one, 60 s of the incident sit in the
  // baseline and its IQR grows.
  std::vector<TimedSeries> s = {Step("a/cpu", 0, 1360, 1000, {9, 10, 11, 10}, 90)};
  Ranking late = RankCauses(s, 1060);
  EXPECT_DOUBLE_EQ(late.ranked[0].evidence.score, 160);
  EXPECT_DOUBLE_EQ(late.ranked[0].evidence.onset_time, 1000);
  RankOptions no_guard;
  no_guard.guard_s = 0;
  no_guard.baseline_s = 300;
  Ranking unguarded = RankCauses(s, 1060, no_guard);
  EXPECT_LT(unguarded.ranked[0].evidence.score, 160);
  EXPECT_GT(unguarded.ranked[0].evidence.baseline.iqr, 0.5);
}

TEST(RankerTest, NoResourceMovedTheDelayIsADependency) {
  std::vector<TimedSeries> s = {
      Step("a/cpu", 0, 1300, 1000, {9, 10, 11, 10}, 10),
      Step("redis/latency_p99_s", 0, 1300, 1000, {0.001, 0.0011, 0.0012, 0.0011}, 0.8),
  };
  Ranking r = RankCauses(s, 1000);
  EXPECT_EQ(r.ranked[0].series, "redis/latency_p99_s");
  EXPECT_EQ(r.quadrant, Quadrant::kDependency);
}

TEST(RankerTest, OnlyTheWorseDirectionCounts) {
  std::vector<TimedSeries> s = {
      Step("a/cpu", 0, 1300, 1000, {50, 51, 52, 51}, 1),              // fell: not a cause
      Step("a/success_pct", 0, 1300, 1000, {99, 100, 100, 100}, 40),  // fell: worse
  };
  Ranking r = RankCauses(s, 1000);
  EXPECT_EQ(r.ranked[0].series, "a/success_pct");
  EXPECT_FALSE(r.ranked[0].evidence.rose);
  // Only the normal points in the guard band count for the CPU: (52 - 51) / 0.51, not moved.
  EXPECT_NEAR(Find(r, "a/cpu")->evidence.score, 1 / 0.51, 1e-12);
}

TEST(RankerTest, PointsAfterTheWindowAreNeverSeen) {
  // The step comes 301 s after the alert: outside the window, nothing moved.
  std::vector<TimedSeries> s = {Step("a/cpu", 0, 1600, 1301, {9, 10, 11, 10}, 90)};
  Ranking r = RankCauses(s, 1000);
  EXPECT_EQ(r.ranked[0].evidence.score, 2);  // (11 - 10) / 0.5: the normal cycle's top
  EXPECT_EQ(r.quadrant, Quadrant::kUnknown);
  EXPECT_TRUE(r.symptoms.empty());
}

TEST(RankerTest, SeriesWithoutABaselineOrWindowAreLeftOut) {
  std::vector<TimedSeries> s = {
      Step("new/cpu", 990, 1300, 990, {0}, 90),             // starts inside the guard band
      Step("gone/cpu", 0, 900, 1000, {9, 10, 11, 10}, 90),  // ends before the window
      Step("a/cpu", 0, 1300, 1000, {9, 10, 11, 10}, 90),
  };
  s[0].values[0] = std::nan("");
  Ranking r = RankCauses(s, 1000);
  ASSERT_EQ(r.ranked.size(), 1u);
  EXPECT_EQ(r.ranked[0].series, "a/cpu");
}

}  // namespace
}  // namespace tailguard::diagnose
