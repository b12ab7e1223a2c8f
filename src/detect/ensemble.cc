// The ensemble anomaly score.
//
// The algorithm:
// 1. Holt-Winters forecasts each point from the points before it (level, trend, and the daily
//    and weekly pattern once the series shows one). Two detectors judge the forecast error: the
//    error in Holt-Winters' own residual standard deviations, and the Hampel filter's robust
//    z-score of the error against the median and MAD of the recent errors. Judging errors rather
//    than values keeps a daily peak from looking like a spike every day, while spikes, level
//    shifts and broken patterns all show as large errors.
// 2. The raw score is log(1 + z) with z the geometric mean of the two z-scores: both detectors
//    must agree (one alarm alone counts for half on a log scale), and the log keeps a flat
//    series' enormous z-scores comparable.
// 3. The raw score, and an EWMA of it (alpha 2 / (short_window + 1)), are each compared with
//    their own history: mean and standard deviation over the last long_window points. The
//    upper-tail probability q under a normal fit is how unusual the point (a spike) or the recent
//    points (a sustained change) are for this series, which is what lets one threshold work
//    across very different series (the "anomaly likelihood" of Numenta's HTM detector, on our
//    own raw score). The smaller q of the two counts.
// 4. score = min(1, -log10(q) / 10): 0.3 is one in a thousand, 0.5 one in 100 000, 1 one in
//    10^10 or rarer.
// 5. One incident, one peak: once the score reaches 0.5, the next `cooldown` points are halved
//    (and kept under 0.5) unless they are ten times rarer than the incident's peak so far (0.1
//    above it), which restarts the cooldown. A long incident is then reported once, at its onset,
//    and only a worsening is news; the score stays visibly raised while it lasts.
//
// Errors smaller than `resolution` times the series' typical magnitude (an EWMA of |x|) count as
// noise in both z-scores: a perfectly regular series is not alarmed by rounding.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "tailguard/detect.h"

namespace tailguard {
namespace {

// Mean and variance over a sliding window of fixed size.
class RollingStats {
 public:
  explicit RollingStats(int n) : ring_(static_cast<size_t>(std::max(n, 2)), 0.0) {}

  void Push(double x) {
    if (count_ == ring_.size()) {
      const double old = ring_[next_];
      sum_ -= old;
      sum_sq_ -= old * old;
    } else {
      ++count_;
    }
    ring_[next_] = x;
    sum_ += x;
    sum_sq_ += x * x;
    next_ = (next_ + 1) % ring_.size();
    // Running sums drift with floating-point error; recompute once per window.
    if (next_ == 0) {
      sum_ = sum_sq_ = 0;
      for (double v : ring_) sum_ += v, sum_sq_ += v * v;
    }
  }
  size_t count() const { return count_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0; }
  double stddev() const {
    if (count_ < 2) return 0;
    const double m = mean();
    return std::sqrt(std::max(0.0, sum_sq_ / static_cast<double>(count_) - m * m));
  }

 private:
  std::vector<double> ring_;
  size_t next_ = 0;
  size_t count_ = 0;
  double sum_ = 0;
  double sum_sq_ = 0;
};

constexpr double kMaxZ = 1e6;
// The smoothed score's spread never counts as less than this, so a series that has been
// perfectly regular does not turn every ripple into a certainty.
constexpr double kMinSpread = 0.1;
// The score at which an incident starts (one in 100 000), and the damping inside its cooldown.
constexpr double kIncident = 0.5;
constexpr double kCooldownDamping = 0.5;
// How much higher than the incident's peak a score must be to count as news: 0.1 is ten times
// rarer.
constexpr double kWorse = 0.1;
// The baseline is held while the level is at least this (one in a thousand).
constexpr double kHoldBaseline = 0.3;
// Points of history before scores mean anything.
constexpr size_t kWarmup = 30;

// How unusual `x` is against `history`, as min(1, -log10(upper tail probability) / 10).
double Surprise(double x, const RollingStats& history) {
  if (!std::isfinite(x)) return 0;
  const double spread = std::max(history.stddev(), kMinSpread);
  const double z = (x - history.mean()) / spread;
  const double q = 0.5 * std::erfc(z / std::sqrt(2.0));
  return q > 0 ? std::clamp(-std::log10(q) / 10, 0.0, 1.0) : 1.0;
}

}  // namespace

struct AnomalyDetector::State {
  explicit State(const EnsembleOptions& o)
      : options(o),
        hampel(o.hampel),
        smooth(2.0 / (std::max(o.short_window, 1) + 1)),
        raw_history(o.long_window),
        smooth_history(o.long_window) {}

  // Creates the forecaster once the spacing of points is known.
  void StartForecaster(Duration step) {
    HoltWintersOptions hw;
    hw.seasons = options.seasons;
    // Scores want the forecast to accept a new level quickly (fewer false alarms after a
    // change); the alerting baseline is held separately during incidents (see AnomalyPoint).
    hw.robust_k = 0;
    if (hw.seasons.empty() && step.count() > 0) {
      const int64_t day = std::chrono::nanoseconds(std::chrono::hours(24)).count() / step.count();
      // Daily and weekly seasons when they are whole numbers of points and not so long that
      // fitting them costs more than they help (per-minute data and coarser).
      if (day >= 4 && day <= 1440 &&
          day * step.count() == std::chrono::nanoseconds(std::chrono::hours(24)).count()) {
        hw.seasons.push_back(static_cast<int>(day));
        if (day * 7 <= 10080) hw.seasons.push_back(static_cast<int>(day * 7));
      }
    }
    forecaster.emplace(hw);
  }

  EnsembleOptions options;
  Hampel hampel;
  std::optional<HoltWinters> forecaster;
  Ewma smooth;
  RollingStats raw_history;
  RollingStats smooth_history;
  bool have_first = false;
  WallTime first{};
  std::vector<double> pending;  // values seen before the forecaster started
  Ewma scale{0.01};             // typical magnitude of the values
  int cooldown_left = 0;        // points left in the current incident's cooldown
  double incident_peak = 0;
  double baseline = kNaN;  // held during incidents
  int hold_left = 0;       // points the baseline stays held
  double previous_level = 0;
  bool all_non_negative = true;
};

AnomalyDetector::AnomalyDetector(EnsembleOptions options) : s_(std::make_unique<State>(options)) {}
AnomalyDetector::~AnomalyDetector() = default;
AnomalyDetector::AnomalyDetector(AnomalyDetector&&) noexcept = default;
AnomalyDetector& AnomalyDetector::operator=(AnomalyDetector&&) noexcept = default;

AnomalyPoint AnomalyDetector::Update(WallTime t, double value) {
  State& s = *s_;
  AnomalyPoint p;
  if (!s.forecaster) {
    if (s.options.step.count() > 0) {
      s.StartForecaster(s.options.step);
    } else if (!s.have_first) {
      s.have_first = true;
      s.first = t;
    } else if (t > s.first) {
      s.StartForecaster(t - s.first);
    }
    if (s.forecaster) {
      for (double v : s.pending) s.forecaster->Update(v);
      s.pending.clear();
    }
  }
  if (!std::isfinite(value)) {
    // Missing (NaN), or not a measurement (inf): time moves on, nothing is learned.
    if (s.forecaster) s.forecaster->Update(kNaN);
    return p;
  }
  if (value < 0) s.all_non_negative = false;

  double z = 0;
  if (s.forecaster) {
    p.forecast = s.forecaster->Update(value);
    if (!std::isnan(p.forecast.value)) {
      const double error = value - p.forecast.value;
      const double floor = s.options.resolution * s.scale.value();
      p.hampel = s.hampel.Update(error);
      const double sigma = std::max(s.forecaster->residual_sigma(), floor);
      if (!std::isnan(p.forecast.lower) && sigma > 0) {
        const double fz = std::min(std::abs(error) / sigma, kMaxZ);
        z = fz;
        if (p.hampel.ready) {
          const double spread = std::max(1.4826 * p.hampel.mad, floor);
          const double dev = std::abs(error - p.hampel.median);
          const double hz = spread > 0 ? std::min(dev / spread, kMaxZ) : (dev > 0 ? kMaxZ : 0);
          // Both detectors must agree: the geometric mean weighs their evidence equally on a
          // log scale, so one detector's alarm alone counts for half.
          z = std::sqrt(hz * fz);
        }
      }
    }
    s.scale.Update(std::abs(value));
  } else {
    s.pending.push_back(value);
  }

  p.raw = std::log1p(z);
  const double smoothed = s.smooth.Update(p.raw);
  if (s.raw_history.count() >= kWarmup) {
    p.score = std::max(Surprise(p.raw, s.raw_history), Surprise(smoothed, s.smooth_history));
  }
  p.level = p.score;
  // The baseline follows the forecast except during an incident: from the first point at
  // kHoldBaseline it is held at its pre-incident value until the level is back below it and the
  // incident is at least `cooldown` points old, so a sustained regression is not accepted as
  // normal within minutes. A forecast at or below zero for a series that never went negative
  // (latencies, rates) is an overshoot, not a baseline: unknown.
  if (p.level >= kHoldBaseline && s.previous_level < kHoldBaseline && !std::isnan(s.baseline)) {
    s.hold_left = std::max(s.hold_left, std::max(s.options.cooldown, 1));  // an incident starts
  }
  s.previous_level = p.level;
  if (s.hold_left > 0) {
    --s.hold_left;
    if (p.level >= kHoldBaseline) s.hold_left = std::max(s.hold_left, 1);
  } else {
    const double f = p.forecast.value;
    s.baseline = (s.all_non_negative && !(f > 0)) ? kNaN : f;
  }
  p.baseline = s.baseline;
  if (s.cooldown_left > 0) {
    --s.cooldown_left;
    if (p.score >= s.incident_peak + kWorse) {
      s.incident_peak = p.score;
      s.cooldown_left = s.options.cooldown;
    } else {
      // Halved, and kept below the incident level: not news.
      p.score = std::min(p.score * kCooldownDamping, kIncident - 0.01);
    }
  } else if (p.score >= kIncident) {
    s.incident_peak = p.score;
    s.cooldown_left = s.options.cooldown;
  }
  s.raw_history.Push(p.raw);
  s.smooth_history.Push(smoothed);
  return p;
}

std::vector<double> ScoreSeries(std::span<const WallTime> times, std::span<const double> values,
                                const EnsembleOptions& options) {
  AnomalyDetector d(options);
  std::vector<double> scores(values.size());
  for (size_t i = 0; i < values.size(); ++i) scores[i] = d.Update(times[i], values[i]).score;
  return scores;
}

}  // namespace tailguard
