// Tests for NAB-style backtest scoring and the window file readers. The expected numbers are
// worked out by hand in the comments, with S(x) = 2 / (1 + exp(5x)) - 1 (NAB's scaled sigmoid):
//   S(-1) = 0.9866142981514305 (the first row of a window; NAB v1.1 divides TP values by it,
//           so the first row earns exactly tp_weight, not 0.9866)
//   S(-0.6) / S(-1) = 0.9174286804284079   S(-0.2) / S(-1) = 0.46838684390227814
//   S(0.25) = -0.5545997223493824           S(1.25) = -0.996146530673345
//   S(0.75) = -0.9545054... (computed in the test)
#include "tailguard/backtest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tailguard/series_io.h"

namespace tailguard {
namespace {

namespace fs = std::filesystem;
using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr double kMaxTp = 0.9866142981514305;
constexpr double kTpMid = 0.9174286804284079;    // row 12 of a window on rows 10..14
constexpr double kTpLast = 0.46838684390227814;  // row 14 of that window

double S(double x) { return x > 3 ? -1.0 : 2.0 / (1.0 + std::exp(5.0 * x)) - 1.0; }

std::string Message(const absl::Status& s) { return std::string(s.message()); }

const WallTime kT0 = WallTime(std::chrono::seconds(1397114100));  // 2014-04-10 07:15:00

// Row i is at kT0 + 5 min * i.
WallTime Row(int i) { return kT0 + minutes(5) * i; }

// A 20-row series at 5-minute steps with one window on rows 10..14 and the given detections.
// With 20 rows the probationary period is floor(0.15 * 20) = 3 rows (rows 0..2).
ScoredSeries Twenty(std::vector<int> detections, std::string name = "cat/f.csv") {
  ScoredSeries s;
  s.name = std::move(name);
  for (int i = 0; i < 20; ++i) s.times.push_back(Row(i));
  s.scores.assign(20, 0.0);
  for (int d : detections) s.scores[static_cast<size_t>(d)] = 1.0;
  s.windows = {{Row(10), Row(14)}};
  return s;
}

CostProfile Standard() { return NabProfiles()[0]; }

CorpusScore At(const std::vector<ScoredSeries>& corpus, const CostProfile& p, double threshold) {
  absl::StatusOr<CorpusScore> c = ScoreAtThreshold(corpus, p, threshold);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : CorpusScore{};
}

TEST(NabProfiles, Weights) {
  const std::vector<CostProfile> p = NabProfiles();
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].name, "standard");
  EXPECT_EQ(p[0].tp_weight, 1.0);
  EXPECT_EQ(p[0].fp_weight, 0.11);
  EXPECT_EQ(p[0].fn_weight, 1.0);
  EXPECT_EQ(p[1].name, "reward_low_FP_rate");
  EXPECT_EQ(p[1].fp_weight, 0.22);
  EXPECT_EQ(p[2].name, "reward_low_FN_rate");
  EXPECT_EQ(p[2].fn_weight, 2.0);
}

TEST(ScoreAtThreshold, DetectionAtWindowStartEarnsFullTpWeight) {
  // Row 10 is the first of the W = 5 window rows (last row R = 14): position -(14 - 10 + 1) / 5
  // = -1, S(-1) / S(-1) = 1. The unscaled sigmoid would give 0.9866; NAB v1.1 scales it to 1.
  const CorpusScore c = At({Twenty({10})}, Standard(), 0.5);
  ASSERT_EQ(c.files.size(), 1u);
  const FileOutcome& f = c.files[0];
  EXPECT_EQ(f.rows, 20);
  EXPECT_EQ(f.probationary_rows, 3);
  ASSERT_EQ(f.windows.size(), 1u);
  EXPECT_EQ(f.windows[0].first_row, 10);
  EXPECT_EQ(f.windows[0].last_row, 14);
  EXPECT_TRUE(f.windows[0].detected);
  EXPECT_EQ(f.windows[0].detection_row, 10);
  EXPECT_EQ(f.windows[0].delay, Duration(0));
  EXPECT_DOUBLE_EQ(f.windows[0].score, 1.0);
  EXPECT_DOUBLE_EQ(f.raw_score, 1.0);
  EXPECT_EQ(f.detected, 1);
  EXPECT_EQ(f.missed, 0);
  EXPECT_EQ(f.false_positives, 0);
  // Perfect: null -1, perfect 1, 100 * (1 - -1) / (1 - -1) = 100.
  EXPECT_DOUBLE_EQ(c.null_score, -1.0);
  EXPECT_DOUBLE_EQ(c.perfect_score, 1.0);
  EXPECT_DOUBLE_EQ(c.normalized_score, 100.0);
}

TEST(ScoreAtThreshold, LaterDetectionsEarnLessAlongTheSigmoid) {
  // Row 12: position -(14 - 12 + 1) / 5 = -0.6, S(-0.6) / S(-1) = 0.91743; 10 minutes late.
  CorpusScore c = At({Twenty({12})}, Standard(), 0.5);
  EXPECT_NEAR(c.raw_score, kTpMid, 1e-12);
  EXPECT_NEAR(kTpMid, S(-0.6) / kMaxTp, 1e-15);
  EXPECT_EQ(c.files[0].windows[0].delay, minutes(10));
  EXPECT_EQ(c.mean_delay, minutes(10));
  // Row 14, the last: position -1/5, S(-0.2) / S(-1) = 0.46839.
  c = At({Twenty({14})}, Standard(), 0.5);
  EXPECT_NEAR(c.raw_score, kTpLast, 1e-12);
  EXPECT_EQ(c.files[0].windows[0].delay, minutes(20));
}

TEST(ScoreAtThreshold, OnlyTheEarliestDetectionInAWindowCounts) {
  // Rows 12, 13 and 14 all fire: only row 12 counts, the others neither earn nor cost.
  const CorpusScore c = At({Twenty({12, 13, 14})}, Standard(), 0.5);
  EXPECT_NEAR(c.raw_score, kTpMid, 1e-12);
  EXPECT_EQ(c.files[0].windows[0].detection_row, 12);
  EXPECT_EQ(c.files[0].tp_rows, 3);
  EXPECT_EQ(c.files[0].fn_rows, 2);
  EXPECT_EQ(c.false_positives, 0);
}

TEST(ScoreAtThreshold, MissedWindowCostsFnWeight) {
  const CorpusScore standard = At({Twenty({})}, Standard(), 0.5);
  EXPECT_DOUBLE_EQ(standard.raw_score, -1.0);
  EXPECT_EQ(standard.missed, 1);
  EXPECT_EQ(standard.detected, 0);
  EXPECT_FALSE(standard.files[0].windows[0].detected);
  EXPECT_DOUBLE_EQ(standard.files[0].windows[0].score, -1.0);
  // Never detecting is the null detector: normalised 0.
  EXPECT_DOUBLE_EQ(standard.normalized_score, 0.0);
  const CorpusScore low_fn = At({Twenty({})}, NabProfiles()[2], 0.5);
  EXPECT_DOUBLE_EQ(low_fn.raw_score, -2.0);
  EXPECT_DOUBLE_EQ(low_fn.normalized_score, 0.0);
}

TEST(ScoreAtThreshold, FalsePositiveBeforeAnyWindowCostsFpWeight) {
  // Row 5 is before the window: -0.11 (standard), -0.22 (reward_low_FP_rate).
  // Raw: -0.11 + 1 (row 10) = 0.89; normalised 100 * (0.89 + 1) / 2 = 94.5.
  CorpusScore c = At({Twenty({5, 10})}, Standard(), 0.5);
  EXPECT_NEAR(c.raw_score, 0.89, 1e-12);
  EXPECT_NEAR(c.files[0].fp_score, -0.11, 1e-12);
  EXPECT_NEAR(c.normalized_score, 94.5, 1e-9);
  EXPECT_EQ(c.false_positives, 1);
  c = At({Twenty({5, 10})}, NabProfiles()[1], 0.5);
  EXPECT_NEAR(c.raw_score, 0.78, 1e-12);
}

TEST(ScoreAtThreshold, FalsePositiveAfterAWindowIsScaledByDistance) {
  // Row 15 is d = 1 row after the window's last row, W - 1 = 4: 0.11 * S(0.25) = -0.06101.
  // Row 19 is d = 5: 0.11 * S(1.25) = -0.10958.
  CorpusScore c = At({Twenty({15})}, Standard(), 0.5);
  EXPECT_NEAR(c.files[0].fp_score, 0.11 * -0.5545997223493824, 1e-12);
  EXPECT_NEAR(c.raw_score, -1.0 + 0.11 * -0.5545997223493824, 1e-12);
  c = At({Twenty({19})}, Standard(), 0.5);
  EXPECT_NEAR(c.files[0].fp_score, 0.11 * -0.996146530673345, 1e-12);
}

TEST(ScoreAtThreshold, FalsePositivesFarAfterAWindowCostFullWeight) {
  // 40 rows, window on rows 10..14: row 27 is d = 13 > 3 * (W - 1) = 12 rows after it: -0.11.
  ScoredSeries s;
  s.name = "long";
  for (int i = 0; i < 40; ++i) s.times.push_back(Row(i));
  s.scores.assign(40, 0.0);
  s.scores[27] = 1;
  s.windows = {{Row(10), Row(14)}};
  const CorpusScore c = At({s}, Standard(), 0.5);
  EXPECT_NEAR(c.files[0].fp_score, -0.11, 1e-12);
  EXPECT_EQ(c.files[0].probationary_rows, 6);  // floor(0.15 * 40)
}

TEST(ScoreAtThreshold, ProbationaryPeriodIsNotScored) {
  // Rows 0..2 are probationary: a detection there costs nothing.
  CorpusScore c = At({Twenty({1, 10})}, Standard(), 0.5);
  EXPECT_DOUBLE_EQ(c.raw_score, 1.0);
  EXPECT_EQ(c.false_positives, 0);
  // A window wholly inside the probationary period is not scored at all.
  ScoredSeries early = Twenty({1});
  early.windows = {{Row(0), Row(2)}};
  c = At({early}, Standard(), 0.5);
  EXPECT_DOUBLE_EQ(c.raw_score, 0.0);
  EXPECT_EQ(c.windows_scored, 0);
  EXPECT_FALSE(c.files[0].windows[0].scored);
  EXPECT_TRUE(std::isnan(c.normalized_score));
  // A window straddling the end of probation (rows 1..5) is scored, but a detection in its
  // probationary part (row 2) does not count: the window is missed.
  ScoredSeries straddle = Twenty({2});
  straddle.windows = {{Row(1), Row(5)}};
  c = At({straddle}, Standard(), 0.5);
  EXPECT_EQ(c.windows_scored, 1);
  EXPECT_EQ(c.missed, 1);
  EXPECT_DOUBLE_EQ(c.raw_score, -1.0);
  // Row 3, its first scored row, earns by its place in the whole window: position
  // -(5 - 3 + 1) / 5 = -0.6.
  straddle.scores[3] = 1;
  c = At({straddle}, Standard(), 0.5);
  EXPECT_NEAR(c.raw_score, kTpMid, 1e-12);
}

TEST(ScoreAtThreshold, ProbationIsCappedAt750Rows) {
  ScoredSeries s;
  s.name = "big";
  for (int i = 0; i < 10000; ++i) s.times.push_back(Row(i));
  s.scores.assign(10000, 0.0);
  s.scores[749] = 1;  // probationary
  s.scores[750] = 1;  // the first scored row, before any window: -0.11
  const CorpusScore c = At({s}, Standard(), 0.5);
  EXPECT_EQ(c.files[0].probationary_rows, 750);
  EXPECT_EQ(c.false_positives, 1);
  EXPECT_NEAR(c.raw_score, -0.11, 1e-12);
}

TEST(ScoreAtThreshold, FalsePositivesPerDay) {
  // Scored rows 3..19 span 16 * 5 min = 80 min = 1/18 day; one FP is 18 per day.
  const CorpusScore c = At({Twenty({5, 10})}, Standard(), 0.5);
  EXPECT_NEAR(c.files[0].scored_days, 80.0 / 1440.0, 1e-12);
  EXPECT_NEAR(c.files[0].fp_per_day, 18.0, 1e-9);
  EXPECT_NEAR(c.fp_per_day, 18.0, 1e-9);
}

TEST(ScoreAtThreshold, ThresholdIsInclusiveAndNaNNeverFires) {
  ScoredSeries s = Twenty({});
  s.scores[10] = 0.7;
  s.scores[5] = std::nan("");
  EXPECT_DOUBLE_EQ(At({s}, Standard(), 0.7).raw_score, 1.0);
  EXPECT_DOUBLE_EQ(At({s}, Standard(), 0.70001).raw_score, -1.0);
}

TEST(ScoreAtThreshold, WindowsMapToRowsByTime) {
  // A window from 07:17 to 07:33 holds the rows at 07:20, 07:25 and 07:30 (rows 1..3 of a
  // series starting at 07:15, here without a probationary period).
  ScoredSeries s = Twenty({2});
  s.windows = {{kT0 + minutes(2), kT0 + minutes(18)}};
  ScoringOptions no_probation;
  no_probation.probationary_fraction = 0;
  absl::StatusOr<CorpusScore> c = ScoreAtThreshold(std::vector{s}, Standard(), 0.5, no_probation);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->files[0].windows[0].first_row, 1);
  EXPECT_EQ(c->files[0].windows[0].last_row, 3);
  // Row 2 of rows 1..3: position -(3 - 2 + 1) / 3; the delay runs from the labelled start.
  EXPECT_NEAR(c->raw_score, S(-2.0 / 3) / kMaxTp, 1e-12);
  EXPECT_EQ(c->files[0].windows[0].delay, minutes(8));
  // A window between two rows holds none and is not scored.
  s.windows = {{kT0 + minutes(1), kT0 + minutes(2)}};
  c = ScoreAtThreshold(std::vector{s}, Standard(), 0.5, no_probation);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->files[0].windows[0].first_row, -1);
  EXPECT_EQ(c->windows_scored, 0);
}

TEST(ScoreAtThreshold, RejectsBadSeries) {
  ScoredSeries s = Twenty({});
  s.scores.pop_back();
  EXPECT_THAT(Message(ScoreAtThreshold(std::vector{s}, Standard(), 0.5).status()),
              HasSubstr("cat/f.csv: 19 scores for 20 rows"));
  s = Twenty({});
  std::swap(s.times[4], s.times[5]);
  EXPECT_THAT(Message(ScoreAtThreshold(std::vector{s}, Standard(), 0.5).status()),
              HasSubstr("cat/f.csv: row 6 (2014-04-10 07:35:00) is earlier than row 5"));
  s = Twenty({});
  s.windows = {{Row(10), Row(14)}, {Row(12), Row(16)}};
  EXPECT_THAT(Message(ScoreAtThreshold(std::vector{s}, Standard(), 0.5).status()),
              HasSubstr("cat/f.csv: window 2 overlaps"));
}

// Two files, each 20 rows with a window on rows 10..14:
//   A: row 10 scores 0.9 (TP at the start, +1), row 5 scores 0.6 (FP before the window, -0.11)
//   B: row 12 scores 0.8 (TP, +0.91743), row 17 scores 0.7 (FP 3 rows after the window,
//      0.11 * S(3/4)), row 6 scores 0.5 (FP, -0.11); all other rows 0.
// Standard profile, corpus raw score by threshold:
//   never (1.1): -1 - 1                       = -2
//   0.9:          1 - 1                       =  0
//   0.8:          1 + 0.91743                 =  1.91743   <- best
//   0.7:          1.91743 + 0.11 * S(0.75)    =  1.81243
//   0.6:          1.81243 - 0.11              =  1.70243
//   0.5:          1.70243 - 0.11              =  1.59243
//   0:            every scored row fires: B's window moves to row 10 (+0.08257) but 12 more FPs
//                 before the windows (-1.32) and 9 after them (-0.85) give about -0.5.
std::vector<ScoredSeries> TwoFiles() {
  ScoredSeries a = Twenty({}, "cat/a.csv");
  a.scores[10] = 0.9;
  a.scores[5] = 0.6;
  ScoredSeries b = Twenty({}, "cat/b.csv");
  b.scores[12] = 0.8;
  b.scores[17] = 0.7;
  b.scores[6] = 0.5;
  return {a, b};
}

TEST(SweepThresholds, ScoresEveryDistinctThreshold) {
  absl::StatusOr<std::vector<ThresholdScore>> sweep = SweepThresholds(TwoFiles(), Standard());
  ASSERT_TRUE(sweep.ok()) << sweep.status();
  ASSERT_EQ(sweep->size(), 7u);
  const double fp17 = 0.11 * S(0.75);
  const double expected[7][2] = {{1.1, -2.0},
                                 {0.9, 0.0},
                                 {0.8, 1 + kTpMid},
                                 {0.7, 1 + kTpMid + fp17},
                                 {0.6, 1 + kTpMid + fp17 - 0.11},
                                 {0.5, 1 + kTpMid + fp17 - 0.22},
                                 {0.0, 0.0}};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ((*sweep)[i].threshold, expected[i][0]) << i;
    EXPECT_NEAR((*sweep)[i].raw_score, expected[i][1], 1e-12) << i;
  }
  EXPECT_EQ((*sweep)[6].threshold, 0.0);
  EXPECT_LT((*sweep)[6].raw_score, 0.0);
}

TEST(ScoreOptimized, PicksTheBestThreshold) {
  absl::StatusOr<CorpusScore> c = ScoreOptimized(TwoFiles(), Standard());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->threshold, 0.8);
  EXPECT_NEAR(c->raw_score, 1 + kTpMid, 1e-12);
  // 100 * (1.91743 + 2) / (2 + 2) = 97.93572.
  EXPECT_NEAR(c->normalized_score, 100 * (1 + kTpMid + 2) / 4, 1e-9);
  EXPECT_EQ(c->windows_scored, 2);
  EXPECT_EQ(c->detected, 2);
  EXPECT_EQ(c->false_positives, 0);
  EXPECT_EQ(c->mean_delay, minutes(5));  // 0 and 10 minutes
  ASSERT_EQ(c->files.size(), 2u);
  EXPECT_EQ(c->files[0].name, "cat/a.csv");
  EXPECT_DOUBLE_EQ(c->files[0].raw_score, 1.0);
  EXPECT_NEAR(c->files[1].raw_score, kTpMid, 1e-12);
}

TEST(ScoreOptimized, ReachesTheSweepMaximumForEveryProfile) {
  // Random scores over a few files: the optimised score is the sweep's maximum, and every
  // threshold of the sweep scores the same when scored directly.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<ScoredSeries> corpus;
  for (int f = 0; f < 4; ++f) {
    ScoredSeries s;
    s.name = "f" + std::to_string(f);
    for (int i = 0; i < 300; ++i) {
      s.times.push_back(Row(i));
      s.scores.push_back(std::round(u(rng) * 50) / 50);  // ties between rows
    }
    s.windows = {{Row(60 + f * 7), Row(90 + f * 7)}, {Row(200), Row(200)}, {Row(230), Row(260)}};
    corpus.push_back(s);
  }
  for (const CostProfile& p : NabProfiles()) {
    absl::StatusOr<std::vector<ThresholdScore>> sweep = SweepThresholds(corpus, p);
    ASSERT_TRUE(sweep.ok());
    double best = -1e300;
    for (const ThresholdScore& t : *sweep) {
      best = std::max(best, t.raw_score);
      EXPECT_NEAR(At(corpus, p, t.threshold).raw_score, t.raw_score, 1e-9) << t.threshold;
    }
    absl::StatusOr<CorpusScore> c = ScoreOptimized(corpus, p);
    ASSERT_TRUE(c.ok());
    EXPECT_NEAR(c->raw_score, best, 1e-9) << p.name;
    EXPECT_NEAR(c->null_score, -12 * p.fn_weight, 1e-12);
  }
}

TEST(ScoreOptimized, PrefersTheHighestThresholdOnATie) {
  // Rows 10 (0.9) and 11 (0.8) are both in the window: thresholds 0.9 and 0.8 both score +1.
  ScoredSeries s = Twenty({});
  s.scores[10] = 0.9;
  s.scores[11] = 0.8;
  absl::StatusOr<CorpusScore> c = ScoreOptimized(std::vector{s}, Standard());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->threshold, 0.9);
}

TEST(ScoreOptimized, NeverDetectingScoresZero) {
  // 40 rows (6 probationary), a window on rows 30..34 scoring 0.1, every other row 0.5.
  //   never (1.1): -1
  //   0.5: 24 FPs before the window (-2.64), 5 after it (-0.11 * (0.5546 + 0.8483 + 0.9545 +
  //        0.9866 + 0.9961) = -0.4775), window missed (-1): -4.12
  //   0.1: the same FPs, window caught at its start (+1): -2.12
  // so the best is never to fire, which normalises to 0.
  ScoredSeries s;
  s.name = "quiet";
  for (int i = 0; i < 40; ++i) s.times.push_back(Row(i));
  s.scores.assign(40, 0.5);
  for (int i = 30; i <= 34; ++i) s.scores[static_cast<size_t>(i)] = 0.1;
  s.windows = {{Row(30), Row(34)}};
  absl::StatusOr<std::vector<ThresholdScore>> sweep = SweepThresholds(std::vector{s}, Standard());
  ASSERT_TRUE(sweep.ok());
  ASSERT_EQ(sweep->size(), 3u);
  EXPECT_NEAR((*sweep)[1].raw_score,
              -1 - 24 * 0.11 + 0.11 * (S(0.25) + S(0.5) + S(0.75) + S(1) + S(1.25)), 1e-12);
  EXPECT_NEAR((*sweep)[2].raw_score, (*sweep)[1].raw_score + 2, 1e-12);
  absl::StatusOr<CorpusScore> c = ScoreOptimized(std::vector{s}, Standard());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->threshold, 1.1);
  EXPECT_DOUBLE_EQ(c->raw_score, -1.0);
  EXPECT_DOUBLE_EQ(c->normalized_score, 0.0);
  EXPECT_EQ(c->false_positives, 0);
}

TEST(ScoreOptimized, PerfectDetectorScores100) {
  absl::StatusOr<CorpusScore> c =
      ScoreOptimized(std::vector{Twenty({10}), Twenty({10})}, Standard());
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->normalized_score, 100.0);
}

TEST(DetectionsToRows, MapsEachDetectionToTheRowAtOrAfterIt) {
  const std::vector<WallTime> times = {Row(0), Row(1), Row(2), Row(3)};
  const std::vector<WallTime> detections = {Row(0) - minutes(1), Row(1), Row(2) + minutes(1),
                                            Row(3) + minutes(1)};
  EXPECT_THAT(DetectionsToRows(times, detections), ElementsAre(true, true, false, true));
}

TEST(ScoreDetections, MatchesScoringTheFlagsAsScores) {
  // An alert rule fired at 07:42 (row 5 is 07:40, so row 6: a FP, -0.11) and at 08:06
  // (row 10 is 08:05, row 11 is 08:10: position -(14 - 11 + 1) / 5 = -0.8 in the window).
  DetectionSeries d;
  d.name = "cat/f.csv";
  for (int i = 0; i < 20; ++i) d.times.push_back(Row(i));
  d.windows = {{Row(10), Row(14)}};
  d.detected =
      DetectionsToRows(d.times, std::vector<WallTime>{kT0 + minutes(27), kT0 + minutes(51)});
  absl::StatusOr<CorpusScore> c = ScoreDetections(std::vector{d}, Standard());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NEAR(c->raw_score, -0.11 + S(-0.8) / kMaxTp, 1e-12);
  EXPECT_EQ(c->files[0].windows[0].detection_row, 11);
  EXPECT_EQ(c->files[0].windows[0].delay, minutes(5));
  EXPECT_EQ(c->false_positives, 1);
  d.detected.pop_back();
  EXPECT_THAT(Message(ScoreDetections(std::vector{d}, Standard()).status()),
              HasSubstr("19 detection flags for 20 rows"));
}

// Window files.
class WindowFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tailguard_backtest_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(WindowFiles, ReadsNabWindowsJson) {
  const std::string path = Write("windows.json", R"({
  "artificialNoAnomaly/art_flatline.csv": [],
  "realAWSCloudwatch/ec2_cpu_utilization_24ae8d.csv": [
    ["2014-02-27 08:55:00.000000", "2014-02-28 01:35:00.000000"],
    ["2014-02-26 13:45:00.000000", "2014-02-27 06:25:00.000000"]
  ]
})");
  absl::StatusOr<WindowLabels> labels = ReadNabWindows(path);
  ASSERT_TRUE(labels.ok()) << labels.status();
  ASSERT_EQ(labels->size(), 2u);
  EXPECT_TRUE(labels->at("artificialNoAnomaly/art_flatline.csv").empty());
  const std::vector<LabelWindow>& w =
      labels->at("realAWSCloudwatch/ec2_cpu_utilization_24ae8d.csv");
  ASSERT_EQ(w.size(), 2u);  // sorted by start
  EXPECT_EQ(w[0].start, *ParseTimestamp("2014-02-26 13:45:00"));
  EXPECT_EQ(w[1].end, *ParseTimestamp("2014-02-28 01:35:00"));
  // ReadWindows picks the format by the extension.
  absl::StatusOr<WindowLabels> again = ReadWindows(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 2u);
}

TEST_F(WindowFiles, NabWindowsErrorsNameTheFileAndEntry) {
  const std::string syntax = Write("a.json", "{\n  \"x.csv\": [\n    [\"2014-01-01 00:00:00\",]\n");
  EXPECT_THAT(Message(ReadNabWindows(syntax).status()), HasSubstr(syntax + ":3: invalid JSON"));
  const std::string list = Write("b.json", R"({"x.csv": "2014"})");
  EXPECT_THAT(Message(ReadNabWindows(list).status()),
              HasSubstr(list + ": \"x.csv\": expected a list of [start, end] windows"));
  const std::string pair = Write("c.json", R"({"x.csv": [["2014-01-01 00:00:00"]]})");
  EXPECT_THAT(Message(ReadNabWindows(pair).status()),
              HasSubstr(pair + ": \"x.csv\" window 1: expected [start, end]"));
  const std::string ts =
      Write("d.json", R"({"x.csv": [["2014-01-01 00:00:00", "2014-01-02 00:00:00"],
                                    ["2014-01-03 00:00:00", "soon"]]})");
  EXPECT_THAT(Message(ReadNabWindows(ts).status()),
              HasSubstr(ts + ": \"x.csv\" window 2: end: bad timestamp \"soon\""));
  const std::string order = Write("e.json", R"({"x.csv": [["2014-01-02", "2014-01-01"]]})");
  EXPECT_THAT(Message(ReadNabWindows(order).status()), HasSubstr("\"x.csv\" window 1:"));
  const std::string rev =
      Write("f.json", R"({"x.csv": [["2014-01-02 00:00:00", "2014-01-01 00:00:00"]]})");
  EXPECT_THAT(Message(ReadNabWindows(rev).status()),
              HasSubstr(rev + ": \"x.csv\" window 1: starts (2014-01-02 00:00:00) after it ends"));
  const std::string overlap =
      Write("g.json", R"({"x.csv": [["2014-01-01 00:00:00", "2014-01-03 00:00:00"],
                                    ["2014-01-02 00:00:00", "2014-01-04 00:00:00"]]})");
  EXPECT_THAT(Message(ReadNabWindows(overlap).status()),
              HasSubstr(overlap + ": \"x.csv\" window 2 overlaps \"x.csv\" window 1"));
  EXPECT_EQ(ReadNabWindows((dir_ / "none.json").string()).status().code(),
            absl::StatusCode::kNotFound);
  const std::string array = Write("h.json", "[]");
  EXPECT_THAT(Message(ReadNabWindows(array).status()), HasSubstr("expected an object"));
}

TEST_F(WindowFiles, ReadsCsvWindowsInAnyOrder) {
  const std::string path = Write("w.csv",
                                 "series,start,end,note\n"
                                 "cat/a.csv,2014-01-03 00:00:00,2014-01-04 00:00:00,second\n"
                                 "cat/b.csv,2014-01-01T00:00:00Z,1388620800,\"b, only\"\n"
                                 "cat/a.csv,2014-01-01 00:00:00,2014-01-02 00:00:00,first\n");
  absl::StatusOr<WindowLabels> labels = ReadWindows(path);
  ASSERT_TRUE(labels.ok()) << labels.status();
  ASSERT_EQ(labels->size(), 2u);
  const std::vector<LabelWindow>& a = labels->at("cat/a.csv");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].start, *ParseTimestamp("2014-01-01 00:00:00"));
  EXPECT_EQ(a[1].start, *ParseTimestamp("2014-01-03 00:00:00"));
  EXPECT_EQ(labels->at("cat/b.csv")[0].end, *ParseTimestamp("2014-01-02 00:00:00"));
}

TEST_F(WindowFiles, CsvWindowsErrorsNameFileAndLine) {
  const std::string header = Write("h.csv", "name,start,end\n");
  EXPECT_THAT(Message(ReadWindowsCsv(header).status()),
              HasSubstr(header + ":1: the header must name the columns \"series\""));
  const std::string ts = Write("t.csv", "series,start,end\nx,2014-01-01 00:00:00,later\n");
  EXPECT_THAT(Message(ReadWindowsCsv(ts).status()),
              HasSubstr(ts + ":2: end: bad timestamp \"later\""));
  const std::string rev = Write("r.csv",
                                "series,start,end\nx,2014-01-01 00:00:00,2014-01-01 00:00:00\n"
                                "x,2014-01-03 00:00:00,2014-01-02 00:00:00\n");
  EXPECT_THAT(Message(ReadWindowsCsv(rev).status()),
              HasSubstr(rev + ":3: the window starts (2014-01-03 00:00:00) after it ends"));
  const std::string overlap = Write("o.csv",
                                    "series,start,end\nx,2014-01-01 00:00:00,2014-01-03 00:00:00\n"
                                    "x,2014-01-02 00:00:00,2014-01-04 00:00:00\n");
  EXPECT_THAT(Message(ReadWindowsCsv(overlap).status()),
              HasSubstr(overlap + ": line 3 overlaps line 2"));
  const std::string empty = Write("e.csv", "series,start,end\n ,1,2\n");
  EXPECT_THAT(Message(ReadWindowsCsv(empty).status()), HasSubstr(empty + ":2: series: empty"));
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression (found by the fuzzer): a number too large for a double threw out of the parser.
TEST(NabWindowsRegressionTest, HugeNumberIsAnErrorNotACrash) {
  absl::StatusOr<WindowLabels> w = ParseNabWindows("{\"a/b.csv\": 1E999999}", "w.json");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find("w.json: invalid JSON"), std::string::npos)
      << w.status();
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression (review): the error message dumped the offending value, recursing as deep as the
// input was nested, until the stack overflowed.
TEST(NabWindowsRegressionTest, DeepNestingIsAnErrorNotACrash) {
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  absl::StatusOr<WindowLabels> w = ParseNabWindows(deep, "w.json");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(std::string(w.status().message()).find("got an array of 1"), std::string::npos)
      << w.status();
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression (review): NAB charges the full FP cost from exactly 3 window widths after a window
// (scaledSigmoid's `>= 3.0`); we used `> 3.0`.
TEST(NabScoringRegressionTest, FullFalsePositiveCostFromExactlyThreeWidthsAfter) {
  ScoredSeries s;
  s.name = "cat/f.csv";
  for (int i = 0; i < 100; ++i) {
    s.times.push_back(FakeClock::DefaultStart() + std::chrono::minutes(i));
    s.scores.push_back(i == 46 ? 1.0 : 0.0);
  }
  // Rows 30..34: width 5; row 46 is 12 = 3 * (5 - 1) rows after its right edge.
  s.windows.push_back({s.times[30], s.times[34]});
  const std::vector<ScoredSeries> corpus = {s};
  absl::StatusOr<CorpusScore> c = ScoreAtThreshold(corpus, NabProfiles()[0], 0.5);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->raw_score, -1.0 - 0.11);  // the missed window, and one full FP
}

}  // namespace
}  // namespace tailguard
