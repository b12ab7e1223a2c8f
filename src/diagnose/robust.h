// Robust statistics for the diagnosis: a baseline that a few outliers (or the first minute of an
// incident) barely move, and the score of a point against it.
#ifndef TAILGUARD_DIAGNOSE_ROBUST_H_
#define TAILGUARD_DIAGNOSE_ROBUST_H_

#include <cstddef>
#include <vector>

namespace tailguard::diagnose {

// The median and the interquartile range of a window of values, and the scale a deviation is
// measured in.
struct Baseline {
  size_t n = 0;       // values in the window; 0 means no baseline
  double median = 0;  // the middle value (mean of the two middle ones for even n)
  double q1 = 0;      // first quartile (linear interpolation, like numpy's default)
  double q3 = 0;      // third quartile
  double iqr = 0;     // q3 - q1
  // The unit of a deviation: the IQR, but at least kRelativeFloor of |median|, since a flat
  // gauge (memory sampled every second, a quantised percentile) has an IQR near 0 that would
  // make a 1 % wobble look like a thousand IQRs. Where the IQR is 0 and the median too, the
  // series' resolution, the smallest gap between two of its distinct values. A series with one
  // value in its whole history has scale 0 and scores nothing: it never moved.
  double scale = 0;
};

// 1 % of the level: with the ranker's threshold of 3, a flat series has to move by 3 % of its
// level to count as moved, about the noise of a resource gauge read at different moments.
inline constexpr double kRelativeFloor = 0.01;

// The baseline of `values` (any order; NaN values are skipped). `resolution_from` supplies extra
// values (the window after the baseline) to find a resolution when the baseline alone is
// constant: a step from a flat line is then scored in steps of the smallest change ever seen.
Baseline DescribeBaseline(std::vector<double> values,
                          const std::vector<double>& resolution_from = {});

// (x - median) / scale; 0 when the baseline is empty or its scale is 0.
double RobustScore(const Baseline& baseline, double x);

// The q-quantile (0 <= q <= 1) of sorted, non-empty `sorted`, interpolating linearly between
// closest ranks (numpy's "linear").
double SortedQuantile(const std::vector<double>& sorted, double q);

}  // namespace tailguard::diagnose

#endif  // TAILGUARD_DIAGNOSE_ROBUST_H_
