// A log-linear latency histogram (HdrHistogram's bucket layout) with at most 1 % relative error,
// exact merging and a compact, versioned binary form for merging across processes.
#ifndef TAILGUARD_HISTOGRAM_H_
#define TAILGUARD_HISTOGRAM_H_

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tailguard {

// The bucket layout shared by every histogram in tailguard.
//
// Values are unsigned integers: nanoseconds for latencies, bytes or counts for value series
// (Unit in registry.h). Values below 128 have a bucket each
// (exact). Above that, every power-of-two range [2^e, 2^(e+1)) is split into 64 equal buckets, so
// a bucket is at most 1/64 of its lowest value wide. A quantile is reported as the midpoint of
// its bucket, which is within 1/128 (0.79 %) of any value in the bucket.
//
// The layout covers [0, 2^42) ns, about 73 minutes, in 2368 buckets.
struct BucketLayout {
  // log2 of the number of linear sub-buckets per power of two.
  static constexpr int kSubBucketBits = 6;
  static constexpr int kSubBuckets = 1 << kSubBucketBits;  // 64
  // Values must be below 2^kMaxExponent.
  static constexpr int kMaxExponent = 42;
  static constexpr uint64_t kMaxValue = (uint64_t{1} << kMaxExponent) - 1;
  static constexpr int kBucketCount = (kMaxExponent - kSubBucketBits + 1) * kSubBuckets;  // 2368

  // Index of the bucket holding `value`. REQUIRES: value <= kMaxValue.
  static int Index(uint64_t value) {
    // shift is 0 for values below 128 (one bucket per value), else log2(value) - 6.
    const int shift = (63 - std::countl_zero(value | 127)) - kSubBucketBits;
    return (shift << kSubBucketBits) + static_cast<int>(value >> shift);
  }
  // Smallest value that lands in bucket `index`. REQUIRES: 0 <= index < kBucketCount.
  static uint64_t Lowest(int index) {
    const int block = index >> kSubBucketBits;
    if (block <= 1) return static_cast<uint64_t>(index);
    const int shift = block - 1;
    return static_cast<uint64_t>((index & (kSubBuckets - 1)) + kSubBuckets) << shift;
  }
  // Largest value that lands in bucket `index`.
  static uint64_t Highest(int index) { return Lowest(index) + Width(index) - 1; }
  // Number of distinct values in bucket `index` (1 below 128, then 2, 4, ...).
  static uint64_t Width(int index) {
    const int block = index >> kSubBucketBits;
    return block <= 1 ? 1 : uint64_t{1} << (block - 1);
  }
  // The value reported for bucket `index`: its midpoint.
  static uint64_t Midpoint(int index) { return Lowest(index) + Width(index) / 2; }

  // The values that coordinated-omission correction adds for `value` at `expected_interval`:
  // value - interval, value - 2 * interval, ... down to interval (none when interval is 0 or
  // value < 2 * interval). Calls f(index, count, highest, lowest) once per bucket they fall in,
  // highest bucket first, so a long stall costs O(buckets), not O(value / interval).
  // REQUIRES: value <= kMaxValue.
  template <typename F>
  static void ForEachCorrection(uint64_t value, uint64_t expected_interval, F&& f) {
    if (expected_interval == 0 || value / expected_interval < 2) return;
    uint64_t left = value / expected_interval - 1;
    uint64_t v = value - expected_interval;
    while (left > 0) {
      const int index = Index(v);
      const uint64_t n = std::min(left, (v - Lowest(index)) / expected_interval + 1);
      f(index, n, v, v - (n - 1) * expected_interval);
      left -= n;
      if (left > 0) v -= n * expected_interval;
    }
  }
};

// A histogram of non-negative integer values (nanoseconds) on BucketLayout.
//
// Not thread-safe: the caller synchronises. For many writer threads use Recorder, which keeps one
// of these per thread's interval and merges on read.
//
// Memory: a dense array of 2368 64-bit counts (about 19 KiB), allocated once by the constructor.
// Record() never allocates.
class Histogram {
 public:
  Histogram();

  Histogram(const Histogram&) = default;
  Histogram& operator=(const Histogram&) = default;
  Histogram(Histogram&&) noexcept = default;
  Histogram& operator=(Histogram&&) noexcept = default;

  // Records one value. Returns false, and counts it in out_of_range(), when
  // value > BucketLayout::kMaxValue; the value is then not part of any statistic.
  bool Record(uint64_t value) { return RecordN(value, 1); }

  // Records `count` occurrences of `value`; count 0 records nothing. Same range rule as
  // Record().
  bool RecordN(uint64_t value, uint64_t count);

  // Records `value` and, to correct for coordinated omission, the values a load generator
  // would have seen had it kept sending every `expected_interval` while this request stalled:
  // value - expected_interval, value - 2 * expected_interval, ... down to expected_interval
  // (HdrHistogram's recordCorrectedValue), added bucket by bucket in O(buckets) however long
  // the stall. expected_interval == 0 disables the correction.
  // Returns false when `value` is out of range (nothing is recorded but the out-of-range count).
  bool RecordCorrected(uint64_t value, uint64_t expected_interval);

  // Adds `count` to bucket `index` as if values at the bucket's midpoint had been recorded.
  // min() and max() then move to the midpoint at most. Used to rebuild histograms from bucket
  // counts. REQUIRES: 0 <= index < BucketLayout::kBucketCount.
  void AddToBucket(int index, uint64_t count);

  // Adds every count of `other` to this histogram. Exact: merging is associative and
  // commutative, and merging equals recording both value streams into one histogram.
  void Merge(const Histogram& other);

  // Forgets everything, keeping the allocation.
  void Reset();

  // The value at quantile `q` in [0, 1] (clamped): the midpoint of the bucket that holds the
  // ceil(q * count())-th smallest value, clamped to [min(), max()]. Quantile(0) is min() and
  // Quantile(1) is max(). Returns 0 for an empty histogram.
  uint64_t Quantile(double q) const;

  // Number of recorded values (out-of-range ones excluded).
  uint64_t count() const { return count_; }
  // Number of values rejected by Record*() for being out of range.
  uint64_t out_of_range() const { return out_of_range_; }
  // Smallest and largest recorded values; 0 when empty.
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  // Sum of recorded values (as a double: exact up to 2^53, about 104 days of nanoseconds).
  double sum() const { return sum_; }
  // Arithmetic mean; 0 when empty.
  double mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
  bool empty() const { return count_ == 0; }

  // Count in bucket `index`. REQUIRES: 0 <= index < BucketLayout::kBucketCount.
  uint64_t bucket_count(int index) const { return counts_[static_cast<size_t>(index)]; }

  // Calls f(index, count) for every non-empty bucket in ascending order.
  template <typename F>
  void ForEachBucket(F&& f) const {
    if (count_ == 0) return;
    const int last = BucketLayout::Index(max_);
    for (int i = BucketLayout::Index(min_); i <= last; ++i) {
      if (counts_[static_cast<size_t>(i)] != 0) f(i, counts_[static_cast<size_t>(i)]);
    }
  }

  // Bytes of memory this histogram holds, object included.
  size_t MemoryBytes() const;

  // The compact binary form: a magic "TGHS", a format version, the layout, the statistics, the
  // non-empty bucket range as run-length varints, and a CRC-32 of all of it. A 1 s slot of a
  // typical service serializes to a few hundred bytes.
  std::string Serialize() const;

  // Parses Serialize()'s output. Never crashes on arbitrary bytes: corrupt, truncated, foreign or
  // future-version input returns InvalidArgument naming what is wrong and at which byte offset.
  static absl::StatusOr<Histogram> Deserialize(std::string_view bytes);

  // Equal counts in every bucket, and equal count, min, max, sum and out-of-range count.
  friend bool operator==(const Histogram& a, const Histogram& b);

 private:
  friend class Recorder;          // adds out-of-range counts to the intervals it rebuilds
  friend class CompactHistogram;  // copies the counts in and out of its compact form

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t out_of_range_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  double sum_ = 0.0;
};

}  // namespace tailguard

#endif  // TAILGUARD_HISTOGRAM_H_
