// Backtest scoring: detectors and alert rules against labelled incident windows, scored the way
// the Numenta Anomaly Benchmark (NAB v1.1) scores them, plus the operational numbers NAB leaves
// out: detection delay, missed windows, false positives per day.
//
// How this maps to NAB v1.1 (nab/sweeper.py, nab/optimizer.py, nab/runner.py):
//
// - Rows, not time. Every row of a series is judged on its own: it is a detection when its
//   anomaly score is >= the threshold (NaN never is). The first min(floor(0.15 * rows), 750) rows
//   are the probationary period (NAB: min(floor(p * n), p * 5000)) and are not scored at all.
// - A window covers the rows whose time lies in [start, end]. NAB enters a window only at a row
//   whose timestamp equals its start; mapping by time gives the same rows on NAB's data (its
//   windows start and end on data timestamps) and still works when they do not. A window with
//   no row after the probationary period is not scored (neither detected nor missed).
// - Inside a window of W rows whose last row is R, a detection at row i is worth
//   tp_weight * S(-(R - i + 1) / W) / S(-1), with S(x) = 2 / (1 + exp(5x)) - 1 (NAB's scaled
//   sigmoid; S(x) = -1 for x > 3). The first row of a window earns exactly tp_weight, the last
//   tp_weight * S(-1/W) / S(-1). Only the best (earliest) detection in a window counts; later
//   ones in the same window earn and cost nothing. A window without a detection costs fn_weight.
// - A detection outside every window costs fp_weight, scaled after a window: at row i, d rows
//   after the last row of the previous window (W rows wide), it adds fp_weight * S(d / (W - 1)),
//   which is near 0 just after the window and -fp_weight from 3 window widths on. Before the
//   first window (and after a 1-row window, where NAB divides by zero) it adds -fp_weight.
// - The raw score of a series is the sum of its window scores and false-positive costs; a
//   corpus's is the sum over its series.
// - Threshold optimisation sweeps every distinct score in the corpus (rows after the
//   probationary period), highest first, starting from a threshold above all scores (never
//   detect; NAB uses 1.1), and keeps the threshold with the highest corpus raw score, the
//   highest threshold on a tie (NAB's stable sort). Done once per profile.
// - Normalised score: 100 * (raw - null) / (perfect - null), where null is the raw score of a
//   detector that never fires (-fn_weight per scored window: NAB's null detector at its optimal
//   threshold) and perfect is tp_weight per scored window (NAB: tp_weight per labelled window;
//   the same on NAB, where no window touches a probationary period).
// - Profiles: standard (TP 1, FP 0.11, FN 1), reward_low_FP_rate (FP 0.22), reward_low_FN_rate
//   (FN 2), as in NAB's config/profiles.json.
//
// All functions are thread-safe (they share no state).
#ifndef TAILGUARD_BACKTEST_H_
#define TAILGUARD_BACKTEST_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tailguard/clock.h"

namespace tailguard {

// A labelled anomaly window: the points with start <= time <= end are inside it.
struct LabelWindow {
  WallTime start;
  WallTime end;
};

// Windows per series name ("category/file.csv" in NAB's layout). Each list is sorted by start,
// and its windows do not overlap.
using WindowLabels = std::map<std::string, std::vector<LabelWindow>>;

// Parses NAB's windows.json: {"category/file.csv": [["2014-04-10 07:15:00.000000",
// "2014-04-11 16:45:00.000000"], ...], ...}. Timestamps take any form ParseTimestamp() accepts.
// InvalidArgument names `source` (with the line for malformed JSON) and the bad entry: a
// non-list, a window that is not two timestamps, start after end, overlapping windows.
absl::StatusOr<WindowLabels> ParseNabWindows(std::string_view json, std::string_view source);

// Reads windows.json from `path`; NotFound when it does not exist.
absl::StatusOr<WindowLabels> ReadNabWindows(const std::string& path);

// Reads a CSV with a header naming the columns `series`, `start` and `end` (other columns are
// ignored), one window per row, in any order. Errors name "path:line" and the field.
absl::StatusOr<WindowLabels> ReadWindowsCsv(const std::string& path);

// Either format: JSON when `path` ends in ".json" or its first non-blank character is '{'.
absl::StatusOr<WindowLabels> ReadWindows(const std::string& path);

// What each outcome is worth.
struct CostProfile {
  std::string name;
  double tp_weight = 1.0;   // an earliest detection at the first row of a window
  double fp_weight = 0.11;  // a detection outside every window, far from one
  double fn_weight = 1.0;   // a window without a detection
};

// NAB's profiles, in this order: standard, reward_low_FP_rate, reward_low_FN_rate.
std::vector<CostProfile> NabProfiles();

struct ScoringOptions {
  // Leading fraction of each series that is not scored. Default 0.15 (NAB).
  double probationary_fraction = 0.15;
  // Cap on the probationary period in rows. Default 750 (NAB: 0.15 * 5000).
  int64_t max_probationary_rows = 750;
};

// One series and its detector's anomaly scores.
struct ScoredSeries {
  std::string name;                  // as in WindowLabels, for messages and results
  std::vector<WallTime> times;       // non-decreasing
  std::vector<double> scores;        // one per time; higher is more anomalous
  std::vector<LabelWindow> windows;  // sorted by start, not overlapping
};

// One series and the rows an alert rule fired on (for event-based scoring).
struct DetectionSeries {
  std::string name;
  std::vector<WallTime> times;  // non-decreasing
  std::vector<bool> detected;   // one per time
  std::vector<LabelWindow> windows;
};

// The outcome for one labelled window.
struct WindowOutcome {
  LabelWindow window;
  int64_t first_row = -1;  // the rows [first_row, last_row] lie in the window; -1 when none do
  int64_t last_row = -1;
  bool scored = false;         // has a row after the probationary period
  bool detected = false;       // scored, with a detection after the probationary period
  int64_t detection_row = -1;  // the earliest such detection
  Duration delay{0};           // its time minus window.start
  double score = 0;            // NAB contribution: position-weighted TP, or -fn_weight; 0 unscored
};

// The outcome for one series at one threshold.
struct FileOutcome {
  std::string name;
  int64_t rows = 0;
  int64_t probationary_rows = 0;
  std::vector<WindowOutcome> windows;  // in time order
  int windows_scored = 0;
  int detected = 0;
  int missed = 0;               // windows_scored - detected
  Duration mean_delay{0};       // over the detected windows; 0 when none
  int64_t false_positives = 0;  // detected rows outside every window, after probation
  double scored_days = 0;       // from the first scored row to the last row
  double fp_per_day = 0;        // false_positives / scored_days; 0 when scored_days is 0
  double fp_score = 0;          // sum of the (negative) false-positive costs
  double raw_score = 0;         // sum of window scores and fp_score
  // NAB's row counts after the probationary period: detected (tp) and undetected (fn) rows in
  // windows, undetected rows outside (tn); false_positives is NAB's fp.
  int64_t tp_rows = 0;
  int64_t fn_rows = 0;
  int64_t tn_rows = 0;
};

// A corpus scored with one profile at one threshold.
struct CorpusScore {
  CostProfile profile;
  double threshold = 0;      // a row is a detection when its score >= threshold
  double raw_score = 0;      // sum of the files' raw scores
  double null_score = 0;     // never detecting: -fn_weight per scored window
  double perfect_score = 0;  // every window at its first row, no false positive
  // 100 * (raw - null) / (perfect - null); never detecting is 0, perfect is 100. NaN when no
  // window is scored.
  double normalized_score = 0;
  std::vector<FileOutcome> files;  // in input order
  // Totals over the files.
  int windows_scored = 0;
  int detected = 0;
  int missed = 0;
  Duration mean_delay{0};  // over all detected windows
  int64_t false_positives = 0;
  double scored_days = 0;
  double fp_per_day = 0;
};

// Scores `corpus` at a fixed threshold. InvalidArgument, naming the series, when its times go
// backwards, the score count differs from the time count, or its windows are unsorted,
// overlapping or end before they start.
absl::StatusOr<CorpusScore> ScoreAtThreshold(std::span<const ScoredSeries> corpus,
                                             const CostProfile& profile, double threshold,
                                             const ScoringOptions& options = {});

// The corpus raw score at each candidate threshold, highest threshold first: a threshold above
// every score (never detect; 1.1 when all scores are below it), then every distinct score of a
// row after the probationary period. Errors as ScoreAtThreshold().
struct ThresholdScore {
  double threshold = 0;
  double raw_score = 0;
};
absl::StatusOr<std::vector<ThresholdScore>> SweepThresholds(std::span<const ScoredSeries> corpus,
                                                            const CostProfile& profile,
                                                            const ScoringOptions& options = {});

// Picks the threshold with the best corpus raw score (the highest one on a tie), as NAB's
// optimiser does, and scores the corpus at it. Errors as ScoreAtThreshold().
absl::StatusOr<CorpusScore> ScoreOptimized(std::span<const ScoredSeries> corpus,
                                           const CostProfile& profile,
                                           const ScoringOptions& options = {});

// Event-based scoring for alert rules: maps each detection time to the first row at or after it
// (detections after the last row are dropped); one flag per row. REQUIRES: `times` sorted.
std::vector<bool> DetectionsToRows(std::span<const WallTime> times,
                                   std::span<const WallTime> detections);

// Scores rows flagged by an alert rule with the same rules and metrics as ScoreAtThreshold()
// (the result's threshold is 1: a flagged row scores 1, others 0). Errors as ScoreAtThreshold().
absl::StatusOr<CorpusScore> ScoreDetections(std::span<const DetectionSeries> corpus,
                                            const CostProfile& profile,
                                            const ScoringOptions& options = {});

}  // namespace tailguard

#endif  // TAILGUARD_BACKTEST_H_
