// Histogram: recording, merging, quantiles and the binary format.
#include "tailguard/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "absl/status/status.h"
#include "common/encoding.h"
#include "common/strings.h"

namespace tailguard {
namespace {

constexpr std::string_view kMagic = "TGHS";
constexpr uint8_t kFormatVersion = 1;

absl::Status Corrupt(size_t offset, std::string_view what) {
  return absl::InvalidArgumentError(
      Cat("serialized histogram: ", what, " at byte ", offset,
          "; the bytes are not (or no longer) a tailguard histogram: re-export them "
          "from the source with Histogram::Serialize"));
}

}  // namespace

Histogram::Histogram() : counts_(BucketLayout::kBucketCount, 0) {}

bool Histogram::RecordN(uint64_t value, uint64_t count) {
  if (count == 0) return value <= BucketLayout::kMaxValue;
  if (value > BucketLayout::kMaxValue) {
    out_of_range_ += count;
    return false;
  }
  counts_[static_cast<size_t>(BucketLayout::Index(value))] += count;
  count_ += count;
  sum_ += static_cast<double>(value) * static_cast<double>(count);
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  return true;
}

bool Histogram::RecordCorrected(uint64_t value, uint64_t expected_interval) {
  if (!Record(value)) return false;
  BucketLayout::ForEachCorrection(
      value, expected_interval, [this](int index, uint64_t n, uint64_t highest, uint64_t lowest) {
        counts_[static_cast<size_t>(index)] += n;
        count_ += n;
        // The terms are an arithmetic progression: n times their mean.
        sum_ += static_cast<double>(n) *
                (static_cast<double>(highest) + static_cast<double>(lowest)) / 2;
        min_ = std::min(min_, lowest);
      });
  return true;
}

void Histogram::AddToBucket(int index, uint64_t count) {
  if (count == 0) return;
  const uint64_t mid = BucketLayout::Midpoint(index);
  counts_[static_cast<size_t>(index)] += count;
  count_ += count;
  sum_ += static_cast<double>(mid) * static_cast<double>(count);
  min_ = std::min(min_, mid);
  max_ = std::max(max_, mid);
}

void Histogram::Merge(const Histogram& other) {
  out_of_range_ += other.out_of_range_;
  if (other.count_ == 0) return;
  other.ForEachBucket([this](int i, uint64_t c) { counts_[static_cast<size_t>(i)] += c; });
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void Histogram::Reset() {
  if (count_ != 0) {
    std::fill(counts_.begin() + BucketLayout::Index(min_),
              counts_.begin() + BucketLayout::Index(max_) + 1, 0);
  }
  count_ = 0;
  out_of_range_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
  sum_ = 0.0;
}

uint64_t Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  if (!(q > 0.0)) return min_;  // also catches NaN
  if (q >= 1.0) return max_;
  const uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  const int last = BucketLayout::Index(max_);
  for (int i = BucketLayout::Index(min_); i <= last; ++i) {
    seen += counts_[static_cast<size_t>(i)];
    if (seen >= rank) return std::clamp(BucketLayout::Midpoint(i), min_, max_);
  }
  return max_;
}

size_t Histogram::MemoryBytes() const {
  return sizeof(*this) + counts_.capacity() * sizeof(uint64_t);
}

bool operator==(const Histogram& a, const Histogram& b) {
  return a.count_ == b.count_ && a.out_of_range_ == b.out_of_range_ && a.min() == b.min() &&
         a.max_ == b.max_ && a.sum_ == b.sum_ && a.counts_ == b.counts_;
}

std::string Histogram::Serialize() const {
  std::string out;
  out.reserve(64);
  out.append(kMagic);
  out.push_back(static_cast<char>(kFormatVersion));
  out.push_back(static_cast<char>(BucketLayout::kSubBucketBits));
  out.push_back(static_cast<char>(BucketLayout::kMaxExponent));
  encoding::PutVarint(out, count_);
  encoding::PutVarint(out, out_of_range_);
  if (count_ != 0) {
    encoding::PutVarint(out, min_);
    encoding::PutVarint(out, max_);
    encoding::PutFixed64(out, std::bit_cast<uint64_t>(sum_));
    const int first = BucketLayout::Index(min_);
    const int last = BucketLayout::Index(max_);
    encoding::PutVarint(out, static_cast<uint64_t>(first));
    encoding::PutVarint(out, static_cast<uint64_t>(last));
    // Non-empty buckets as positive counts, runs of empty buckets as negative run lengths.
    int64_t zeros = 0;
    for (int i = first; i <= last; ++i) {
      const uint64_t c = counts_[static_cast<size_t>(i)];
      if (c == 0) {
        ++zeros;
        continue;
      }
      if (zeros != 0) {
        encoding::PutVarint(out, encoding::ZigZag(-zeros));
        zeros = 0;
      }
      // Counts above 2^63 cannot be zigzagged; no histogram gets there (it would take
      // centuries of recording at a billion values a second).
      encoding::PutVarint(out, encoding::ZigZag(static_cast<int64_t>(c)));
    }
  }
  encoding::PutFixed32(out, encoding::Crc32(out));
  return out;
}

absl::StatusOr<Histogram> Histogram::Deserialize(std::string_view bytes) {
  constexpr size_t kHeader = 7;  // magic, version, two layout bytes
  if (bytes.size() < kHeader + 2 + 4) {
    return Corrupt(bytes.size(), Cat("truncated input (", bytes.size(),
                                     " bytes, a histogram takes at least 13)"));
  }
  if (bytes.substr(0, 4) != kMagic) return Corrupt(0, "bad magic (expected \"TGHS\")");
  const uint8_t version = static_cast<uint8_t>(bytes[4]);
  if (version != kFormatVersion) {
    return Corrupt(4, Cat("unsupported format version ", static_cast<int>(version),
                          " (this build reads version ", static_cast<int>(kFormatVersion), ")"));
  }
  if (static_cast<uint8_t>(bytes[5]) != BucketLayout::kSubBucketBits ||
      static_cast<uint8_t>(bytes[6]) != BucketLayout::kMaxExponent) {
    return Corrupt(
        5, Cat("bucket layout ", static_cast<int>(static_cast<uint8_t>(bytes[5])), "/",
               static_cast<int>(static_cast<uint8_t>(bytes[6])), " differs from this build's ",
               BucketLayout::kSubBucketBits, "/", BucketLayout::kMaxExponent));
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  encoding::Reader crc_reader(bytes.substr(bytes.size() - 4));
  if (*crc_reader.Fixed32() != encoding::Crc32(body)) {
    return Corrupt(bytes.size() - 4, "checksum mismatch (the bytes were altered or cut short)");
  }

  encoding::Reader in(body);
  in.Bytes(kHeader);
  Histogram h;
  auto count = in.Varint();
  if (!count) return Corrupt(in.offset(), "malformed total count");
  auto out_of_range = in.Varint();
  if (!out_of_range) return Corrupt(in.offset(), "malformed out-of-range count");
  h.out_of_range_ = *out_of_range;
  if (*count == 0) {
    if (in.remaining() != 0) return Corrupt(in.offset(), "trailing bytes after an empty histogram");
    return h;
  }
  auto min = in.Varint();
  auto max = in.Varint();
  if (!min || !max) return Corrupt(in.offset(), "malformed min or max");
  if (*min > *max || *max > BucketLayout::kMaxValue) {
    return Corrupt(in.offset(),
                   Cat("min ", *min, " and max ", *max, " are out of order or out of range"));
  }
  auto sum_bits = in.Fixed64();
  if (!sum_bits) return Corrupt(in.offset(), "truncated sum");
  const double sum = std::bit_cast<double>(*sum_bits);
  if (!std::isfinite(sum) || std::signbit(sum)) {
    return Corrupt(in.offset() - 8, "sum is not a finite number >= 0");
  }
  // Every value lies in [min, max], so the sum does too, times the count (with room for
  // rounding).
  const double n = static_cast<double>(*count);
  if (sum < n * static_cast<double>(*min) * (1 - 1e-9) ||
      sum > n * static_cast<double>(*max) * (1 + 1e-9)) {
    return Corrupt(in.offset() - 8, "sum is outside count * [min, max]");
  }
  auto first = in.Varint();
  auto last = in.Varint();
  if (!first || !last) return Corrupt(in.offset(), "malformed bucket range");
  if (*first != static_cast<uint64_t>(BucketLayout::Index(*min)) ||
      *last != static_cast<uint64_t>(BucketLayout::Index(*max))) {
    return Corrupt(in.offset(), "bucket range does not match min and max");
  }
  uint64_t total = 0;
  uint64_t i = *first;
  bool after_run = false;
  while (i <= *last) {
    const size_t at = in.offset();
    auto raw = in.Varint();
    if (!raw) return Corrupt(at, Cat("truncated or malformed count for bucket ", i));
    const int64_t v = encoding::UnZigZag(*raw);
    if (v == 0) return Corrupt(at, "zero-length entry");
    if (v < 0) {
      const uint64_t run = static_cast<uint64_t>(-(v + 1)) + 1;  // safe for INT64_MIN
      if (i == *first || run > *last - i) {
        return Corrupt(at, "run of empty buckets at either end of the bucket range");
      }
      // Serialize() writes one run per gap; two in a row would parse to the same histogram
      // but serialize to other bytes.
      if (after_run) return Corrupt(at, "two runs of empty buckets in a row");
      after_run = true;
      i += run;
      continue;
    }
    after_run = false;
    const uint64_t c = static_cast<uint64_t>(v);
    if (total + c < total) return Corrupt(at, "bucket counts overflow");
    total += c;
    h.counts_[i] = c;
    ++i;
  }
  if (in.remaining() != 0) return Corrupt(in.offset(), "trailing bytes after the last bucket");
  if (total != *count) {
    return Corrupt(in.offset(),
                   Cat("bucket counts add up to ", total, " but the header says ", *count));
  }
  h.count_ = *count;
  h.min_ = *min;
  h.max_ = *max;
  h.sum_ = sum;
  return h;
}

}  // namespace tailguard
