// Histogram: layout, accuracy against exact quantiles, merge, correction, and the binary form.
#include "tailguard/histogram.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/encoding.h"

namespace tailguard {
namespace {

using ::testing::HasSubstr;

TEST(BucketLayoutTest, BucketsTileTheRangeWithoutGaps) {
  EXPECT_EQ(BucketLayout::kBucketCount, 2368);
  uint64_t expected_low = 0;
  for (int i = 0; i < BucketLayout::kBucketCount; ++i) {
    ASSERT_EQ(BucketLayout::Lowest(i), expected_low) << "bucket " << i;
    ASSERT_EQ(BucketLayout::Index(BucketLayout::Lowest(i)), i);
    ASSERT_EQ(BucketLayout::Index(BucketLayout::Highest(i)), i);
    expected_low = BucketLayout::Highest(i) + 1;
  }
  EXPECT_EQ(expected_low - 1, BucketLayout::kMaxValue);
}

TEST(BucketLayoutTest, MidpointIsWithinOnePercentOfEveryValueInItsBucket) {
  for (int i = 1; i < BucketLayout::kBucketCount; ++i) {
    const double mid = static_cast<double>(BucketLayout::Midpoint(i));
    const double lo = static_cast<double>(BucketLayout::Lowest(i));
    const double hi = static_cast<double>(BucketLayout::Highest(i));
    ASSERT_LE(std::abs(mid - lo) / lo, 1.0 / 128) << "bucket " << i;
    ASSERT_LE(std::abs(mid - hi) / hi, 1.0 / 128) << "bucket " << i;
  }
}

TEST(HistogramTest, RecordsFromOneNanosecondToOverAnHour) {
  Histogram h;
  EXPECT_TRUE(h.Record(1));
  EXPECT_TRUE(h.Record(3'600'000'000'000));  // one hour
  EXPECT_TRUE(h.Record(BucketLayout::kMaxValue));
  EXPECT_FALSE(h.Record(BucketLayout::kMaxValue + 1));
  EXPECT_FALSE(h.Record(UINT64_MAX));
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.out_of_range(), 2u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_EQ(h.max(), BucketLayout::kMaxValue);
}

TEST(HistogramTest, EmptyHistogramAnswersZero) {
  Histogram h;
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.Quantile(0.99), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
}

TEST(HistogramTest, QuantileEdgesAndStatistics) {
  Histogram h;
  for (uint64_t v = 1; v <= 100; ++v) h.Record(v);  // exact range: one bucket per value
  EXPECT_EQ(h.Quantile(0), 1u);
  EXPECT_EQ(h.Quantile(-1), 1u);
  EXPECT_EQ(h.Quantile(std::nan("")), 1u);
  EXPECT_EQ(h.Quantile(0.5), 50u);
  EXPECT_EQ(h.Quantile(0.99), 99u);
  EXPECT_EQ(h.Quantile(1), 100u);
  EXPECT_EQ(h.Quantile(7), 100u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_DOUBLE_EQ(h.sum(), 5050);
}

TEST(HistogramTest, QuantileIsClampedToMinAndMax) {
  Histogram h;
  h.Record(1'000'001);  // a bucket whose midpoint is above the value
  EXPECT_EQ(h.Quantile(0.5), 1'000'001u);
}

// Relative error of every reported quantile against the exact sorted quantile.
double MaxRelativeError(const std::vector<uint64_t>& values) {
  Histogram h;
  for (uint64_t v : values) h.Record(v);
  std::vector<uint64_t> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  double worst = 0;
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    const double exact = static_cast<double>(sorted[rank - 1]);
    const double got = static_cast<double>(h.Quantile(q));
    worst = std::max(worst, std::abs(got - exact) / exact);
  }
  return worst;
}

TEST(HistogramTest, QuantilesWithinOnePercentOnLatencyShapedWorkloads) {
  std::mt19937_64 rng(42);
  const int n = 200'000;
  std::vector<uint64_t> lognormal, pareto, bimodal;
  std::lognormal_distribution<double> ln(std::log(20e6), 0.6);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> fast(2e6, 2e5), slow(150e6, 30e6);
  for (int i = 0; i < n; ++i) {
    lognormal.push_back(static_cast<uint64_t>(ln(rng)));
    pareto.push_back(static_cast<uint64_t>(1e6 / std::pow(1 - u(rng), 1 / 1.5)));
    const double b = u(rng) < 0.97 ? fast(rng) : slow(rng);
    bimodal.push_back(static_cast<uint64_t>(std::max(b, 1000.0)));
  }
  EXPECT_LE(MaxRelativeError(lognormal), 0.01);
  EXPECT_LE(MaxRelativeError(pareto), 0.01);
  EXPECT_LE(MaxRelativeError(bimodal), 0.01);
}

Histogram Random(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> ln(std::log(5e6), 1.0);
  Histogram h;
  for (int i = 0; i < n; ++i) h.Record(static_cast<uint64_t>(ln(rng)));
  return h;
}

TEST(HistogramTest, MergeIsAssociativeCommutativeAndExact) {
  const Histogram a = Random(1, 5000), b = Random(2, 7000), c = Random(3, 300);
  Histogram ab_c = a;
  ab_c.Merge(b);
  ab_c.Merge(c);
  Histogram bc = b;
  bc.Merge(c);
  Histogram a_bc = a;
  a_bc.Merge(bc);
  Histogram c_b_a = c;
  c_b_a.Merge(b);
  c_b_a.Merge(a);
  EXPECT_EQ(ab_c.count(), 12300u);
  for (int i = 0; i < BucketLayout::kBucketCount; ++i) {
    ASSERT_EQ(ab_c.bucket_count(i), a.bucket_count(i) + b.bucket_count(i) + c.bucket_count(i));
  }
  EXPECT_EQ(ab_c.min(), std::min({a.min(), b.min(), c.min()}));
  EXPECT_EQ(ab_c.max(), std::max({a.max(), b.max(), c.max()}));
  // Sums are doubles: compare them with a tolerance, everything else exactly.
  EXPECT_NEAR(ab_c.sum(), a_bc.sum(), 1e-6 * ab_c.sum());
  EXPECT_NEAR(ab_c.sum(), c_b_a.sum(), 1e-6 * ab_c.sum());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    EXPECT_EQ(ab_c.Quantile(q), a_bc.Quantile(q));
    EXPECT_EQ(ab_c.Quantile(q), c_b_a.Quantile(q));
  }
}

TEST(HistogramTest, MergeCarriesOutOfRangeCounts) {
  Histogram a, b;
  b.Record(UINT64_MAX);
  a.Merge(b);
  EXPECT_EQ(a.out_of_range(), 1u);
  EXPECT_TRUE(a.empty());
}

TEST(HistogramTest, RecordCorrectedFillsInTheRequestsAStallHid) {
  // HdrHistogram's example: a 1000 ns stall with a request expected every 100 ns stands for
  // requests that would have waited 1000, 900, ..., 100 ns.
  Histogram h;
  ASSERT_TRUE(h.RecordCorrected(1000, 100));
  EXPECT_EQ(h.count(), 10u);
  EXPECT_EQ(h.min(), 100u);
  EXPECT_EQ(h.max(), 1000u);
  Histogram fast;
  fast.RecordCorrected(50, 100);  // faster than the interval: no correction
  EXPECT_EQ(fast.count(), 1u);
  Histogram off;
  off.RecordCorrected(1000, 0);
  EXPECT_EQ(off.count(), 1u);
  EXPECT_FALSE(off.RecordCorrected(UINT64_MAX, 10));
  EXPECT_EQ(off.count(), 1u);
}

TEST(HistogramTest, ResetForgetsEverything) {
  Histogram h = Random(9, 1000);
  h.Record(UINT64_MAX);
  h.Reset();
  EXPECT_EQ(h, Histogram());
  h.Record(7);
  EXPECT_EQ(h.Quantile(0.5), 7u);
}

TEST(HistogramTest, MemoryIsTheDenseCountArray) {
  Histogram h;
  EXPECT_GE(h.MemoryBytes(), BucketLayout::kBucketCount * sizeof(uint64_t));
  EXPECT_LT(h.MemoryBytes(), 20 * 1024u);
}

TEST(HistogramSerializationTest, RoundTrips) {
  std::vector<Histogram> cases;
  cases.emplace_back();
  Histogram one;
  one.Record(12345);
  cases.push_back(one);
  Histogram edges;
  edges.Record(0);
  edges.Record(BucketLayout::kMaxValue);
  edges.Record(UINT64_MAX);
  cases.push_back(edges);
  cases.push_back(Random(5, 100'000));
  Histogram big;
  big.RecordN(1'000'000, uint64_t{1} << 40);
  cases.push_back(big);
  for (const Histogram& h : cases) {
    const std::string bytes = h.Serialize();
    absl::StatusOr<Histogram> back = Histogram::Deserialize(bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, h);
    EXPECT_EQ(back->Serialize(), bytes);
  }
}

TEST(HistogramSerializationTest, IsCompact) {
  // 100k lognormal values spread over about 400 buckets.
  EXPECT_LT(Random(5, 100'000).Serialize().size(), 1200u);
  EXPECT_EQ(Histogram().Serialize().size(), 13u);
}

TEST(HistogramSerializationTest, RejectsEveryTruncation) {
  const std::string bytes = Random(6, 1000).Serialize();
  for (size_t n = 0; n < bytes.size(); ++n) {
    absl::StatusOr<Histogram> h = Histogram::Deserialize(bytes.substr(0, n));
    ASSERT_FALSE(h.ok()) << "accepted a prefix of " << n << " bytes";
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(HistogramSerializationTest, RejectsEveryBitFlip) {
  const std::string bytes = Random(7, 1000).Serialize();
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      ASSERT_FALSE(Histogram::Deserialize(bad).ok()) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(HistogramSerializationTest, ErrorsSayWhatAndWhere) {
  std::string bytes = Histogram().Serialize();
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_THAT(Histogram::Deserialize(bad_magic).status().message(),
              HasSubstr("bad magic (expected \"TGHS\") at byte 0"));
  std::string future = bytes;
  future[4] = 9;
  EXPECT_THAT(Histogram::Deserialize(future).status().message(),
              HasSubstr("unsupported format version 9 (this build reads version 1)"));
  EXPECT_THAT(Histogram::Deserialize("TG").status().message(), HasSubstr("truncated"));
  std::string flipped = Random(8, 10).Serialize();
  flipped[15] ^= 1;
  EXPECT_THAT(Histogram::Deserialize(flipped).status().message(), HasSubstr("checksum"));
}

// Builds bytes with a valid header and checksum around an arbitrary body, to reach the
// structural checks behind the checksum.
std::string Forge(const std::string& body) {
  std::string out = "TGHS";
  out.push_back(1);
  out.push_back(BucketLayout::kSubBucketBits);
  out.push_back(BucketLayout::kMaxExponent);
  out += body;
  encoding::PutFixed32(out, encoding::Crc32(out));
  return out;
}

std::string Body(std::initializer_list<int64_t> varints, double sum, size_t sum_after) {
  std::string body;
  size_t i = 0;
  for (int64_t v : varints) {
    if (i++ == sum_after) encoding::PutFixed64(body, std::bit_cast<uint64_t>(sum));
    encoding::PutVarint(body, static_cast<uint64_t>(v));
  }
  return body;
}

// Regression (found by the fuzzer): an empty histogram whose out-of-range count was a padded
// varint parsed, but serialized to other bytes.
TEST(HistogramSerializationTest, RejectsPaddedVarints) {
  // count 0, out-of-range 2 written as the padded varint 0x82 0x00.
  absl::StatusOr<Histogram> h = Histogram::Deserialize(Forge(std::string("\x00\x82\x00", 3)));
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(std::string(h.status().message()), HasSubstr("malformed out-of-range count"));
}

TEST(HistogramSerializationTest, RejectsStructurallyInconsistentInputBehindAValidChecksum) {
  const int b = BucketLayout::Index(1000);
  const auto zz = [](int64_t v) { return static_cast<int64_t>(encoding::ZigZag(v)); };
  struct Case {
    std::string bytes;
    std::string message;
  };
  const std::vector<Case> cases = {
      // count, oor, min, max, [sum], first, last, entries...
      {Forge(Body({2, 0, 1000, 1000, b, b, zz(1)}, 2000, 4)), "add up to 1 but the header says 2"},
      {Forge(Body({1, 0, 2000, 1000, b, b, zz(1)}, 1000, 4)), "out of order"},
      {Forge(Body({1, 0, 1000, 1000, b, b + 1, zz(1)}, 1000, 4)), "does not match min and max"},
      {Forge(Body({1, 0, 1000, 1000, b, b, zz(1), 5}, 1000, 4)), "trailing bytes"},
      {Forge(Body({1, 0, 1000, 1000, b, b, zz(0)}, 1000, 4)), "zero-length entry"},
      {Forge(Body({1, 0, 1000, 1000, b, b, zz(-3)}, 1000, 4)), "run of empty buckets"},
      {Forge(Body({1, 0, 1000, 1000, b, b, zz(1)}, -5, 4)), "sum is not a finite"},
      {Forge(Body({1, 0, 1000, 1000, b, b, zz(1)}, -0.0, 4)), "sum is not a finite"},
      // Regression (found by the fuzzer): adjacent runs parsed, but serialized differently.
      {Forge(Body({2, 0, 1000, 1024, b, b + 3, zz(1), zz(-1), zz(-1), zz(1)}, 2024, 4)),
       "two runs of empty buckets in a row"},
      {Forge(Body({0, 0, 7}, 0, 99)), "trailing bytes after an empty histogram"},
      {Forge(Body({1, 0, 1000, int64_t{1} << 50, b, b, zz(1)}, 1000, 4)), "out of range"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Histogram> h = Histogram::Deserialize(c.bytes);
    ASSERT_FALSE(h.ok()) << c.message;
    EXPECT_THAT(std::string(h.status().message()), HasSubstr(c.message));
    EXPECT_THAT(std::string(h.status().message()), HasSubstr("at byte"));
  }
  // And the same construction with consistent fields is accepted, so the cases above fail for
  // the reason they name.
  absl::StatusOr<Histogram> ok =
      Histogram::Deserialize(Forge(Body({1, 0, 1000, 1000, b, b, zz(1)}, 1000, 4)));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->Quantile(0.5), 1000u);
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression (review): RecordN with a count of zero moved min and max.
TEST(HistogramTest, RecordNOfZeroRecordsNothing) {
  Histogram h;
  EXPECT_TRUE(h.RecordN(1000, 0));
  EXPECT_EQ(h, Histogram());
  h.Record(5000);
  EXPECT_EQ(h.min(), 5000u);
  EXPECT_TRUE(Histogram::Deserialize(h.Serialize()).ok());
}

TEST(HistogramTest, CorrectionByBucketMatchesOneByOne) {
  for (uint64_t value : {uint64_t{999}, uint64_t{1000}, uint64_t{123'457}, uint64_t{10'000'000}}) {
    for (uint64_t interval : {uint64_t{1}, uint64_t{7}, uint64_t{100}, uint64_t{4999}}) {
      Histogram fast;
      fast.RecordCorrected(value, interval);
      Histogram slow;
      slow.Record(value);
      for (uint64_t m = value - interval; value >= interval && m >= interval; m -= interval) {
        slow.Record(m);
      }
      ASSERT_EQ(fast.count(), slow.count()) << value << " " << interval;
      ASSERT_EQ(fast.min(), slow.min());
      ASSERT_EQ(fast.max(), slow.max());
      ASSERT_NEAR(fast.sum(), slow.sum(), 1e-9 * slow.sum());
      for (int i = 0; i < BucketLayout::kBucketCount; ++i) {
        ASSERT_EQ(fast.bucket_count(i), slow.bucket_count(i));
      }
    }
  }
}

TEST(HistogramSerializationTest, RejectsASumOutsideCountTimesMinMax) {
  Histogram h;
  h.Record(1000);
  h.Record(2000);
  std::string bytes = h.Serialize();
  // Rebuild with a sum of 10 (far below 2 * 1000) and a fresh checksum.
  const std::string good = bytes;
  const size_t sum_at = good.find(std::string("\x00\x00\x00\x00\x00\x70\xa7\x40", 8));
  ASSERT_NE(sum_at, std::string::npos);  // 3000.0 as a little-endian double
  std::string body = good.substr(0, good.size() - 4);
  const double ten = 10;
  body.replace(sum_at, 8, std::string(reinterpret_cast<const char*>(&ten), 8));
  encoding::PutFixed32(body, encoding::Crc32(body));
  absl::StatusOr<Histogram> back = Histogram::Deserialize(body);
  ASSERT_FALSE(back.ok());
  EXPECT_THAT(std::string(back.status().message()), HasSubstr("sum is outside"));
}

}  // namespace
}  // namespace tailguard
