// Heatmap buckets, rows and their compact form.
#include "metrics/heatmap.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "common/encoding.h"
#include "common/strings.h"

namespace tailguard {
namespace {

constexpr uint8_t kRowVersion = 1;
constexpr uint64_t kMaxTotal = uint64_t{1} << 63;

// edges[k] = 1 us * 2^(k/4) rounded: the upper edge of bucket k.
const std::array<uint64_t, kHeatmapBucketCount>& Edges() {
  static const std::array<uint64_t, kHeatmapBucketCount> edges = [] {
    std::array<uint64_t, kHeatmapBucketCount> e{};
    for (int k = 0; k < kHeatmapBucketCount; ++k) {
      e[static_cast<size_t>(k)] = static_cast<uint64_t>(
          std::llround(static_cast<double>(kHeatmapFirstEdgeNs) *
                       std::exp2(static_cast<double>(k) / kHeatmapBucketsPerDoubling)));
    }
    return e;
  }();
  return edges;
}

}  // namespace

int HeatmapBucketIndex(uint64_t ns) {
  const auto& edges = Edges();
  const auto it = std::upper_bound(edges.begin(), edges.end(), ns);
  return std::min(static_cast<int>(it - edges.begin()), kHeatmapBucketCount - 1);
}

uint64_t HeatmapBucketLowerNs(int i) { return i == 0 ? 0 : Edges()[static_cast<size_t>(i - 1)]; }

uint64_t HeatmapBucketUpperNs(int i) { return Edges()[static_cast<size_t>(i)]; }

HeatmapRow HeatmapRowOf(const Histogram& h) {
  HeatmapRow row;
  h.ForEachBucket([&](int index, uint64_t count) {
    const int b = HeatmapBucketIndex(BucketLayout::Midpoint(index));
    if (!row.empty() && row.back().bucket == b) {
      row.back().count += count;
    } else {
      row.push_back({b, count});
    }
  });
  return row;
}

void AddHeatmapRow(const HeatmapRow& row, std::vector<uint64_t>& dense) {
  if (dense.size() < kHeatmapBucketCount) dense.resize(kHeatmapBucketCount);
  for (const HeatmapCount& c : row) dense[static_cast<size_t>(c.bucket)] += c.count;
}

HeatmapRow SparseHeatmapRow(std::span<const uint64_t> dense) {
  HeatmapRow row;
  for (size_t i = 0; i < dense.size(); ++i) {
    if (dense[i] != 0) row.push_back({static_cast<int>(i), dense[i]});
  }
  return row;
}

std::string EncodeHeatmapRow(const HeatmapRow& row) {
  std::string out;
  out.push_back(static_cast<char>(kRowVersion));
  int previous = -1;
  for (const HeatmapCount& c : row) {
    encoding::PutVarint(out, static_cast<uint64_t>(c.bucket - previous - 1));
    encoding::PutVarint(out, c.count);
    previous = c.bucket;
  }
  return out;
}

absl::StatusOr<HeatmapRow> DecodeHeatmapRow(std::string_view blob) {
  auto bad = [](size_t offset, std::string_view what) {
    return absl::InvalidArgumentError(Cat("heatmap row: ", what, " at byte ", offset));
  };
  if (blob.empty()) return bad(0, "empty (no version byte)");
  if (static_cast<uint8_t>(blob[0]) != kRowVersion) {
    return bad(0, Cat("unknown version ", static_cast<int>(static_cast<uint8_t>(blob[0])),
                      " (this tailguard reads version 1)"));
  }
  encoding::Reader in(blob.substr(1));
  HeatmapRow row;
  int64_t previous = -1;
  uint64_t total = 0;
  while (in.remaining() > 0) {
    const size_t at = in.offset() + 1;
    const std::optional<uint64_t> gap = in.Varint();
    if (!gap) return bad(at, "truncated or malformed bucket gap");
    if (*gap >= kHeatmapBucketCount ||
        previous + 1 + static_cast<int64_t>(*gap) >= static_cast<int64_t>(kHeatmapBucketCount)) {
      return bad(at, Cat("bucket past the last (", kHeatmapBucketCount - 1, ")"));
    }
    const size_t count_at = in.offset() + 1;
    const std::optional<uint64_t> count = in.Varint();
    if (!count) return bad(count_at, "truncated or malformed count");
    if (*count == 0) return bad(count_at, "zero count");
    if (*count > kMaxTotal - total) return bad(count_at, "counts add up past 2^63");
    total += *count;
    previous += 1 + static_cast<int64_t>(*gap);
    row.push_back({static_cast<int>(previous), *count});
  }
  return row;
}

Heatmap MakeHeatmap(std::vector<WallTime> times, std::span<const HeatmapRow> rows) {
  Heatmap out;
  out.times = std::move(times);
  int lo = kHeatmapBucketCount, hi = -1;
  for (const HeatmapRow& r : rows) {
    if (r.empty()) continue;
    lo = std::min(lo, r.front().bucket);
    hi = std::max(hi, r.back().bucket);
  }
  if (hi < 0) return out;
  for (int b = lo; b <= hi; ++b)
    out.bounds.push_back(static_cast<double>(HeatmapBucketLowerNs(b)) * 1e-9);
  out.bounds.push_back(static_cast<double>(HeatmapBucketUpperNs(hi)) * 1e-9);
  for (size_t col = 0; col < rows.size(); ++col) {
    for (const HeatmapCount& c : rows[col]) {
      out.cells.push_back(
          {static_cast<uint32_t>(col), static_cast<uint32_t>(c.bucket - lo), c.count});
    }
  }
  return out;
}

}  // namespace tailguard
