// Durations as people write them in configuration files and on the command line.
#ifndef TAILGUARD_COMMON_DURATION_H_
#define TAILGUARD_COMMON_DURATION_H_

#include <optional>
#include <string_view>

#include "tailguard/clock.h"

namespace tailguard {

// A Prometheus-style duration: "0", "300ms", "30s", "1.5m", "1h30m"; units ns, us, ms, s, m,
// h, d, w. nullopt when malformed, negative or over a century.
std::optional<Duration> ParseDurationText(std::string_view text);

// Seconds per unit of a latency value: "ns", "us", "ms" or "s"; nullopt for anything else.
std::optional<double> LatencyUnitSeconds(std::string_view unit);

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_DURATION_H_
