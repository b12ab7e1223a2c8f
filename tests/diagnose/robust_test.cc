// Robust baselines: hand-computed medians, quartiles and the scale's fallbacks.
#include "diagnose/robust.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tailguard::diagnose {
namespace {

TEST(RobustTest, QuartilesInterpolateLikeNumpy) {
  // numpy.percentile([1,2,3,4,10], [25,50,75]) = 2, 3, 4.
  Baseline b = DescribeBaseline({10, 1, 3, 2, 4});
  EXPECT_EQ(b.n, 5u);
  EXPECT_DOUBLE_EQ(b.median, 3);
  EXPECT_DOUBLE_EQ(b.q1, 2);
  EXPECT_DOUBLE_EQ(b.q3, 4);
  EXPECT_DOUBLE_EQ(b.iqr, 2);
  EXPECT_DOUBLE_EQ(b.scale, 2);
  EXPECT_DOUBLE_EQ(RobustScore(b, 9), 3);
  // Even count: [1,2,3,4] -> median 2.5, q1 1.75, q3 3.25.
  Baseline e = DescribeBaseline({4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(e.median, 2.5);
  EXPECT_DOUBLE_EQ(e.q1, 1.75);
  EXPECT_DOUBLE_EQ(e.q3, 3.25);
}

TEST(RobustTest, FlatSeriesUsesOnePercentOfItsLevel) {
  // Memory read every second barely moves: IQR 0.002, but a deviation is measured in 1 % of
  // the level (3.0), so a 1 % wobble is not a thousand IQRs.
  Baseline b = DescribeBaseline({300.000, 300.001, 300.002, 300.003, 300.004});
  EXPECT_NEAR(b.iqr, 0.002, 1e-9);
  EXPECT_NEAR(b.scale, 3.00002, 1e-6);
  EXPECT_NEAR(RobustScore(b, 303.002), 1.0, 1e-4);
}

TEST(RobustTest, ZeroLevelFallsBackToResolution) {
  // All zero before; the window shows steps of 0.5: the scale is the smallest gap ever seen.
  Baseline b = DescribeBaseline({0, 0, 0, 0}, {0.5, 1.5, 2});
  EXPECT_DOUBLE_EQ(b.scale, 0.5);
  EXPECT_DOUBLE_EQ(RobustScore(b, 2), 4);
  // Constant everywhere: scale 0, scores nothing.
  Baseline c = DescribeBaseline({0, 0}, {0});
  EXPECT_EQ(c.scale, 0);
  EXPECT_EQ(RobustScore(c, 5), 0);
}

TEST(RobustTest, NanIsSkippedAndEmptyScoresZero) {
  Baseline b = DescribeBaseline({std::nan(""), 1, 2, 3});
  EXPECT_EQ(b.n, 3u);
  EXPECT_DOUBLE_EQ(b.median, 2);
  Baseline empty = DescribeBaseline({});
  EXPECT_EQ(empty.n, 0u);
  EXPECT_EQ(RobustScore(empty, 1), 0);
}

}  // namespace
}  // namespace tailguard::diagnose
