// Recorded series through the one analyzer (tailguard/analyzer.h), shared by `replay` and
// `backtest --rules`.
#ifndef TAILGUARD_APPS_SERIES_REPLAY_H_
#define TAILGUARD_APPS_SERIES_REPLAY_H_

#include <string>
#include <string_view>

#include "tailguard/analyzer.h"

namespace tailguard::cli {

// The labels of a series replayed from `path`: route = the file name without its extension, and
// `stage`. Replayed series are tailguard_request_duration_seconds, as live ones, so the default
// rules and a rule file written for `serve` select them alike.
Labels ReplayLabels(std::string_view path, std::string_view stage = "total");

// The batch of one point of a P99 series (seconds; NaN when missing) at `t`.
Batch P99Batch(const Labels& labels, WallTime t, double p99);

}  // namespace tailguard::cli

#endif  // TAILGUARD_APPS_SERIES_REPLAY_H_
