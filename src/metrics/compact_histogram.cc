// CompactHistogram: bucket-range storage for slots.
#include "metrics/compact_histogram.h"

#include <algorithm>

namespace tailguard {

CompactHistogram::CompactHistogram(const Histogram& h)
    : count_(h.count_), out_of_range_(h.out_of_range_), min_(h.min_), max_(h.max_), sum_(h.sum_) {
  if (h.count_ == 0) return;
  first_ = BucketLayout::Index(h.min_);
  const int last = BucketLayout::Index(h.max_);
  const auto begin = h.counts_.begin() + first_;
  const auto end = h.counts_.begin() + last + 1;
  if (*std::max_element(begin, end) <= UINT32_MAX) {
    small_.assign(begin, end);
  } else {
    large_.assign(begin, end);
  }
}

void CompactHistogram::MergeInto(Histogram& out) const {
  out.out_of_range_ += out_of_range_;
  if (count_ == 0) return;
  uint64_t* dst = out.counts_.data() + first_;
  if (!small_.empty()) {
    for (size_t i = 0; i < small_.size(); ++i) dst[i] += small_[i];
  } else {
    for (size_t i = 0; i < large_.size(); ++i) dst[i] += large_[i];
  }
  out.count_ += count_;
  out.sum_ += sum_;
  out.min_ = std::min(out.min_, min_);
  out.max_ = std::max(out.max_, max_);
}

size_t CompactHistogram::MemoryBytes() const {
  return sizeof(*this) + small_.capacity() * sizeof(uint32_t) +
         large_.capacity() * sizeof(uint64_t);
}

}  // namespace tailguard
