// Schedule generation for every rate pattern, with exact counts and intended times; Poisson
// arrivals from a scripted random source, so nothing depends on the wall clock or the RNG.
#include "loadgen/schedule.h"

#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace tailguard::loadgen {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<ScheduledRequest> All(Schedule s) {
  std::vector<ScheduledRequest> out;
  while (auto r = s.Next()) out.push_back(*r);
  return out;
}

Phase Make(std::vector<RateSegment> segments, Distribution d = Distribution::kConstant) {
  Phase p;
  p.segments = std::move(segments);
  p.distribution = d;
  return p;
}

TEST(ScheduleTest, ConstantRateIsEvenlySpacedAndExact) {
  const auto all = All(Schedule({ConstantPhase(seconds(2), 500)}, 1));
  ASSERT_EQ(all.size(), 1000u);
  for (size_t k = 0; k < all.size(); ++k) {
    EXPECT_EQ(all[k].at, milliseconds(2) * static_cast<int>(k)) << k;
    EXPECT_EQ(all[k].sequence, k);
    EXPECT_EQ(all[k].phase, 0u);
  }
}

TEST(ScheduleTest, FractionalRatesCarryOverAndCountTheIntegral) {
  // 1.5/s for 2 s is 3 requests, at 0, 0.667 s and 1.333 s.
  const auto all = All(Schedule({ConstantPhase(seconds(2), 1.5)}, 1));
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].at.count(), 666666667);
  EXPECT_EQ(all[2].at.count(), 1333333333);
}

TEST(ScheduleTest, StepsChangeTheRateAtEachBoundary) {
  Phase p = Make(StepRates(
      {{seconds(1), 100}, {milliseconds(500), 200}, {seconds(1), 0}, {milliseconds(100), 50}}));
  const auto all = All(Schedule({p}, 1));
  // 100 + 100 + 0 + 5.
  ASSERT_EQ(all.size(), 205u);
  EXPECT_EQ(all[99].at, milliseconds(990));
  EXPECT_EQ(all[100].at, milliseconds(1000));
  EXPECT_EQ(all[101].at, milliseconds(1005));
  EXPECT_EQ(all[199].at, milliseconds(1495));
  // The pause sends nothing; the last step starts at 2.5 s.
  EXPECT_EQ(all[200].at, milliseconds(2500));
  EXPECT_EQ(all[204].at, milliseconds(2580));
}

TEST(ScheduleTest, RampFollowsTheIntegral) {
  // 0 to 100/s over 2 s: L(t) = 25 t^2, 100 requests; request k at sqrt(k / 25) s.
  const auto all = All(Schedule({Make(RampRate(seconds(2), 0, 100))}, 1));
  ASSERT_EQ(all.size(), 100u);
  for (size_t k = 0; k < all.size(); ++k) {
    const double expected_ns = std::sqrt(static_cast<double>(k) / 25.0) * 1e9;
    EXPECT_NEAR(static_cast<double>(all[k].at.count()), expected_ns, 2.0) << k;
  }
  // Down again: 100/s to 0 over 2 s has the same count, dense first.
  const auto down = All(Schedule({Make(RampRate(seconds(2), 100, 0))}, 1));
  ASSERT_EQ(down.size(), 100u);
  EXPECT_LT(down[50].at, seconds(1));
}

TEST(ScheduleTest, BurstsRepeatEveryPeriod) {
  // 10/s with 100 ms bursts of 1000/s every second, for 2 s: 100 + 9 per second.
  const auto all =
      All(Schedule({Make(BurstRate(seconds(2), 10, seconds(1), milliseconds(100), 1000))}, 1));
  ASSERT_EQ(all.size(), 218u);
  int in_bursts = 0;
  for (const ScheduledRequest& r : all) {
    const auto ms = std::chrono::duration_cast<milliseconds>(r.at).count() % 1000;
    if (ms < 100) ++in_bursts;
  }
  EXPECT_EQ(in_bursts, 200);
  EXPECT_EQ(all[100].at, milliseconds(100));  // the first after the burst
  EXPECT_EQ(all[109].at, seconds(1));         // the second burst starts on time
}

TEST(ScheduleTest, PhasesFollowOneAnotherWithTheirIndex) {
  Phase a = ConstantPhase(seconds(1), 10);
  Phase b = ConstantPhase(seconds(1), 20);
  const auto all = All(Schedule({a, b}, 1));
  ASSERT_EQ(all.size(), 30u);
  EXPECT_EQ(all[9].phase, 0u);
  EXPECT_EQ(all[10].phase, 1u);
  EXPECT_EQ(all[10].at, seconds(1));
  EXPECT_EQ(all[11].at, milliseconds(1050));
  EXPECT_EQ(all[29].sequence, 29u);
}

TEST(ScheduleTest, LeadingPauseSendsNothingUntilItEnds) {
  const auto all =
      All(Schedule({Make(ConstantRate(seconds(1), 0)), ConstantPhase(seconds(1), 4)}, 1));
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].at, seconds(1));
  EXPECT_EQ(all[0].phase, 1u);
}

TEST(ScheduleTest, PoissonGapsComeFromTheRandomSource) {
  // u = 1 - e^-1 gives gaps of exactly 1 request: the times of a constant rate, shifted by one.
  const double u = 1 - std::exp(-1.0);
  // 1.005 s at 100/s asks for 100.5 requests: targets 1 ... 100.
  const auto fixed = All(Schedule({ConstantPhase(milliseconds(1005), 100, Distribution::kPoisson)},
                                  Schedule::UniformSource([u] { return u; })));
  ASSERT_EQ(fixed.size(), 100u);
  EXPECT_NEAR(static_cast<double>(fixed[0].at.count()), 10e6, 1);
  EXPECT_NEAR(static_cast<double>(fixed[99].at.count()), 1000e6, 1);

  // Scripted draws: gaps -ln(1 - u) / rate.
  const std::vector<double> draws = {0.5, 0.1, 0.9};
  size_t i = 0;
  Schedule s({ConstantPhase(seconds(10), 10, Distribution::kPoisson)},
             Schedule::UniformSource([&] { return draws[i++ % draws.size()]; }));
  double t = 0;
  for (int k = 0; k < 6; ++k) {
    t += -std::log(1 - draws[static_cast<size_t>(k) % draws.size()]) / 10;
    const auto r = s.Next();
    ASSERT_TRUE(r.has_value());
    EXPECT_NEAR(static_cast<double>(r->at.count()), t * 1e9, 2) << k;
  }
}

TEST(ScheduleTest, PoissonIsDeterministicPerSeedWithTheRightMean) {
  const std::vector<Phase> phases = {ConstantPhase(seconds(100), 100, Distribution::kPoisson)};
  const auto a = All(Schedule(phases, 42));
  const auto b = All(Schedule(phases, 42));
  const auto c = All(Schedule(phases, 43));
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) ASSERT_EQ(a[k].at, b[k].at);
  EXPECT_FALSE(a.size() == c.size() && a[5].at == c[5].at);
  // 10000 expected; the standard deviation is 100.
  EXPECT_NEAR(static_cast<double>(a.size()), 10000, 400);
  for (size_t k = 1; k < a.size(); ++k) ASSERT_GE(a[k].at, a[k - 1].at);
}

// Regression: the seeded random source once captured `this`, and a moved Schedule drew from the
// moved-from object's generator.
TEST(ScheduleTest, MovedPoissonScheduleKeepsItsGenerator) {
  const std::vector<Phase> phases = {ConstantPhase(seconds(10), 100, Distribution::kPoisson)};
  auto first = std::make_unique<Schedule>(phases, 7);
  Schedule moved = std::move(*first);
  first.reset();
  const auto a = All(std::move(moved));
  const auto b = All(Schedule(phases, 7));
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) ASSERT_EQ(a[k].at, b[k].at) << k;
}

TEST(ScheduleTest, ExpectedRequestsAndDuration) {
  Schedule s({ConstantPhase(seconds(2), 500), Make(RampRate(seconds(2), 0, 100))}, 1);
  EXPECT_EQ(s.total_duration(), seconds(4));
  EXPECT_DOUBLE_EQ(s.expected_requests(), 1100);
}

TEST(ScheduleTest, EmptyScheduleEndsAtOnce) {
  Schedule s({}, 1);
  EXPECT_FALSE(s.Next().has_value());
  EXPECT_FALSE(Schedule({Make(ConstantRate(seconds(5), 0))}, 1).Next().has_value());
}

}  // namespace
}  // namespace tailguard::loadgen
