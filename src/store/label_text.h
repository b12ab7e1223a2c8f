// Label sets as the store's TEXT columns hold them: Prometheus form, {a="x",b="y"}.
#ifndef TAILGUARD_STORE_LABEL_TEXT_H_
#define TAILGUARD_STORE_LABEL_TEXT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "tailguard/alert.h"

namespace tailguard::store {

// `{a="x",b="y"}` in the given order, values escaped (selector.h's FormatLabelSet).
std::string EncodeLabels(LabelSpan labels);
// The inverse; DataLoss naming the text for anything else.
absl::StatusOr<Labels> DecodeLabels(std::string_view text);

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_LABEL_TEXT_H_
