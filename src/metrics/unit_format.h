// A value of a series in its unit, for a person (the CLI, the timeline): "12.3ms", "4.00KiB",
// "512".
#ifndef TAILGUARD_METRICS_UNIT_FORMAT_H_
#define TAILGUARD_METRICS_UNIT_FORMAT_H_

#include <string>

#include "tailguard/registry.h"

namespace tailguard::metrics {

// `value` as a series of `unit` gives it out (seconds for a latency: UnitScale): FormatDuration,
// FormatBytes or FormatCount of common/format.h. "NaN" stays "NaN".
std::string FormatInUnit(double value, Unit unit);

}  // namespace tailguard::metrics

#endif  // TAILGUARD_METRICS_UNIT_FORMAT_H_
