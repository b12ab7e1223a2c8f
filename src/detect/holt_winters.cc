// Holt-Winters triple exponential smoothing with a damped trend and up to two seasons.
//
// The algorithm: the level, trend and seasonal indexes follow the usual recursions (Taylor's
// double-seasonal form when two seasons are given), with the trend damped by phi = 0.98 so that a
// short run of rising points does not project a ramp forever. Seasonal indexes are addressed by
// the absolute point number modulo the season length, so refitting never shifts the phase.
//
// Fitting: the last fit_window points are kept. A fit re-initialises the model on the first
// longest season of that window and runs the recursions over the rest, scoring the sum of
// squared one-step errors; a coordinate search over alpha, beta and gamma picks the parameters.
// The seasonal model is kept only when it beats the non-seasonal one (Holt) by 10 %, so a series
// that has no season is not forced into one. The chosen model is then replayed over the window
// to become the live state.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <vector>

#include "tailguard/detect.h"

namespace tailguard {
namespace {

constexpr double kPhi = 0.98;  // trend damping

struct Params {
  double alpha = 0.3;
  double beta = 0.02;
  double gamma = 0.1;
};

// The recursions' state. Seasonal arrays are indexed by point number modulo their length; the
// model keeps the phase of the next point in each season, so no division runs per point.
struct Model {
  bool seasonal = false;
  bool multiplicative = false;
  std::vector<int> seasons;  // active season lengths, shortest first
  double level = kNaN;
  double trend = 0;
  std::vector<std::vector<double>> s;  // one array per season
  int phase[2] = {0, 0};               // position of the next point in each season

  void SetTime(int64_t t) {
    for (size_t i = 0; i < seasons.size(); ++i) phase[i] = static_cast<int>(t % seasons[i]);
  }

  double Predict(int h = 1) const {
    if (std::isnan(level)) return kNaN;
    double damp = kPhi;
    double f = kPhi;
    for (int i = 1; i < h; ++i) {
      f *= kPhi;
      damp += f;
    }
    const double base = level + damp * trend;
    if (!seasonal) return base;
    double v = base;
    for (size_t i = 0; i < s.size(); ++i) {
      const int at = h == 1 ? phase[i] : (phase[i] + h - 1) % seasons[i];
      v = multiplicative ? v * s[i][static_cast<size_t>(at)] : v + s[i][static_cast<size_t>(at)];
    }
    return v;
  }

  // Learns x, the next point, and moves on.
  void Learn(double x, const Params& p) {
    if (std::isnan(level)) {
      level = x;
      trend = 0;
      Advance();
      return;
    }
    const double prev = level;
    if (!seasonal) {
      level = p.alpha * x + (1 - p.alpha) * (prev + kPhi * trend);
      trend = p.beta * (level - prev) + (1 - p.beta) * kPhi * trend;
      return;
    }
    double* s0 = &s[0][static_cast<size_t>(phase[0])];
    double* s1 = s.size() > 1 ? &s[1][static_cast<size_t>(phase[1])] : nullptr;
    if (multiplicative) {
      const double other0 = s1 ? *s1 : 1.0;
      const double deseason = x / (*s0 * other0);
      level = p.alpha * deseason + (1 - p.alpha) * (prev + kPhi * trend);
      if (!(level > 1e-12)) level = 1e-12;  // keep the ratios finite
      trend = p.beta * (level - prev) + (1 - p.beta) * kPhi * trend;
      const double new0 = p.gamma * x / (level * other0) + (1 - p.gamma) * *s0;
      if (s1) *s1 = p.gamma * x / (level * *s0) + (1 - p.gamma) * *s1;
      *s0 = new0;
    } else {
      const double other0 = s1 ? *s1 : 0.0;
      level = p.alpha * (x - *s0 - other0) + (1 - p.alpha) * (prev + kPhi * trend);
      trend = p.beta * (level - prev) + (1 - p.beta) * kPhi * trend;
      const double new0 = p.gamma * (x - level - other0) + (1 - p.gamma) * *s0;
      if (s1) *s1 = p.gamma * (x - level - *s0) + (1 - p.gamma) * *s1;
      *s0 = new0;
    }
    Advance();
  }

  void Advance() {
    for (size_t i = 0; i < seasons.size(); ++i) {
      if (++phase[i] == seasons[i]) phase[i] = 0;
    }
  }
};

// Initialises `m` from data[0 .. longest season), which starts at point t0.
// Returns false when that season has too many missing points.
bool Initialise(Model& m, const std::vector<double>& data, int64_t t0) {
  const int longest = m.seasonal ? m.seasons.back() : 1;
  double sum = 0;
  int n = 0;
  for (int i = 0; i < longest; ++i) {
    if (!std::isnan(data[static_cast<size_t>(i)])) {
      sum += data[static_cast<size_t>(i)];
      ++n;
    }
  }
  if (n < std::max(1, longest / 2)) return false;
  m.level = sum / n;
  m.trend = 0;
  if (!m.seasonal) return true;
  if (m.multiplicative && !(m.level > 0)) return false;
  m.s.assign(m.seasons.size(), {});
  // First season: averaged over the cycles that fit in the longest season.
  for (size_t k = 0; k < m.seasons.size(); ++k) {
    const int len = m.seasons[k];
    std::vector<double> acc(static_cast<size_t>(len), 0);
    std::vector<int> cnt(static_cast<size_t>(len), 0);
    for (int i = 0; i < longest; ++i) {
      double x = data[static_cast<size_t>(i)];
      if (std::isnan(x)) continue;
      const size_t phase = static_cast<size_t>((t0 + i) % len);
      // The longer season sees what the shorter ones did not explain.
      if (k == 1) {
        const double s0 = m.s[0][static_cast<size_t>((t0 + i) % m.seasons[0])];
        x = m.multiplicative ? x / s0 : x - s0;
      }
      acc[phase] += m.multiplicative ? x / m.level : x - m.level;
      ++cnt[phase];
    }
    const double neutral = m.multiplicative ? 1.0 : 0.0;
    m.s[k].assign(static_cast<size_t>(len), neutral);
    for (size_t p = 0; p < acc.size(); ++p) {
      if (cnt[p] > 0) m.s[k][p] = acc[p] / cnt[p];
    }
    if (m.multiplicative) {
      for (double& v : m.s[k]) v = std::max(v, 1e-3);
    }
  }
  return true;
}

// Tracks the one-step errors and, once it has seen enough of them, clips an observation to
// within k residual sigmas of its forecast before the model learns it (Huber's psi, as in
// robust Holt-Winters): an outlier or the first points of an incident move the baseline a
// little, not all the way.
struct ErrorTracker {
  double abs_error = kNaN;  // EWMA of |clipped one-step error|
  int64_t count = 0;

  double sigma() const { return 1.2533 * abs_error; }  // mean |e| to sigma for normal errors

  // Returns what the model should learn for observation x with forecast f.
  double Observe(double x, double f, double k) {
    if (std::isnan(f)) return x;
    double e = x - f;
    if (k > 0 && count >= 10 && abs_error > 0) {
      const double limit = k * sigma();
      e = std::clamp(e, -limit, limit);
    }
    abs_error = std::isnan(abs_error) ? std::abs(e) : 0.03 * std::abs(e) + 0.97 * abs_error;
    ++count;
    return f + e;
  }
};

// Runs `m` (initialised on the first longest season) over the rest of `data`; returns the sum of
// squared one-step errors (unclipped), or +inf when the model blows up.
double Run(Model& m, const std::vector<double>& data, int64_t t0, const Params& p, double k) {
  const int start = m.seasonal ? m.seasons.back() : 1;
  m.SetTime(t0 + start);
  ErrorTracker errors;
  double sse = 0;
  for (size_t i = static_cast<size_t>(start); i < data.size(); ++i) {
    const double f = m.Predict();
    double x = data[i];
    if (std::isnan(x)) {
      x = f;
    } else {
      const double e = x - f;
      sse += e * e;
      if (k > 0) x = errors.Observe(x, f, k);
    }
    m.Learn(x, p);
  }
  return std::isfinite(m.level) ? sse : INFINITY;
}

}  // namespace

struct HoltWinters::State {
  HoltWintersOptions options;
  Params params;
  Model model;
  int64_t t = 0;                // points seen
  int64_t last_fit = -1;        // point count at the last fit
  std::vector<double> history;  // ring of the last `capacity` points, NaN for missing
  size_t capacity = 0;
  ErrorTracker errors;  // of the live model
  bool all_positive = true;
  Seasonality chosen = Seasonality::kAdditive;
  bool mode_chosen = false;

  int longest() const { return options.seasons.empty() ? 0 : options.seasons.back(); }
  int refit_every() const {
    if (options.refit_every > 0) return options.refit_every;
    return options.seasons.empty() ? 288 : 4 * longest();
  }
  int fit_window() const {
    if (options.fit_window > 0) return options.fit_window;
    return std::max(288, 3 * longest());
  }

  // The last n points, oldest first.
  std::vector<double> Recent(size_t n) const {
    n = std::min<size_t>(n,
                         static_cast<size_t>(std::min<int64_t>(t, static_cast<int64_t>(capacity))));
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t at = t - static_cast<int64_t>(n) + static_cast<int64_t>(i);
      out[i] = history[static_cast<size_t>(at % static_cast<int64_t>(capacity))];
    }
    return out;
  }

  // Evaluates parameters `p` for a model shape on `data` starting at point t0.
  double Evaluate(const Model& shape, const std::vector<double>& data, int64_t t0, const Params& p,
                  Model* out = nullptr) const {
    Model m = shape;
    if (!Initialise(m, data, t0)) return INFINITY;
    const double sse = Run(m, data, t0, p, options.robust_k);
    if (out) *out = std::move(m);
    return sse;
  }

  // Coordinate search from `p`; returns the best SSE found.
  double Search(const Model& shape, const std::vector<double>& data, int64_t t0, Params& p) const {
    static constexpr double kAlphas[] = {0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.8};
    static constexpr double kBetas[] = {0.0, 0.005, 0.02, 0.1};
    static constexpr double kGammas[] = {0.01, 0.05, 0.1, 0.2, 0.4};
    double best = Evaluate(shape, data, t0, p);
    // One pass from the current parameters: refits start near the last optimum.
    for (int pass = 0; pass < 1; ++pass) {
      for (double a : kAlphas) {
        Params q = p;
        q.alpha = a;
        const double e = Evaluate(shape, data, t0, q);
        if (e < best) best = e, p = q;
      }
      for (double b : kBetas) {
        Params q = p;
        q.beta = b;
        const double e = Evaluate(shape, data, t0, q);
        if (e < best) best = e, p = q;
      }
      if (shape.seasonal) {
        for (double g : kGammas) {
          Params q = p;
          q.gamma = g;
          const double e = Evaluate(shape, data, t0, q);
          if (e < best) best = e, p = q;
        }
      }
    }
    return best;
  }

  void Fit() {
    last_fit = t;
    const std::vector<double> data = Recent(static_cast<size_t>(fit_window()));
    const int64_t t0 = t - static_cast<int64_t>(data.size());
    // Non-seasonal baseline.
    Model holt;
    Params holt_params = params;
    const double holt_sse = Search(holt, data, t0, holt_params);
    Model best_shape = holt;
    Params best_params = holt_params;
    double best_sse = holt_sse;
    // Seasonal candidates: the seasons the window holds twice over.
    std::vector<int> seasons;
    for (int len : options.seasons) {
      if (len >= 2 && static_cast<int64_t>(data.size()) >= 2 * len) seasons.push_back(len);
    }
    if (!seasons.empty()) {
      std::vector<bool> modes;  // multiplicative?
      if (mode_chosen) {
        modes.push_back(chosen == Seasonality::kMultiplicative);
      } else {
        if (options.mode != Seasonality::kMultiplicative) modes.push_back(false);
        if (options.mode != Seasonality::kAdditive && all_positive) modes.push_back(true);
      }
      for (bool mult : modes) {
        Model shape;
        shape.seasonal = true;
        shape.multiplicative = mult;
        shape.seasons = seasons;
        Params p = params;
        const double sse = Search(shape, data, t0, p);
        // A season must earn its keep: 10 % less error than no season.
        if (sse < 0.9 * holt_sse && sse < best_sse) {
          best_sse = sse;
          best_shape = shape;
          best_params = p;
        }
      }
      if (best_shape.seasonal && !mode_chosen) {
        chosen = best_shape.multiplicative ? Seasonality::kMultiplicative : Seasonality::kAdditive;
        mode_chosen = true;
      }
    }
    Model fitted;
    if (!std::isfinite(Evaluate(best_shape, data, t0, best_params, &fitted))) return;
    params = best_params;
    model = std::move(fitted);
    const int scored = static_cast<int>(data.size()) - (model.seasonal ? model.seasons.back() : 1);
    if (scored > 0 && std::isfinite(best_sse) && errors.count < 10) {
      // Seed the live error scale from the fit: sqrt(mean square) as mean |error| (for normal
      // errors, mean |e| = 0.8 sigma).
      errors.abs_error = 0.7979 * std::sqrt(best_sse / scored);
    }
  }
};

HoltWinters::HoltWinters(HoltWintersOptions options) : s_(std::make_unique<State>()) {
  // Seasons shorter than 2 points mean nothing; the model holds two at most (the shortest).
  std::erase_if(options.seasons, [](int len) { return len < 2; });
  std::sort(options.seasons.begin(), options.seasons.end());
  if (options.seasons.size() > 2) options.seasons.resize(2);
  s_->options = options;
  s_->capacity = static_cast<size_t>(std::max(s_->fit_window(), 2 * s_->longest()));
  s_->history.assign(s_->capacity, kNaN);
}
HoltWinters::~HoltWinters() = default;
HoltWinters::HoltWinters(HoltWinters&&) noexcept = default;
HoltWinters& HoltWinters::operator=(HoltWinters&&) noexcept = default;

Forecast HoltWinters::Ahead(int h) const {
  Forecast f;
  const Model& m = s_->model;
  f.value = m.Predict(h);
  if (std::isnan(f.value)) return f;
  f.model = m.seasonal ? 3 : (s_->t >= 2 ? 2 : 1);
  if (s_->errors.count >= 5 && !std::isnan(s_->errors.abs_error)) {
    const double sigma = s_->errors.sigma() * std::sqrt(static_cast<double>(h));
    f.lower = f.value - s_->options.band_z * sigma;
    f.upper = f.value + s_->options.band_z * sigma;
  }
  return f;
}

Forecast HoltWinters::Next() const { return Ahead(1); }

Forecast HoltWinters::Update(double x) {
  State& s = *s_;
  if (!std::isfinite(x)) x = kNaN;  // inf is no measurement: a missing point
  const Forecast f = Next();
  double learn = x;
  if (std::isnan(x)) {
    learn = f.value;  // a missing point: carry the forecast
  } else {
    if (x <= 0) s.all_positive = false;
    learn = s.errors.Observe(x, f.value, s.options.robust_k);
  }
  if (!std::isnan(learn)) {
    s.model.Learn(learn, s.params);
  } else {
    s.model.Advance();
  }
  s.history[static_cast<size_t>(s.t % static_cast<int64_t>(s.capacity))] = x;
  ++s.t;
  const bool first_season_fit =
      !s.options.seasons.empty() && s.last_fit < 0 && s.t >= 2 * s.options.seasons.front();
  const bool first_plain_fit = s.options.seasons.empty() && s.last_fit < 0 && s.t >= 50;
  if (first_season_fit || first_plain_fit ||
      (s.last_fit >= 0 && s.t - s.last_fit >= s.refit_every())) {
    s.Fit();
  }
  return f;
}

double HoltWinters::alpha() const { return s_->params.alpha; }
double HoltWinters::beta() const { return s_->params.beta; }
double HoltWinters::gamma() const { return s_->model.seasonal ? s_->params.gamma : 0; }
Seasonality HoltWinters::mode() const {
  if (!s_->model.seasonal) return Seasonality::kAuto;
  return s_->model.multiplicative ? Seasonality::kMultiplicative : Seasonality::kAdditive;
}
double HoltWinters::residual_sigma() const { return s_->errors.sigma(); }
int64_t HoltWinters::points() const { return s_->t; }
const HoltWintersOptions& HoltWinters::options() const { return s_->options; }

}  // namespace tailguard
