// Hampel filter: hand-computed cases and agreement with a brute-force median/MAD.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

#include "tailguard/detect.h"

namespace tailguard {
namespace {

TEST(HampelTest, HandComputedWindow) {
  Hampel h({.window = 5, .threshold = 3});
  for (double x : {1, 2, 3, 4, 5}) EXPECT_FALSE(h.Update(x).ready);
  // Window {1,2,3,4,5}: median 3; distances {2,1,0,1,2}, MAD 1.
  HampelResult r = h.Update(3);
  ASSERT_TRUE(r.ready);
  EXPECT_DOUBLE_EQ(r.median, 3);
  EXPECT_DOUBLE_EQ(r.mad, 1);
  EXPECT_DOUBLE_EQ(r.z, 0);
  EXPECT_FALSE(r.outlier);
  // Window {2,3,4,5,3}: median 3, distances {1,0,1,2,0}, MAD 1; z = 97 / 1.4826.
  r = h.Update(100);
  EXPECT_DOUBLE_EQ(r.median, 3);
  EXPECT_DOUBLE_EQ(r.mad, 1);
  EXPECT_NEAR(r.z, 97 / 1.4826, 1e-9);
  EXPECT_TRUE(r.outlier);
  // Just inside the threshold: window {3,4,5,3,100}, median 4, distances {1,0,1,1,96}, MAD 1.
  r = h.Update(4 + 2.9 * 1.4826);
  EXPECT_DOUBLE_EQ(r.median, 4);
  EXPECT_FALSE(r.outlier);
}

TEST(HampelTest, FlatWindowMakesAnyChangeAnOutlier) {
  Hampel h({.window = 4});
  for (int i = 0; i < 4; ++i) h.Update(7);
  EXPECT_EQ(h.Update(7).z, 0);
  EXPECT_TRUE(h.Update(7.5).outlier);
}

TEST(HampelTest, MissingPointsAreNeitherJudgedNorAdded) {
  Hampel h({.window = 3});
  h.Update(1);
  h.Update(2);
  EXPECT_FALSE(h.Update(kNaN).ready);
  EXPECT_FALSE(h.Update(3).ready);  // the window holds 1, 2 and now 3
  EXPECT_DOUBLE_EQ(h.Update(2).median, 2);
}

// Brute force: sort a copy of the window for every point.
void CompareWithBruteForce(int window, uint64_t seed) {
  Hampel h({.window = window, .threshold = 3});
  std::deque<double> win;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> small(0, 20);  // many ties
  std::normal_distribution<double> wide(0, 10);
  for (int i = 0; i < 3000; ++i) {
    const double x = i % 3 == 0 ? small(rng) : wide(rng);
    const HampelResult r = h.Update(x);
    if (static_cast<int>(win.size()) == window) {
      std::vector<double> v(win.begin(), win.end());
      std::sort(v.begin(), v.end());
      const size_t n = v.size();
      const double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
      std::vector<double> d;
      for (double y : v) d.push_back(std::abs(y - med));
      std::sort(d.begin(), d.end());
      const double mad = n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]);
      ASSERT_TRUE(r.ready);
      ASSERT_DOUBLE_EQ(r.median, med) << "point " << i;
      ASSERT_DOUBLE_EQ(r.mad, mad) << "point " << i;
      win.pop_front();
    }
    win.push_back(x);
  }
}

TEST(HampelTest, AgreesWithBruteForceOddWindow) { CompareWithBruteForce(31, 1); }
TEST(HampelTest, AgreesWithBruteForceEvenWindow) { CompareWithBruteForce(30, 2); }
TEST(HampelTest, AgreesWithBruteForceTinyWindows) {
  for (int w = 1; w <= 6; ++w) CompareWithBruteForce(w, static_cast<uint64_t>(w) + 10);
}

}  // namespace
}  // namespace tailguard
