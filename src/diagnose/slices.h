// Slice attribution: which label combination (model version x route x client x input-size
// bucket, ...) explains a rise of a mean, from per-label sums and counts as Prometheus histograms
// carry them (_sum, _count). The core of `tailguard diagnose --slices` and of the live
// diagnosis' slice candidates; no I/O.
//
// The method:
//  1. A leaf is one full label combination. Its mean at T is sum/count of its rows at T; its
//     baseline is the median and IQR of its per-interval means before T (robust.h). It is raised
//     when its robust score at T reaches `min_score` (3, as the ranker's) in the direction of the
//     total's change.
//  2. A candidate slice fixes some dimensions (dim=value&...); it covers the leaves that match.
//     It is scored as a classifier of the raised traffic: precision = the share of its requests
//     at T that are in raised leaves, recall = its share of the raised leaves' excess
//     (count x (mean at T - baseline mean)), score = F1. Ties go to the slice with fewer
//     dimensions: the most general description that fits.
//  3. Slices are named greedily: the best, then the best over the raised leaves not yet
//     covered, while what is left explains at least a tenth of the total excess (less is noise,
//     not a cause to page about).
#ifndef TAILGUARD_DIAGNOSE_SLICES_H_
#define TAILGUARD_DIAGNOSE_SLICES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace tailguard::diagnose {

struct SliceRow {
  int64_t timestamp = 0;
  std::vector<uint32_t> dims;  // value ids, one per dimension (SliceTable::values)
  double sum = 0;
  double count = 0;
};

struct SliceTable {
  std::vector<std::string> dimensions;                          // column names, in file order
  std::vector<std::vector<std::string>> values;                 // per dimension, id -> text
  std::vector<absl::flat_hash_map<std::string, uint32_t>> ids;  // per dimension, text -> id
  std::vector<SliceRow> data;
  size_t rows = 0;  // rows read
};

// Adds a row, interning its dimension values. `dims.size()` must equal dimensions.size().
void AddSliceRow(SliceTable& table, int64_t timestamp, const std::vector<std::string>& dims,
                 double sum, double count);

struct ScoredSlice {
  std::vector<int64_t> key;  // per dimension the value id, or -1 where the slice leaves it free
  double score = 0;          // F1
  double precision = 0;
  double recall = 0;
  double explained = 0;   // the share of the total's excess at T its leaves carry
  bool selected = false;  // named as a cause
};

struct SliceAttribution {
  std::vector<ScoredSlice> slices;  // the named ones first (in naming order), then candidates
  size_t named = 0;
  size_t leaves = 0;         // leaves with requests at T
  size_t raised = 0;         // of which raised
  double baseline_mean = 0;  // the total's sum/count before T
  double at_mean = 0;        // and at T
};

inline constexpr double kSliceMinScore = 3;
// At most this many candidates after the named slices.
inline constexpr size_t kSliceCandidates = 20;

// InvalidArgument when T has no rows, no interval precedes it, the mean did not change at T, or
// there are more than 16 dimensions.
absl::StatusOr<SliceAttribution> AttributeSlices(const SliceTable& table, int64_t at);

// "dim=value&dim2=value2", dims in column order.
std::string SliceName(const SliceTable& table, const ScoredSlice& slice);

// Reads FILE (CSV, gzip or not): timestamp,<dimension columns...>,sum,count. Every bad row is
// reported at once ("FILE:LINE: field: what is wrong").
absl::StatusOr<SliceTable> ReadSliceTable(const std::string& path);
// The same for text already read; `path` names it in messages.
absl::StatusOr<SliceTable> ParseSliceTable(std::string_view text, const std::string& path);

// The output CSV with its header: rank,slice,score,selected,precision,recall,explained.
std::string SliceRows(const SliceTable& table, const SliceAttribution& attribution);

}  // namespace tailguard::diagnose

#endif  // TAILGUARD_DIAGNOSE_SLICES_H_
