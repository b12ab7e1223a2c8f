// Recorded series through the analyzer.
#include "series_replay.h"

#include <algorithm>
#include <filesystem>

#include "metrics/series_key.h"

namespace tailguard::cli {

Labels ReplayLabels(std::string_view path, std::string_view stage) {
  Labels l = {{"route", std::filesystem::path(path).stem().string()},
              {"stage", std::string(stage)}};
  std::sort(l.begin(), l.end());
  return l;
}

Batch P99Batch(const Labels& labels, WallTime t, double p99) {
  Batch b;
  b.time = t;
  SeriesPoint& p = b.points.emplace_back();
  p.metric = std::string(kRequestDurationMetric);
  p.labels = labels;
  p.key = metrics::SeriesKey(p.metric, p.labels);
  p.p99 = p99;
  return b;
}

}  // namespace tailguard::cli
