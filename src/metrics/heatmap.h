// Latency heatmaps: a log-scale bucket scheme coarse enough to keep per minute for weeks, rows
// built from histograms, their compact binary form, and the assembled heatmap the API serves.
#ifndef TAILGUARD_METRICS_HEATMAP_H_
#define TAILGUARD_METRICS_HEATMAP_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tailguard/clock.h"
#include "tailguard/histogram.h"

namespace tailguard {

// The bucket scheme. Bucket 0 holds [0, 1 us); bucket i >= 1 holds
// [1 us * 2^((i-1)/4), 1 us * 2^(i/4)), each edge rounded to a whole nanosecond, so four buckets
// per doubling (each about 19 % wide). The last bucket ends above BucketLayout::kMaxValue
// (about 73 min), so every value a Histogram holds has a bucket.
inline constexpr int kHeatmapBucketsPerDoubling = 4;
inline constexpr uint64_t kHeatmapFirstEdgeNs = 1000;  // 1 us
inline constexpr int kHeatmapBucketCount = 130;

// The bucket holding `ns`; values past the last edge go to the last bucket.
int HeatmapBucketIndex(uint64_t ns);
// Lower and upper edge of bucket `i` in nanoseconds. REQUIRES: 0 <= i < kHeatmapBucketCount.
uint64_t HeatmapBucketLowerNs(int i);
uint64_t HeatmapBucketUpperNs(int i);

// One non-empty bucket of a row.
struct HeatmapCount {
  int bucket = 0;      // 0 <= bucket < kHeatmapBucketCount
  uint64_t count = 0;  // > 0
  friend bool operator==(const HeatmapCount&, const HeatmapCount&) = default;
};
// The counts of one interval: non-empty buckets only, in ascending bucket order.
using HeatmapRow = std::vector<HeatmapCount>;

// The row of `h`: each histogram bucket counts in the heatmap bucket of its midpoint (the value
// the histogram reports for it).
HeatmapRow HeatmapRowOf(const Histogram& h);

// Adds `row` into `dense` (kHeatmapBucketCount counts, resized if smaller).
void AddHeatmapRow(const HeatmapRow& row, std::vector<uint64_t>& dense);
// The non-empty buckets of `dense`.
HeatmapRow SparseHeatmapRow(std::span<const uint64_t> dense);

// The compact form: a version byte (1), then per non-empty bucket two LEB128 varints, the gap to
// the previous bucket (bucket - previous - 1, the first counting from -1) and the count. An empty
// row is the version byte alone; a bucket with up to 16383 counts takes 2 to 3 bytes, so a minute
// spread over 23 buckets (2 to 80 ms) is about 70 bytes.
// REQUIRES: `row` as HeatmapRowOf() makes it (ascending, in range, counts > 0).
std::string EncodeHeatmapRow(const HeatmapRow& row);
// The inverse. Never crashes on arbitrary bytes: an empty blob, an unknown version, a truncated
// or overlong varint, a bucket past the last, a zero count or a total above 2^63 is
// InvalidArgument naming the byte offset.
absl::StatusOr<HeatmapRow> DecodeHeatmapRow(std::string_view blob);

// A latency heatmap: columns are time intervals, rows are latency buckets.
struct Heatmap {
  std::vector<double> bounds;   // seconds; bounds.size() == rows + 1, increasing
  std::vector<WallTime> times;  // end of each column
  struct Cell {
    uint32_t column, row;
    uint64_t count;
    friend bool operator==(const Cell&, const Cell&) = default;
  };
  std::vector<Cell> cells;  // non-zero cells only, by column then row
};

// Assembles a heatmap from one row per column, ending at `times`: the rows span only the buckets
// that hold data (no rows and bounds {} when none does). REQUIRES: times.size() == rows.size().
Heatmap MakeHeatmap(std::vector<WallTime> times, std::span<const HeatmapRow> rows);

}  // namespace tailguard

#endif  // TAILGUARD_METRICS_HEATMAP_H_
