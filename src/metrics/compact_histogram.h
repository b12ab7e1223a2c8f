// An immutable, compact copy of a Histogram for storage in window slots.
#ifndef TAILGUARD_METRICS_COMPACT_HISTOGRAM_H_
#define TAILGUARD_METRICS_COMPACT_HISTOGRAM_H_

#include <cstdint>
#include <vector>

#include "tailguard/histogram.h"

namespace tailguard {

// Keeps only the buckets between the smallest and largest value, as 32-bit counts when every
// count fits (64-bit otherwise). Merging back into a Histogram is exact.
// Not thread-safe; const methods are safe to call concurrently.
class CompactHistogram {
 public:
  CompactHistogram() = default;
  explicit CompactHistogram(const Histogram& h);

  // Adds this histogram's counts and statistics to `out`.
  void MergeInto(Histogram& out) const;

  uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0 && out_of_range_ == 0; }
  // Bytes held, object included.
  size_t MemoryBytes() const;

 private:
  int first_ = 0;
  std::vector<uint32_t> small_;  // used when every count fits in 32 bits
  std::vector<uint64_t> large_;  // used otherwise
  uint64_t count_ = 0;
  uint64_t out_of_range_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  double sum_ = 0.0;
};

}  // namespace tailguard

#endif  // TAILGUARD_METRICS_COMPACT_HISTOGRAM_H_
