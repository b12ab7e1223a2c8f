#include "diagnose/slices.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "diagnose/robust.h"

namespace tailguard::diagnose {

void AddSliceRow(SliceTable& table, int64_t timestamp, const std::vector<std::string>& dims,
                 double sum, double count) {
  if (table.values.size() < table.dimensions.size()) {
    table.values.resize(table.dimensions.size());
    table.ids.resize(table.dimensions.size());
  }
  SliceRow row;
  row.timestamp = timestamp;
  row.sum = sum;
  row.count = count;
  row.dims.reserve(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<std::string>& vs = table.values[d];
    auto [it, added] = table.ids[d].emplace(dims[d], static_cast<uint32_t>(vs.size()));
    if (added) vs.push_back(dims[d]);
    row.dims.push_back(it->second);
  }
  table.data.push_back(std::move(row));
}

namespace {

struct Leaf {
  std::map<int64_t, std::pair<double, double>> before;  // interval -> (sum, count)
  double sum_at = 0;
  double count_at = 0;
  double excess = 0;  // count_at * (mean at T - baseline mean), in the total's direction
  bool raised = false;
};

struct Tally {
  double count = 0;
  double raised_count = 0;
  double raised_excess = 0;
};

using Key = std::vector<int64_t>;

Key Project(const std::vector<uint32_t>& dims, uint32_t mask) {
  Key k(dims.size(), -1);
  for (size_t d = 0; d < dims.size(); ++d) {
    if (mask & (1u << d)) k[d] = dims[d];
  }
  return k;
}

size_t FixedDims(const Key& k) {
  return static_cast<size_t>(std::count_if(k.begin(), k.end(), [](int64_t v) { return v >= 0; }));
}

}  // namespace

absl::StatusOr<SliceAttribution> AttributeSlices(const SliceTable& table, int64_t at) {
  const size_t nd = table.dimensions.size();
  if (nd == 0) return absl::InvalidArgumentError("no dimension columns between timestamp and sum");
  if (nd > 16) {
    return absl::InvalidArgumentError(
        Cat(nd, " dimension columns; at most 16 (2^16 slices per leaf)"));
  }
  std::map<std::vector<uint32_t>, Leaf> leaves;
  double sum_b = 0, count_b = 0, sum_t = 0, count_t = 0;
  bool any_before = false;
  for (const SliceRow& r : table.data) {
    if (r.timestamp > at) continue;
    Leaf& leaf = leaves[r.dims];
    if (r.timestamp == at) {
      leaf.sum_at += r.sum;
      leaf.count_at += r.count;
      sum_t += r.sum;
      count_t += r.count;
    } else {
      auto& [s, c] = leaf.before[r.timestamp];
      s += r.sum;
      c += r.count;
      sum_b += r.sum;
      count_b += r.count;
      any_before = true;
    }
  }
  if (!(count_t > 0)) return absl::InvalidArgumentError(Cat("no requests at --at ", at));
  if (!any_before || !(count_b > 0)) {
    return absl::InvalidArgumentError(
        Cat("no interval with requests before --at ", at, " to compare with"));
  }
  SliceAttribution out;
  out.baseline_mean = sum_b / count_b;
  out.at_mean = sum_t / count_t;
  const double dir = out.at_mean > out.baseline_mean ? 1 : -1;
  if (out.at_mean == out.baseline_mean) {
    return absl::InvalidArgumentError(
        Cat("sum/count is ", out.at_mean, " both at ", at, " and before it: nothing to explain"));
  }

  double total_excess = 0;
  for (auto& [dims, leaf] : leaves) {
    if (!(leaf.count_at > 0)) continue;
    ++out.leaves;
    const double mean_at = leaf.sum_at / leaf.count_at;
    std::vector<double> means;
    for (const auto& [t, sc] : leaf.before) {
      if (sc.second > 0) means.push_back(sc.first / sc.second);
    }
    // A leaf new at T has no history of its own: it is compared with the total's baseline.
    Baseline b = means.empty() ? Baseline{} : DescribeBaseline(means, {mean_at});
    const double base_mean = means.empty() ? out.baseline_mean : b.median;
    double z;
    if (means.empty() || !(b.scale > 0)) {
      // No spread to measure against: any move in the total's direction counts.
      z = dir * (mean_at - base_mean) > 0 ? kSliceMinScore : 0;
    } else {
      z = dir * RobustScore(b, mean_at);
    }
    leaf.raised = z >= kSliceMinScore;
    leaf.excess = leaf.count_at * dir * (mean_at - base_mean);
    if (leaf.raised && leaf.excess > 0) {
      ++out.raised;
      total_excess += leaf.excess;
    } else {
      leaf.raised = false;
    }
  }

  std::vector<ScoredSlice> named;
  std::vector<ScoredSlice> candidates;
  std::map<std::vector<uint32_t>, bool> covered;
  const uint32_t masks = (1u << nd) - 1;
  double left = total_excess;
  while (left > 0 && left >= 0.1 * total_excess) {
    // Tally every slice that holds an uncovered raised leaf.
    std::map<Key, Tally> tally;
    for (const auto& [dims, leaf] : leaves) {
      if (!leaf.raised || covered.count(dims)) continue;
      for (uint32_t m = 1; m <= masks; ++m) tally[Project(dims, m)];
    }
    if (tally.empty()) break;
    for (const auto& [dims, leaf] : leaves) {
      if (!(leaf.count_at > 0)) continue;
      const bool live = leaf.raised && !covered.count(dims);
      for (uint32_t m = 1; m <= masks; ++m) {
        auto it = tally.find(Project(dims, m));
        if (it == tally.end()) continue;
        it->second.count += leaf.count_at;
        if (live) {
          it->second.raised_count += leaf.count_at;
          it->second.raised_excess += leaf.excess;
        }
      }
    }
    std::vector<ScoredSlice> round;
    for (const auto& [key, t] : tally) {
      ScoredSlice s;
      s.key = key;
      s.precision = t.count > 0 ? t.raised_count / t.count : 0;
      s.recall = left > 0 ? t.raised_excess / left : 0;
      s.score =
          s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall) : 0;
      s.explained = total_excess > 0 ? t.raised_excess / total_excess : 0;
      round.push_back(std::move(s));
    }
    std::sort(round.begin(), round.end(), [](const ScoredSlice& a, const ScoredSlice& b) {
      if (a.score != b.score) return a.score > b.score;
      const size_t fa = FixedDims(a.key), fb = FixedDims(b.key);
      if (fa != fb) return fa < fb;
      return a.key < b.key;
    });
    ScoredSlice best = round.front();
    best.selected = true;
    if (named.empty()) {
      for (size_t i = 1; i < round.size() && candidates.size() < kSliceCandidates; ++i) {
        candidates.push_back(round[i]);
      }
    }
    double took = 0;
    for (const auto& [dims, leaf] : leaves) {
      if (!leaf.raised || covered.count(dims)) continue;
      const Key& k = best.key;
      bool in = true;
      for (size_t d = 0; d < nd && in; ++d) in = k[d] < 0 || k[d] == dims[d];
      if (in) {
        covered[dims] = true;
        took += leaf.excess;
      }
    }
    named.push_back(std::move(best));
    left -= took;
    if (took <= 0) break;
  }
  out.named = named.size();
  out.slices = std::move(named);
  for (ScoredSlice& c : candidates) {
    const bool dup = std::any_of(out.slices.begin(), out.slices.end(),
                                 [&](const ScoredSlice& s) { return s.key == c.key; });
    if (!dup) out.slices.push_back(std::move(c));
  }
  return out;
}

std::string SliceName(const SliceTable& table, const ScoredSlice& slice) {
  std::string out;
  for (size_t d = 0; d < slice.key.size(); ++d) {
    if (slice.key[d] < 0) continue;
    if (!out.empty()) out += '&';
    out += table.dimensions[d];
    out += '=';
    out += table.values[d][static_cast<size_t>(slice.key[d])];
  }
  return out;
}

}  // namespace tailguard::diagnose
