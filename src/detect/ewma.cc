// Exponentially weighted moving average.
#include <cassert>
#include <cmath>

#include "tailguard/detect.h"

namespace tailguard {

Ewma::Ewma(double alpha) : alpha_(alpha) { assert(alpha > 0 && alpha <= 1); }

double Ewma::Update(double x) {
  if (std::isnan(x)) return value_;
  value_ = std::isnan(value_) ? x : alpha_ * x + (1 - alpha_) * value_;
  return value_;
}

}  // namespace tailguard
