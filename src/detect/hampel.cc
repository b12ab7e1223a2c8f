// The causal Hampel filter over a sliding window kept sorted.
//
// The window: the last k values in arrival order (a ring, to know which one leaves) and the same
// values sorted. Finding where a value goes or where the leaving one is takes a binary search,
// O(log k); moving the tail over is one memmove of at most k doubles (248 bytes at k = 31), cheaper
// at these sizes than rebalancing a tree and without its allocations. The median is then an
// index, and the MAD the k/2-th smallest of two sorted sequences (the distances below and above
// the median), found by binary search in O(log k). Nothing is re-sorted.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <vector>

#include "tailguard/detect.h"

namespace tailguard {

struct Hampel::Window {
  explicit Window(int k) : ring(static_cast<size_t>(k)) { sorted.reserve(static_cast<size_t>(k)); }

  std::vector<double> ring;  // arrival order; ring[next] is the oldest once full
  size_t next = 0;
  std::vector<double> sorted;

  bool full() const { return sorted.size() == ring.size(); }

  void Push(double x) {
    if (full()) {
      const double old = ring[next];
      sorted.erase(std::lower_bound(sorted.begin(), sorted.end(), old));
    }
    ring[next] = x;
    next = (next + 1) % ring.size();
    sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), x), x);
  }

  double Median() const {
    const size_t n = sorted.size();
    return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  }

  // The k-th smallest (0-based) of |x_i - m| over the window, where the values below index p
  // are <= m and the rest >= m. Distances below are ascending going down from p - 1; above,
  // ascending going up from p.
  double KthDistance(double m, size_t p, size_t k) const {
    const size_t na = p;                  // A[i] = m - sorted[p - 1 - i]
    const size_t nb = sorted.size() - p;  // B[j] = sorted[p + j] - m
    const auto a = [&](size_t i) { return m - sorted[p - 1 - i]; };
    const auto b = [&](size_t j) { return sorted[p + j] - m; };
    // Take i from A and k + 1 - i from B; find the i where the split is ordered.
    size_t lo = k + 1 > nb ? k + 1 - nb : 0;
    size_t hi = std::min(k + 1, na);
    while (lo < hi) {
      const size_t i = (lo + hi) / 2;  // i < hi <= na, and k - i < nb
      if (a(i) < b(k - i)) {
        lo = i + 1;
      } else {
        hi = i;
      }
    }
    const size_t i = lo;
    const double from_a = i > 0 ? a(i - 1) : -1;
    const double from_b = k + 1 - i > 0 ? b(k - i) : -1;
    return std::max(from_a, from_b);
  }

  double Mad(double m) const {
    const size_t n = sorted.size();
    const size_t p = n / 2;  // sorted[0..p) <= m <= sorted[p..n)
    if (n % 2 == 1) return KthDistance(m, p, n / 2);
    return 0.5 * (KthDistance(m, p, n / 2 - 1) + KthDistance(m, p, n / 2));
  }
};

Hampel::Hampel(HampelOptions options)
    : options_(options), window_(std::make_unique<Window>(std::max(options.window, 1))) {}
Hampel::~Hampel() = default;
Hampel::Hampel(Hampel&&) noexcept = default;
Hampel& Hampel::operator=(Hampel&&) noexcept = default;

HampelResult Hampel::Update(double x) {
  HampelResult r;
  if (!std::isfinite(x)) return r;
  Window& w = *window_;
  if (w.full()) {
    r.ready = true;
    r.median = w.Median();
    r.mad = w.Mad(r.median);
    const double dev = std::abs(x - r.median);
    const double sigma = 1.4826 * r.mad;
    constexpr double kMaxZ = 1e6;
    if (sigma > 0) {
      r.z = std::min(dev / sigma, kMaxZ);
    } else {
      r.z = dev > 0 ? kMaxZ : 0;  // a flat window: any change is as unusual as it gets
    }
    r.outlier = r.z > options_.threshold;
  }
  w.Push(x);
  return r;
}

}  // namespace tailguard
