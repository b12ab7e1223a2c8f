// Drift: a hinge fit for where the trend starts, Theil-Sen for its slope, Mann-Kendall for its
// significance, over per-bucket medians.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <vector>

#include "absl/time/time.h"
#include "tailguard/detect.h"

namespace tailguard {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<long>(mid)));
}

// Mann-Kendall z of y (ties count as no change; continuity-corrected).
double MannKendallZ(const std::vector<double>& y) {
  const double n = static_cast<double>(y.size());
  if (y.size() < 3) return 0;
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    for (size_t j = i + 1; j < y.size(); ++j) s += (y[j] > y[i]) - (y[j] < y[i]);
  }
  const double var = n * (n - 1) * (2 * n + 5) / 18;
  if (s == 0) return 0;
  return (s - (s > 0 ? 1 : -1)) / std::sqrt(var);
}

// Theil-Sen slope of y over 0, 1, 2, ... (per bucket).
double TheilSen(const std::vector<double>& y) {
  std::vector<double> slopes;
  slopes.reserve(y.size() * (y.size() - 1) / 2);
  for (size_t i = 0; i < y.size(); ++i) {
    for (size_t j = i + 1; j < y.size(); ++j) {
      slopes.push_back((y[j] - y[i]) / static_cast<double>(j - i));
    }
  }
  return Median(std::move(slopes));
}

// The bucket c where y = a + b * max(0, i - c) fits best (least squares); a is returned too.
// Candidates leave at least `min_tail` buckets after c.
size_t HingeStart(const std::vector<double>& y, size_t min_tail, double* level) {
  const size_t n = y.size();
  size_t best_c = 0;
  double best_sse = INFINITY;
  for (size_t c = 0; c + min_tail <= n; ++c) {
    // Ordinary least squares on x = max(0, i - c).
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = i > c ? static_cast<double>(i - c) : 0;
      sx += x, sy += y[i], sxx += x * x, sxy += x * y[i];
    }
    const double dn = static_cast<double>(n);
    const double den = dn * sxx - sx * sx;
    const double b = den != 0 ? (dn * sxy - sx * sy) / den : 0;
    const double a = (sy - b * sx) / dn;
    double sse = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = i > c ? static_cast<double>(i - c) : 0;
      const double e = y[i] - (a + b * x);
      sse += e * e;
    }
    if (sse < best_sse) {
      best_sse = sse;
      best_c = c;
      *level = a;
    }
  }
  return best_c;
}

}  // namespace

std::string DriftFinding::Describe() const {
  if (!drifting) return "";
  char buf[96];
  const std::string day = absl::FormatTime(
      "%Y-%m-%d", absl::FromUnixNanos(since.time_since_epoch().count()), absl::UTCTimeZone());
  std::snprintf(buf, sizeof(buf), "%s %.1f %%/week since %s",
                pct_per_week >= 0 ? "rising" : "falling", std::abs(pct_per_week), day.c_str());
  return buf;
}

struct DriftDetector::State {
  DriftOptions options;
  int64_t bucket = INT64_MIN;                   // index of the open bucket
  std::vector<double> open;                     // its values
  std::deque<std::pair<int64_t, double>> done;  // (bucket index, median), oldest first
  DriftFinding finding;

  void Close() {
    if (open.empty()) return;
    done.emplace_back(bucket, Median(std::move(open)));
    open.clear();
    while (static_cast<int>(done.size()) > options.max_buckets) done.pop_front();
    Evaluate();
  }

  void Evaluate() {
    finding = DriftFinding{};
    const int n = static_cast<int>(done.size());
    finding.buckets = n;
    if (n < options.min_buckets) return;
    std::vector<double> y;
    y.reserve(done.size());
    for (const auto& [b, v] : done) y.push_back(v);
    // Missing buckets (gaps) are ignored: the trend is per bucket present, which is close
    // enough for slow drifts.
    const size_t min_tail = static_cast<size_t>(std::max(4, options.min_buckets / 2));
    double level = 0;
    const size_t c = HingeStart(y, min_tail, &level);
    const std::vector<double> tail(y.begin() + static_cast<long>(c), y.end());
    finding.z = MannKendallZ(tail);
    const double slope = TheilSen(tail);  // per bucket
    const double base = level != 0 ? std::abs(level) : std::abs(Median(tail));
    const double buckets_per_week = std::chrono::duration<double>(std::chrono::hours(24 * 7)) /
                                    std::chrono::duration<double>(options.bucket);
    finding.pct_per_week = base > 0 ? 100 * slope * buckets_per_week / base : 0;
    finding.since = WallTime(Duration(done[c].first * options.bucket.count()));
    finding.drifting = std::abs(finding.z) >= options.min_z &&
                       std::abs(finding.pct_per_week) >= options.min_pct_per_week &&
                       (finding.pct_per_week > 0) == (finding.z > 0);
  }
};

DriftDetector::DriftDetector(DriftOptions options) : s_(std::make_unique<State>()) {
  // Out-of-range options fall back to their defaults' meaning rather than dividing by zero.
  if (options.bucket.count() <= 0) options.bucket = std::chrono::hours(24);
  options.min_buckets = std::max(options.min_buckets, 3);
  options.max_buckets = std::max(options.max_buckets, options.min_buckets);
  s_->options = options;
}
DriftDetector::~DriftDetector() = default;
DriftDetector::DriftDetector(DriftDetector&&) noexcept = default;
DriftDetector& DriftDetector::operator=(DriftDetector&&) noexcept = default;

void DriftDetector::Add(WallTime t, double value) {
  if (!std::isfinite(value)) return;
  State& s = *s_;
  const int64_t ns = t.time_since_epoch().count();
  const int64_t len = s.options.bucket.count();
  const int64_t b = ns >= 0 ? ns / len : (ns - len + 1) / len;
  if (b < s.bucket) return;
  if (b > s.bucket) {
    s.Close();
    s.bucket = b;
  }
  s.open.push_back(value);
}

const DriftFinding& DriftDetector::Current() const { return s_->finding; }

}  // namespace tailguard
