// Heatmap buckets, rows from histograms, the compact row form and its rejection of garbage, and
// heatmap assembly.
#include "metrics/heatmap.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tailguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HeatmapBucketTest, FourBucketsPerDoublingFromOneMicrosecond) {
  EXPECT_EQ(HeatmapBucketIndex(0), 0);
  EXPECT_EQ(HeatmapBucketIndex(999), 0);
  EXPECT_EQ(HeatmapBucketIndex(1000), 1);
  EXPECT_EQ(HeatmapBucketIndex(1188), 1);  // 2^(1/4) us = 1189.2 ns
  EXPECT_EQ(HeatmapBucketIndex(1189), 2);
  EXPECT_EQ(HeatmapBucketIndex(2000), 5);  // one doubling: four buckets on
  EXPECT_EQ(HeatmapBucketIndex(1999), 4);
  EXPECT_EQ(HeatmapBucketIndex(1'000'000), 40);  // 1 ms = 2^9.97 us: edges 0..39 lie below
  EXPECT_EQ(HeatmapBucketLowerNs(0), 0u);
  EXPECT_EQ(HeatmapBucketUpperNs(0), 1000u);
  EXPECT_EQ(HeatmapBucketLowerNs(1), 1000u);
  EXPECT_EQ(HeatmapBucketUpperNs(4), 2000u);
  EXPECT_EQ(HeatmapBucketLowerNs(5), 2000u);
  // The largest value a histogram holds has a bucket, and everything above lands in the last.
  EXPECT_LT(HeatmapBucketIndex(BucketLayout::kMaxValue), kHeatmapBucketCount);
  EXPECT_GT(HeatmapBucketUpperNs(kHeatmapBucketCount - 1), BucketLayout::kMaxValue);
  EXPECT_EQ(HeatmapBucketIndex(UINT64_MAX), kHeatmapBucketCount - 1);
}

TEST(HeatmapBucketTest, EdgesIncreaseAndEveryValueFallsInsideItsBucket) {
  for (int i = 1; i < kHeatmapBucketCount; ++i) {
    ASSERT_LT(HeatmapBucketLowerNs(i), HeatmapBucketUpperNs(i)) << i;
    ASSERT_EQ(HeatmapBucketLowerNs(i), HeatmapBucketUpperNs(i - 1)) << i;
    // Each bucket is 2^(1/4) wide, within rounding.
    const double ratio =
        static_cast<double>(HeatmapBucketUpperNs(i)) / static_cast<double>(HeatmapBucketLowerNs(i));
    ASSERT_NEAR(ratio, std::exp2(0.25), 1e-3) << i;
  }
  for (uint64_t v = 1; v < (uint64_t{1} << 40); v = v * 3 + 7) {
    const int b = HeatmapBucketIndex(v);
    EXPECT_LE(HeatmapBucketLowerNs(b), v);
    EXPECT_LT(v, HeatmapBucketUpperNs(b));
  }
}

TEST(HeatmapRowTest, FromHistogram) {
  Histogram h;
  EXPECT_TRUE(HeatmapRowOf(h).empty());
  h.RecordN(500, 3);          // bucket 0
  h.RecordN(10'000'000, 5);   // 10 ms
  h.RecordN(10'100'000, 2);   // same heatmap bucket
  h.RecordN(100'000'000, 1);  // 100 ms
  const HeatmapRow row = HeatmapRowOf(h);
  const int b10 = HeatmapBucketIndex(10'000'000);
  EXPECT_EQ(HeatmapBucketIndex(10'100'000), b10);
  EXPECT_THAT(row, ElementsAre(HeatmapCount{0, 3}, HeatmapCount{b10, 7},
                               HeatmapCount{HeatmapBucketIndex(100'000'000), 1}));
  uint64_t total = 0;
  for (const HeatmapCount& c : row) total += c.count;
  EXPECT_EQ(total, h.count());
}

TEST(HeatmapRowTest, EncodeDecodeRoundTrip) {
  EXPECT_EQ(EncodeHeatmapRow({}), std::string("\x01", 1));
  absl::StatusOr<HeatmapRow> empty = DecodeHeatmapRow(std::string("\x01", 1));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());

  const HeatmapRow row = {{0, 1}, {1, 300}, {57, 1'000'000'000'000}, {129, 2}};
  const std::string blob = EncodeHeatmapRow(row);
  // Version, then (gap, count): (0, 1) (0, 300: 2 bytes) (55, 10^12: 6 bytes) (71, 2).
  EXPECT_EQ(blob.size(), 1u + 2 + 3 + 7 + 2);
  absl::StatusOr<HeatmapRow> back = DecodeHeatmapRow(blob);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, row);

  // A busy minute: 78 000 requests from 2 to 80 ms, in 23 buckets of up to 6 000:
  // 2 to 3 bytes each.
  Histogram h;
  for (uint64_t v = 2'000'000; v < 80'000'000; v += 997) h.Record(v);
  const std::string minute = EncodeHeatmapRow(HeatmapRowOf(h));
  EXPECT_EQ(HeatmapRowOf(h).size(), 23u);
  EXPECT_LE(minute.size(), 1u + 23 * 3);
  EXPECT_GE(minute.size(), 1u + 23 * 2);
  back = DecodeHeatmapRow(minute);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, HeatmapRowOf(h));
}

TEST(HeatmapRowTest, CorruptBlobsAreRejectedWithTheOffset) {
  auto error = [](std::string blob) {
    absl::StatusOr<HeatmapRow> r = DecodeHeatmapRow(blob);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_THAT(error(""), HasSubstr("empty"));
  EXPECT_THAT(error("\x02"), HasSubstr("unknown version 2"));
  EXPECT_THAT(error(std::string("\x01\x00", 2)),
              HasSubstr("truncated or malformed count at byte 2"));
  EXPECT_THAT(error(std::string("\x01\x80", 2)), HasSubstr("bucket gap at byte 1"));
  EXPECT_THAT(error(std::string("\x01\x00\x00", 3)), HasSubstr("zero count at byte 2"));
  EXPECT_THAT(error(std::string("\x01\x82\x01\x01", 4)), HasSubstr("bucket past the last"));
  // Gaps that add up past the last bucket.
  EXPECT_THAT(error(std::string("\x01\x7f\x01\x7f\x01", 5)), HasSubstr("bucket past the last"));
  // An overlong varint (11 bytes).
  EXPECT_THAT(error(std::string("\x01\x00", 2) + std::string(10, '\xff') + "\x01"),
              HasSubstr("malformed count"));
  // Counts that overflow.
  std::string big = "\x01";
  for (int i = 0; i < 3; ++i) {
    big += '\x00';
    big += std::string(8, '\xff') + "\x7f";  // 2^63 - 1
  }
  EXPECT_THAT(error(big), HasSubstr("past 2^63"));
}

TEST(HeatmapTest, MakeTrimsRowsToTheBucketsWithData) {
  const WallTime t0{std::chrono::seconds(1'700'000'000)};
  const std::vector<WallTime> times = {t0, t0 + std::chrono::minutes(1),
                                       t0 + std::chrono::minutes(2)};
  const std::vector<HeatmapRow> rows = {{{40, 2}, {42, 1}}, {}, {{38, 5}}};
  const Heatmap h = MakeHeatmap(times, rows);
  EXPECT_EQ(h.times, times);
  ASSERT_EQ(h.bounds.size(), 42u - 38u + 2u);
  EXPECT_DOUBLE_EQ(h.bounds.front(), static_cast<double>(HeatmapBucketLowerNs(38)) * 1e-9);
  EXPECT_DOUBLE_EQ(h.bounds.back(), static_cast<double>(HeatmapBucketUpperNs(42)) * 1e-9);
  EXPECT_THAT(h.cells,
              ElementsAre(Heatmap::Cell{0, 2, 2}, Heatmap::Cell{0, 4, 1}, Heatmap::Cell{2, 0, 5}));

  const Heatmap none = MakeHeatmap(times, std::vector<HeatmapRow>(3));
  EXPECT_TRUE(none.bounds.empty());
  EXPECT_TRUE(none.cells.empty());
  EXPECT_EQ(none.times.size(), 3u);
}

TEST(HeatmapTest, DenseAndSparseRows) {
  std::vector<uint64_t> dense;
  AddHeatmapRow({{3, 1}, {7, 2}}, dense);
  AddHeatmapRow({{7, 1}, {9, 4}}, dense);
  EXPECT_EQ(dense.size(), static_cast<size_t>(kHeatmapBucketCount));
  EXPECT_THAT(SparseHeatmapRow(dense),
              ElementsAre(HeatmapCount{3, 1}, HeatmapCount{7, 3}, HeatmapCount{9, 4}));
}

}  // namespace
}  // namespace tailguard
