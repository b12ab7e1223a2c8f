// Detectors for latency series: EWMA, the Hampel filter, Holt-Winters with a prediction band, a
// drift detector for slow degradation, and the ensemble anomaly score in [0, 1].
//
// All are causal (a point is judged only against the points before it) and cost O(1) or
// O(log n) per point. None is thread-safe: one detector per series, fed by one thread.
#ifndef TAILGUARD_DETECT_H_
#define TAILGUARD_DETECT_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tailguard/clock.h"

namespace tailguard {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Exponentially weighted moving average: v = alpha * x + (1 - alpha) * v.
// The field report smooths P99 with alpha = 0.2. NaN inputs (missing points) are skipped.
class Ewma {
 public:
  // REQUIRES: 0 < alpha <= 1.
  explicit Ewma(double alpha = 0.2);
  // Adds `x` and returns the smoothed value.
  double Update(double x);
  // The smoothed value; NaN before the first point.
  double value() const { return value_; }
  double alpha() const { return alpha_; }

 private:
  double alpha_;
  double value_ = kNaN;
};

struct HampelOptions {
  // Number of previous points the median and MAD are taken over. Default 31.
  int window = 31;
  // A point is an outlier when |x - median| > threshold * 1.4826 * MAD. Default 3.
  double threshold = 3.0;
};

struct HampelResult {
  bool ready = false;    // the window is full; before that nothing is an outlier
  double median = kNaN;  // of the previous `window` points
  double mad = kNaN;     // median absolute deviation from that median
  double z = 0;          // |x - median| / (1.4826 * MAD), a robust z-score (capped at 1e6)
  bool outlier = false;  // z > threshold
};

// The Hampel filter, causal: each point is compared with the median and MAD of the `window`
// points before it, then joins the window. The sliding median is an order-statistic tree
// (O(log k) per point); the MAD is a selection over the two sorted halves around the median
// (O(log^2 k)).
class Hampel {
 public:
  explicit Hampel(HampelOptions options = {});
  ~Hampel();
  Hampel(Hampel&&) noexcept;
  Hampel& operator=(Hampel&&) noexcept;

  // Judges `x` against the window, then adds it. NaN is judged not an outlier and not added.
  HampelResult Update(double x);
  const HampelOptions& options() const { return options_; }

 private:
  struct Window;
  HampelOptions options_;
  std::unique_ptr<Window> window_;
};

enum class Seasonality { kAdditive, kMultiplicative, kAuto };

struct HoltWintersOptions {
  // Season lengths in points, shortest first: e.g. {288} for a daily season at 5-minute
  // resolution, {1440, 10080} for daily and weekly at 1-minute resolution. Empty: no season
  // (Holt's linear trend).
  std::vector<int> seasons;
  // kAuto fits both (multiplicative only for positive data) and keeps the better.
  Seasonality mode = Seasonality::kAuto;
  // Points between refits of the smoothing parameters; 0 means four of the longest season, or
  // 288 points without a season.
  int refit_every = 0;
  // Points of history the fit minimises one-step-ahead squared error over; 0 means three of
  // the longest season, at least 288.
  int fit_window = 0;
  // Half-width of the prediction band in residual standard deviations. Default 3.
  double band_z = 3.0;
  // Robustness: an observation further than robust_k residual sigmas from its forecast is
  // learned as if it were robust_k sigmas away (Huber), so spikes and the first points of an
  // incident do not drag the baseline along. 0 learns every point as it is. Default 3.
  double robust_k = 3.0;
};

struct Forecast {
  double value = kNaN;  // expected value
  double lower = kNaN;  // prediction band
  double upper = kNaN;
  // Which model made it: 0 not enough data, 1 level (EWMA), 2 level + trend (Holt),
  // 3 seasonal (Holt-Winters).
  int model = 0;
};

// Holt-Winters triple exponential smoothing with up to two additive or multiplicative seasons,
// parameters fitted on history and refitted periodically.
//
// Cold start: nothing is forecast before the first point; then level and damped trend (Holt,
// alpha 0.3, beta 0.02) until the first fit. The first fit comes once two of the shortest
// season have been seen (or 50 points without a season); a season is used only when the window
// holds it twice over and it cuts the one-step error by 10 % against no season. Seasonal indexes
// start from the first longest season of the fit window. Missing points (NaN) advance time: the
// state moves on as if the forecast had been observed.
//
// Cost: O(1) per point plus the refits, each about 50 passes over fit_window points.
class HoltWinters {
 public:
  explicit HoltWinters(HoltWintersOptions options = {});
  ~HoltWinters();
  HoltWinters(HoltWinters&&) noexcept;
  HoltWinters& operator=(HoltWinters&&) noexcept;

  // The forecast for the next point, before it is seen.
  Forecast Next() const;
  // Returns the forecast that was made for `x` (as Next() before the call), then learns `x`.
  Forecast Update(double x);
  // The forecast `h` >= 1 points ahead of the last point seen.
  Forecast Ahead(int h) const;

  // The fitted parameters. gamma() is 0 and mode() kAuto while no season is in use.
  double alpha() const;
  double beta() const;
  double gamma() const;
  Seasonality mode() const;
  // Standard deviation of recent one-step errors (clipped as in robust_k).
  double residual_sigma() const;
  int64_t points() const;
  const HoltWintersOptions& options() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

struct DriftOptions {
  // The baseline is one point per bucket: the median of the values in it. Default one day.
  Duration bucket = std::chrono::hours(24);
  // Buckets needed before a trend is reported. Default 14 (two weeks of days).
  int min_buckets = 14;
  // Buckets the trend is measured over, newest last. Default 56 (eight weeks).
  int max_buckets = 56;
  // Smallest relative slope worth reporting, percent per week. Default 1.
  double min_pct_per_week = 1.0;
  // Mann-Kendall z the trend must exceed (2.58 is 99 % two-sided). Default 2.58.
  double min_z = 2.58;
};

struct DriftFinding {
  bool drifting = false;
  double pct_per_week = 0;  // Theil-Sen slope relative to the baseline's median, per week
  WallTime since{};         // start of the bucket where the trend begins
  double z = 0;             // Mann-Kendall statistic of the trend
  int buckets = 0;          // buckets the finding rests on
  // "rising 3.1 %/week since 2026-10-02" (or "falling ..."), "" when not drifting.
  std::string Describe() const;
};

// Finds slow degradation: a robust (Theil-Sen) trend of per-bucket medians over weeks, tested
// with Mann-Kendall, reported with when it began. Add() is O(1) amortised; Current() is
// O(b^2) in the number of buckets (at most max_buckets), computed once per completed bucket.
class DriftDetector {
 public:
  explicit DriftDetector(DriftOptions options = {});
  ~DriftDetector();
  DriftDetector(DriftDetector&&) noexcept;
  DriftDetector& operator=(DriftDetector&&) noexcept;

  // Adds a point; times must not go backwards (earlier points are ignored). NaN is skipped.
  void Add(WallTime t, double value);
  // The finding as of the last completed bucket.
  const DriftFinding& Current() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

struct EnsembleOptions {
  // Spacing of the points; 0 means learn it from the first timestamps. Sets the season lengths
  // (one day and one week in points) when those are not given.
  Duration step{0};
  HampelOptions hampel;
  // Seasons for Holt-Winters in points; empty means daily and weekly from `step`, each used
  // only once the series has shown it.
  std::vector<int> seasons;
  // Smoothing of the raw score, and the short and long horizons (points) of its normalisation.
  int short_window = 10;
  int long_window = 1000;
  // After the score reaches 0.5 (an incident), the next `cooldown` points score half unless
  // they exceed the incident's peak: one incident, one alarm. 0 disables. Default 60.
  int cooldown = 60;
  // Forecast errors below this fraction of the series' typical magnitude are noise (a floor
  // under both z-scores' spread). Default 0.003.
  double resolution = 0.003;
};

struct AnomalyPoint {
  // In [0, 1]: how unusual this point is for this series, reported once per incident (see
  // EnsembleOptions::cooldown). What `tailguard replay` writes and backtests score.
  double score = 0;
  // The same before the once-per-incident damping: stays high while an incident lasts. What
  // alert rules on the anomaly score watch (they debounce on their own).
  double level = 0;
  // The expected value: the forecast, held at its pre-incident value from the first point whose
  // `level` reaches 0.3 (one in a thousand) until the level is back below that and at least
  // `cooldown` points have passed, so an incident does not become its own baseline within
  // minutes (a change that lasts longer is accepted as the new normal then). NaN until the
  // forecaster has data, and when the forecast overshoots to <= 0 on a non-negative series.
  double baseline = kNaN;
  double raw = 0;       // the unnormalised combination of the detectors
  Forecast forecast;    // what Holt-Winters expected for this point
  HampelResult hampel;  // the Hampel filter's verdict on the forecast error
};

// The ensemble for one series: Holt-Winters forecasts each point, the forecast error is judged
// in Holt-Winters' residual sigmas and by the Hampel filter against recent errors, their
// geometric mean (and its EWMA) is normalised against the series' own history into a
// score in [0, 1], so one threshold works across very different series. The algorithm is
// described at the top of src/detect/ensemble.cc.
class AnomalyDetector {
 public:
  explicit AnomalyDetector(EnsembleOptions options = {});
  ~AnomalyDetector();
  AnomalyDetector(AnomalyDetector&&) noexcept;
  AnomalyDetector& operator=(AnomalyDetector&&) noexcept;

  // Scores `value` at `t` against the points before it, then learns it. NaN (and +-inf, which
  // is no measurement) is a missing point: scored 0.
  AnomalyPoint Update(WallTime t, double value);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Scores a whole series, one score per point in order. REQUIRES: times.size() == values.size().
std::vector<double> ScoreSeries(std::span<const WallTime> times, std::span<const double> values,
                                const EnsembleOptions& options = {});

}  // namespace tailguard

#endif  // TAILGUARD_DETECT_H_
