// Fuzzes DecodeHeatmapRow: arbitrary bytes never crash it, and whatever it accepts is a valid row
// (ascending buckets in range, non-zero counts) that encodes back to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "metrics/heatmap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tailguard::HeatmapRow> row = tailguard::DecodeHeatmapRow(bytes);
  if (!row.ok()) return 0;
  int previous = -1;
  for (const tailguard::HeatmapCount& c : *row) {
    if (c.bucket <= previous || c.bucket >= tailguard::kHeatmapBucketCount || c.count == 0) {
      std::abort();
    }
    previous = c.bucket;
  }
  if (tailguard::EncodeHeatmapRow(*row) != bytes) std::abort();
  const tailguard::Heatmap h = tailguard::MakeHeatmap({tailguard::WallTime{}}, {&*row, 1});
  if (!row->empty() &&
      h.bounds.size() != static_cast<size_t>(row->back().bucket - row->front().bucket + 2)) {
    std::abort();
  }
  return 0;
}
