// The canonical series key, written in one place: `metric{a="x",b="y"}`, labels sorted by name,
// values escaped as in Prometheus' text format (\\, \", \n). The registry names its series with
// it, and the alert engine, the store and the dashboard's links find them by it, so every one
// must produce it byte for byte: they all call these.
#ifndef TAILGUARD_METRICS_SERIES_KEY_H_
#define TAILGUARD_METRICS_SERIES_KEY_H_

#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace tailguard::metrics {

using LabelPairs = std::span<const std::pair<std::string, std::string>>;

// Appends `value` to `out` with backslash, double quote and newline escaped.
void AppendLabelValue(std::string& out, std::string_view value);

// `{a="x",b="y"}` in the order given, values escaped; `{}` for none.
std::string FormatLabelSet(LabelPairs labels);

// `metric{a="x",b="y"}` with the labels sorted by name (then value), values escaped. Checks
// nothing: the registry validates names before it builds a key.
std::string SeriesKey(std::string_view metric, LabelPairs labels);

}  // namespace tailguard::metrics

#endif  // TAILGUARD_METRICS_SERIES_KEY_H_
