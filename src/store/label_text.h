// Label sets as the store's TEXT columns hold them: Prometheus form, {a="x",b="y"}.
#ifndef TAILGUARD_STORE_LABEL_TEXT_H_
#define TAILGUARD_STORE_LABEL_TEXT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "metrics/series_key.h"
#include "tailguard/registry.h"

namespace tailguard::store {

// `{a="x",b="y"}` in the given order, values escaped (metrics::FormatLabelSet).
std::string EncodeLabels(metrics::LabelPairs labels);
// The inverse; DataLoss naming the text for anything else.
absl::StatusOr<Labels> DecodeLabels(std::string_view text);

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_LABEL_TEXT_H_
