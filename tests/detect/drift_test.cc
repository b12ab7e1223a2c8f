// Drift detector: a slow rise after a flat period is found with its rate and start; noise is not.
#include <gtest/gtest.h>

#include <random>

#include "tailguard/detect.h"

namespace tailguard {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

const WallTime kStart = FakeClock::DefaultStart();

// Hourly points for `days`: flat at 100 until `onset_day`, then rising `pct_per_week` of 100.
DriftDetector Feed(int days, int onset_day, double pct_per_week, double noise, uint64_t seed) {
  DriftDetector d;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, noise);
  for (int h = 0; h < days * 24; ++h) {
    const double day = h / 24.0;
    const double rise = day > onset_day ? (day - onset_day) / 7 * pct_per_week : 0;
    d.Add(kStart + hours(h), 100 + rise + n(rng));
  }
  return d;
}

TEST(DriftTest, FindsThreePercentAWeekAndWhenItStarted) {
  DriftDetector d = Feed(60, 30, 3.0, 2.0, 1);
  const DriftFinding& f = d.Current();
  ASSERT_TRUE(f.drifting) << f.z << " " << f.pct_per_week;
  EXPECT_NEAR(f.pct_per_week, 3.0, 0.5);
  using Days = std::chrono::duration<double, std::ratio<86400>>;
  EXPECT_NEAR(Days(f.since - kStart).count(), 30, 3);
  EXPECT_GT(f.z, 2.58);
  // 2026-01-01 + 30 days = 2026-01-31, give or take the fit.
  EXPECT_EQ(f.Describe().substr(0, 7), "rising ");
  EXPECT_NE(f.Describe().find("%/week since 2026-0"), std::string::npos) << f.Describe();
}

TEST(DriftTest, NoiseIsNotDrift) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    EXPECT_FALSE(Feed(60, 0, 0.0, 5.0, seed).Current().drifting) << "seed " << seed;
  }
}

TEST(DriftTest, TooFewWeeksSayNothingYet) {
  DriftDetector d = Feed(10, 0, 10.0, 0.1, 2);  // steep, but only 9 complete days
  EXPECT_FALSE(d.Current().drifting);
  EXPECT_EQ(d.Current().buckets, 9);
}

TEST(DriftTest, FallingIsReportedToo) {
  DriftDetector d = Feed(50, 10, -5.0, 1.0, 3);
  ASSERT_TRUE(d.Current().drifting);
  EXPECT_LT(d.Current().pct_per_week, 0);
  EXPECT_EQ(d.Current().Describe().substr(0, 8), "falling ");
}

TEST(DriftTest, EarlierPointsAndMissingValuesAreIgnored) {
  DriftDetector d;
  d.Add(kStart + hours(48), 1);
  d.Add(kStart, 1000);  // goes back in time: ignored
  d.Add(kStart + hours(49), kNaN);
  d.Add(kStart + hours(72), 1);
  EXPECT_EQ(d.Current().buckets, 1);
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression (review): a zero bucket divided by zero.
TEST(DriftTest, NonsenseOptionsFallBackInsteadOfCrashing) {
  DriftDetector d({.bucket = Duration(0)});  // one day
  for (int h = 0; h < 24 * 20; ++h) d.Add(kStart + hours(h), 100 + h * 0.1);
  EXPECT_EQ(d.Current().buckets, 19);
  EXPECT_TRUE(d.Current().drifting);
  DriftDetector tiny({.min_buckets = 0, .max_buckets = -5});  // at least 3 buckets
  for (int h = 0; h < 24 * 20; ++h) tiny.Add(kStart + hours(h), 100 + h * 0.1);
  EXPECT_EQ(tiny.Current().buckets, 3);
}

}  // namespace
}  // namespace tailguard
