// Compiled Prometheus-style series selectors: label matchers with their regexes built once.
#ifndef TAILGUARD_ALERT_SELECTOR_H_
#define TAILGUARD_ALERT_SELECTOR_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "metrics/series_key.h"
#include "tailguard/alert.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace tailguard::alert_internal {

// Matches a series (metric name and labels) against every matcher of a selector.
// Immutable after Compile(); const methods are thread-safe.
class SeriesSelector {
 public:
  // InvalidArgument "matcher N (name): ..." for a regex that does not compile (RE2 syntax, as
  // Prometheus), is over kMaxMatcherRegexBytes, or would need more than about 1 MiB compiled.
  static absl::StatusOr<SeriesSelector> Compile(const std::vector<LabelMatcher>& matchers);

  // True when every matcher matches; an absent label matches as "". Regexes must match the
  // whole value. Regexes run on RE2, in time linear in the value's length and with no
  // recursion, so no pattern and no value can make a match slow or deep.
  bool Matches(std::string_view metric, LabelSpan labels) const;

 private:
  struct Compiled {
    LabelMatcher matcher;
    // Immutable once compiled (RE2's const methods are thread-safe); shared by copies.
    std::shared_ptr<const re2::RE2> regex;
  };
  std::vector<Compiled> matchers_;
};

// The value of label `name` among `labels`, or "" when absent.
std::string_view LabelValue(LabelSpan labels, std::string_view name);

// The canonical series key and label-set text live in src/metrics (metrics/series_key.h), once.
using metrics::FormatLabelSet;
using metrics::SeriesKey;

}  // namespace tailguard::alert_internal

#endif  // TAILGUARD_ALERT_SELECTOR_H_
