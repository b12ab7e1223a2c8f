// Running recorded series through the ensemble and the alert engine, shared by `replay` and
// `backtest --rules`.
#ifndef TAILGUARD_APPS_SERIES_REPLAY_H_
#define TAILGUARD_APPS_SERIES_REPLAY_H_

#include <span>
#include <string_view>
#include <vector>

#include "tailguard/alert.h"
#include "tailguard/detect.h"

namespace tailguard::cli {

// The metric name replayed P99 series are observed under.
inline constexpr std::string_view kReplayMetric = "tailguard_replay_p99_seconds";

// The rules used when none are given: the default tiers (+10/+30/+50 %) on P99 against the
// ensemble's held baseline, and the anomaly score above `anomaly_threshold`.
AlertConfig DefaultReplayRules(double anomaly_threshold);

// One series through a fresh ensemble, point by point, feeding `engine`.
// Not thread-safe; one per series.
class SeriesReplay {
 public:
  explicit SeriesReplay(Labels labels) : labels_(std::move(labels)) {}

  // Scores `p99` (seconds; NaN when missing) at `t` and observes it with the ensemble's level
  // and baseline; `obs` carries any other statistics of the point.
  void Point(AlertEngine& engine, WallTime t, double p99, Observation obs = {});

  // One score per point so far (the once-per-incident score).
  const std::vector<double>& scores() const { return scores_; }
  // The slow-degradation finding over the points so far (daily medians).
  const DriftFinding& drift() const { return drift_.Current(); }

 private:
  Labels labels_;
  AnomalyDetector detector_;
  DriftDetector drift_;
  std::vector<double> scores_;
};

}  // namespace tailguard::cli

#endif  // TAILGUARD_APPS_SERIES_REPLAY_H_
