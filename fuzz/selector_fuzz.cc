// Fuzzes the series selector parser and matcher (the API's match= and every rule's select:):
// the input is a selector, then a NUL, then a label value. Nothing crashes or hangs whatever the
// pattern and the value; an accepted selector compiles or says why; "=" matches exactly its own
// value, and "!=" is its opposite.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "alert/selector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailguard;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::string value(nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1));

  absl::StatusOr<std::vector<LabelMatcher>> matchers = ParseSelector(text);
  if (!matchers.ok()) {
    if (matchers.status().message().empty()) std::abort();
    return 0;
  }
  absl::StatusOr<alert_internal::SeriesSelector> s = alert_internal::SeriesSelector::Compile(*matchers);
  if (!s.ok()) {
    if (s.status().message().empty()) std::abort();
    return 0;
  }
  std::vector<std::pair<std::string, std::string>> labels;
  for (const LabelMatcher& m : *matchers) {
    if (m.name != "__name__") labels.emplace_back(m.name, value);
  }
  (void)s->Matches("metric", labels);

  // Equality against the value itself.
  for (const LabelMatcher::Op op : {LabelMatcher::Op::kEqual, LabelMatcher::Op::kNotEqual}) {
    absl::StatusOr<alert_internal::SeriesSelector> eq =
        alert_internal::SeriesSelector::Compile({{"model", op, value}});
    if (!eq.ok()) std::abort();
    const std::vector<std::pair<std::string, std::string>> l = {{"model", value}};
    if (eq->Matches("m", l) != (op == LabelMatcher::Op::kEqual)) std::abort();
  }
  return 0;
}
