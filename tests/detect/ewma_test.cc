// EWMA against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "tailguard/detect.h"

namespace tailguard {
namespace {

TEST(EwmaTest, MatchesHandComputedValues) {
  Ewma e(0.2);
  EXPECT_TRUE(std::isnan(e.value()));
  EXPECT_DOUBLE_EQ(e.Update(10), 10);     // the first point is the average
  EXPECT_DOUBLE_EQ(e.Update(20), 12);     // 0.2 * 20 + 0.8 * 10
  EXPECT_DOUBLE_EQ(e.Update(0), 9.6);     // 0.8 * 12
  EXPECT_DOUBLE_EQ(e.Update(kNaN), 9.6);  // missing points are skipped
  EXPECT_DOUBLE_EQ(e.value(), 9.6);
}

TEST(EwmaTest, AlphaOneFollowsTheInput) {
  Ewma e(1.0);
  e.Update(3);
  EXPECT_DOUBLE_EQ(e.Update(7), 7);
}

TEST(EwmaTest, StepResponseClosesTheGapGeometrically) {
  Ewma e(0.2);
  e.Update(0);
  for (int i = 1; i <= 10; ++i) {
    const double v = e.Update(100);
    EXPECT_NEAR(v, 100 * (1 - std::pow(0.8, i)), 1e-9);
  }
}

}  // namespace
}  // namespace tailguard
