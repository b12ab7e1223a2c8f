#include "diagnose/robust.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tailguard::diagnose {

double SortedQuantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

namespace {

// The smallest positive gap between consecutive values of sorted `v`; +inf when there is none.
double SmallestGap(const std::vector<double>& v) {
  double gap = std::numeric_limits<double>::infinity();
  for (size_t i = 1; i < v.size(); ++i) {
    const double d = v[i] - v[i - 1];
    if (d > 0 && d < gap) gap = d;
  }
  return gap;
}

}  // namespace

Baseline DescribeBaseline(std::vector<double> values, const std::vector<double>& resolution_from) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return std::isnan(x); }),
               values.end());
  Baseline b;
  if (values.empty()) return b;
  std::sort(values.begin(), values.end());
  b.n = values.size();
  b.median = SortedQuantile(values, 0.5);
  b.q1 = SortedQuantile(values, 0.25);
  b.q3 = SortedQuantile(values, 0.75);
  b.iqr = b.q3 - b.q1;
  b.scale = std::max(b.iqr, kRelativeFloor * std::abs(b.median));
  if (b.scale > 0) return b;
  double gap = SmallestGap(values);
  if (std::isinf(gap) && !resolution_from.empty()) {
    std::vector<double> all = values;
    for (double x : resolution_from) {
      if (!std::isnan(x)) all.push_back(x);
    }
    std::sort(all.begin(), all.end());
    gap = SmallestGap(all);
  }
  b.scale = std::isinf(gap) ? 0 : gap;
  return b;
}

double RobustScore(const Baseline& baseline, double x) {
  if (baseline.n == 0 || !(baseline.scale > 0)) return 0;
  return (x - baseline.median) / baseline.scale;
}

}  // namespace tailguard::diagnose
