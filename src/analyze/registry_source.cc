// The live registry as a source of the analyzer.
#include <algorithm>
#include <deque>

#include "absl/container/flat_hash_map.h"
#include "tailguard/analyzer.h"

namespace tailguard {

struct RegistrySource::State {
  struct Counts {
    uint64_t last_total = 0, last_failed = 0;
    std::deque<std::pair<uint64_t, uint64_t>> recent;  // per tick (requests, failed)
  };
  absl::flat_hash_map<const Series*, Counts> by_series;
};

RegistrySource::RegistrySource(Registry& registry, Duration window, ErrorCounts errors)
    : registry_(registry),
      window_(std::max(window, registry.options().windows.slot)),
      errors_(std::move(errors)),
      state_(std::make_unique<State>()) {}

RegistrySource::~RegistrySource() = default;

absl::StatusOr<bool> RegistrySource::Next(Batch& batch) {
  registry_.Collect();
  const WallTime now = registry_.Now();
  const Duration slot = registry_.options().windows.slot;
  const size_t window_ticks = static_cast<size_t>(std::max<int64_t>(1, window_ / slot));
  const double window_seconds = std::chrono::duration<double>(window_).count();
  const std::vector<Series*> all = registry_.AllSeries();
  batch.time = now;
  batch.points.clear();
  batch.points.reserve(all.size());
  for (Series* s : all) {
    SeriesPoint& p = batch.points.emplace_back();
    p.key = s->key();
    p.metric = s->name();
    p.labels = s->labels();
    p.series = s;
    SetStats(s->Window(window_, now), s->unit(), p);
    p.rate = static_cast<double>(p.count) / window_seconds;
    if (!errors_) continue;
    const std::optional<std::pair<uint64_t, uint64_t>> totals = errors_(*s);
    if (!totals) continue;
    State::Counts& c = state_->by_series[s];
    c.recent.emplace_back(totals->first - c.last_total, totals->second - c.last_failed);
    c.last_total = totals->first;
    c.last_failed = totals->second;
    while (c.recent.size() > window_ticks) c.recent.pop_front();
    uint64_t n = 0, f = 0;
    for (const auto& [dn, df] : c.recent) {
      n += dn;
      f += df;
    }
    if (n > 0) p.error_ratio = static_cast<double>(f) / static_cast<double>(n);
  }
  return true;
}

}  // namespace tailguard
