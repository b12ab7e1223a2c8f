// Prometheus text exposition (format 0.0.4) of a Registry's series: what the gateway serves at
// /metrics, and what an embedding server serves at its own:
//
//   std::string page = tailguard::PrometheusText(registry);  // Content-Type: text/plain;
//   version=0.0.4
#ifndef TAILGUARD_EXPOSITION_H_
#define TAILGUARD_EXPOSITION_H_

#include <span>
#include <string>
#include <vector>

#include "tailguard/registry.h"

namespace tailguard {

// The default `le` boundaries in seconds: 1-2.5-5 steps from 100 us to 60 s. Fine enough that
// histogram_quantile() over them lands within a step of tailguard's own quantiles.
std::span<const double> DefaultExpositionBuckets();
// The `le` boundaries of value histograms (bytes, counts): powers of 4 from 1 to 4^15.
std::span<const double> DefaultValueBuckets();

// A sample value as the text formats write it: the shortest text that reads back the same,
// without an exponent between 1e-4 and 1e15 ("0.00025", "60", "1e-05"); "NaN", "+Inf", "-Inf".
std::string FormatSampleValue(double v);

// Appends every series of `registry` to `out`: for each metric name one `# HELP` and one
// `# TYPE` line, then per series (sorted by key) its samples. A histogram gives the cumulative
// `<name>_bucket{...,le="..."}` lines ending with le="+Inf", `<name>_sum` and `<name>_count`;
// latencies on `le_seconds` with the sum in seconds, value histograms on DefaultValueBuckets()
// with the sum in their unit. Histograms with nothing collected yet are left out. A gauge gives
// `<name>{...} <level>`, its current level (in seconds for a gauge of nanoseconds). Values come
// from each series' cumulative histogram (what collections have moved in), so counters never go
// down. A value is counted under the first boundary at or above its bucket's upper edge, so a count
// can sit one 1 % bucket higher than the exact value. REQUIRES: `le_seconds` ascending and
// positive.
void AppendPrometheusText(const Registry& registry, std::span<const double> le_seconds,
                          std::string& out);

// The whole page with the default boundaries.
std::string PrometheusText(const Registry& registry);

}  // namespace tailguard

#endif  // TAILGUARD_EXPOSITION_H_
