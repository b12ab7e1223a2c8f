// Holt-Winters: hand-computed cold start, trend, seasons (additive and multiplicative), the
// prediction band, missing points.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tailguard/detect.h"

namespace tailguard {
namespace {

TEST(HoltWintersTest, ColdStartMatchesHandComputedHolt) {
  HoltWinters hw;
  EXPECT_EQ(hw.Next().model, 0);
  EXPECT_TRUE(std::isnan(hw.Next().value));
  hw.Update(10);  // level 10, trend 0
  EXPECT_DOUBLE_EQ(hw.Next().value, 10);
  const Forecast f = hw.Update(12);
  EXPECT_DOUBLE_EQ(f.value, 10);  // what was forecast for 12
  // level = 0.3 * 12 + 0.7 * 10 = 10.6; trend = 0.02 * 0.6 = 0.012; next = 10.6 + 0.98 * 0.012.
  EXPECT_NEAR(hw.Next().value, 10.6 + 0.98 * 0.012, 1e-12);
  EXPECT_NEAR(hw.Ahead(2).value, 10.6 + (0.98 + 0.98 * 0.98) * 0.012, 1e-12);
}

TEST(HoltWintersTest, FollowsALinearTrend) {
  HoltWinters hw;
  for (int i = 0; i < 300; ++i) hw.Update(100 + 2.0 * i);
  // The trend is damped (phi 0.98) but refitted: the next point is forecast within 1 %.
  EXPECT_NEAR(hw.Next().value, 700, 7);
  EXPECT_EQ(hw.mode(), Seasonality::kAuto);  // no season configured
}

// 24 points a day, a daily wave on a level, with a little noise.
std::vector<double> Daily(int days, double level, double amp, bool multiplicative, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.5);
  std::vector<double> v;
  for (int i = 0; i < days * 24; ++i) {
    const double wave = std::sin(2 * M_PI * (i % 24) / 24.0);
    const double grow = level * (1 + 0.01 * i / 24.0);
    v.push_back(multiplicative ? grow * (1 + amp * wave) + noise(rng)
                               : level + amp * wave + noise(rng));
  }
  return v;
}

TEST(HoltWintersTest, LearnsAnAdditiveDailySeason) {
  HoltWinters hw({.seasons = {24}});
  const std::vector<double> v = Daily(20, 100, 20, false, 1);
  double err = 0;
  int n = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const Forecast f = hw.Update(v[i]);
    if (i >= v.size() - 48) {
      err += std::abs(f.value - v[i]);
      ++n;
    }
  }
  EXPECT_EQ(hw.Next().model, 3);
  EXPECT_GT(hw.gamma(), 0);
  // Mean error near the noise (0.4 for sigma 0.5), far below the wave's amplitude of 20.
  EXPECT_LT(err / n, 1.5);
  // The band covers ordinary points and not a spike.
  const Forecast next = hw.Next();
  EXPECT_LT(next.lower, next.value);
  EXPECT_GT(next.upper, next.value);
  EXPECT_GT(next.value + 30, next.upper);
}

TEST(HoltWintersTest, PicksMultiplicativeWhenTheSeasonScalesWithTheLevel) {
  HoltWinters hw({.seasons = {24}});
  for (double x : Daily(30, 1000, 0.5, true, 2)) hw.Update(x);
  EXPECT_EQ(hw.mode(), Seasonality::kMultiplicative);
  HoltWinters add({.seasons = {24}, .mode = Seasonality::kAdditive});
  for (double x : Daily(30, 1000, 0.5, true, 2)) add.Update(x);
  EXPECT_EQ(add.mode(), Seasonality::kAdditive);
}

TEST(HoltWintersTest, NoSeasonIsForcedOnNoise) {
  HoltWinters hw({.seasons = {24}});
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(50, 5);
  for (int i = 0; i < 24 * 10; ++i) hw.Update(noise(rng));
  EXPECT_EQ(hw.mode(), Seasonality::kAuto);
  EXPECT_NEAR(hw.Next().value, 50, 3);
}

TEST(HoltWintersTest, MissingPointsAdvanceTime) {
  HoltWinters full({.seasons = {24}});
  HoltWinters gappy({.seasons = {24}});
  const std::vector<double> v = Daily(12, 100, 20, false, 4);
  for (size_t i = 0; i < v.size(); ++i) {
    full.Update(v[i]);
    gappy.Update(i % 7 == 3 ? kNaN : v[i]);
  }
  // Same phase, nearly the same forecast.
  EXPECT_NEAR(gappy.Next().value, full.Next().value, 3);
  EXPECT_EQ(gappy.points(), full.points());
}

TEST(HoltWintersTest, TwoSeasonsDailyAndWeekly) {
  // 6 points a day, weekly season of 42: weekends are lower.
  HoltWinters hw({.seasons = {6, 42}});
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.3);
  auto value = [&](int i) {
    const int day = (i / 6) % 7;
    return 100 + 10 * std::sin(2 * M_PI * (i % 6) / 6.0) - (day >= 5 ? 30 : 0) + noise(rng);
  };
  double err = 0;
  for (int i = 0; i < 42 * 8; ++i) {
    const double x = value(i);
    const Forecast f = hw.Update(x);
    if (i >= 42 * 7) err += std::abs(f.value - x);
  }
  EXPECT_LT(err / 42, 3.0);
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

TEST(HoltWintersTest, InfinityIsAMissingPoint) {
  HoltWinters hw;
  for (int i = 0; i < 100; ++i) hw.Update(50);
  hw.Update(INFINITY);
  EXPECT_NEAR(hw.Next().value, 50, 1e-6);
  EXPECT_EQ(hw.points(), 101);
}

TEST(HoltWintersTest, MeaninglessSeasonsAreDropped) {
  HoltWinters hw({.seasons = {0, 1, 24, 48, 96}});
  EXPECT_EQ(hw.options().seasons, (std::vector<int>{24, 48}));
}

}  // namespace
}  // namespace tailguard
