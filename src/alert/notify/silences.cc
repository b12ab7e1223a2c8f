#include "alert/notify/silences.h"

#include <string_view>
#include <utility>

#include "common/strings.h"

namespace tailguard::notify {
namespace {

// A silence's selector, compiled: at least one matcher, so that no silence mutes everything.
absl::StatusOr<alert_internal::SeriesSelector> CompileSilence(std::string_view matchers) {
  absl::StatusOr<std::vector<LabelMatcher>> parsed = ParseSelector(matchers);
  if (!parsed.ok()) return parsed.status();
  if (parsed->empty()) {
    return absl::InvalidArgumentError(
        Cat("selector \"", matchers, "\" has no matcher: a silence must not mute everything"));
  }
  return alert_internal::SeriesSelector::Compile(*parsed);
}

}  // namespace

absl::StatusOr<SilenceSet> SilenceSet::Build(const std::vector<store::Silence>& silences) {
  SilenceSet set;
  for (const store::Silence& s : silences) {
    absl::StatusOr<alert_internal::SeriesSelector> selector = CompileSilence(s.matchers);
    if (!selector.ok()) {
      return absl::InvalidArgumentError(Cat("silence ", s.id, ": ", selector.status().message()));
    }
    set.silences_.push_back({s.id, s.starts_at, s.ends_at, *std::move(selector)});
  }
  return set;
}

int64_t SilenceSet::MatchingSilence(LabelSpan labels, WallTime t) const {
  // "__name__" matchers compare with a __name__ label, if the alert has one.
  std::string_view name = alert_internal::LabelValue(labels, "__name__");
  for (const Compiled& c : silences_) {
    if (c.starts_at <= t && t < c.ends_at && c.selector.Matches(name, labels)) return c.id;
  }
  return 0;
}

absl::StatusOr<int64_t> AddSilence(store::EventStore& store, const store::Silence& s) {
  absl::StatusOr<alert_internal::SeriesSelector> selector = CompileSilence(s.matchers);
  if (!selector.ok()) {
    return absl::InvalidArgumentError(Cat("silence matchers: ", selector.status().message()));
  }
  return store.AddSilence(s);
}

absl::StatusOr<SilenceSet> ActiveSilences(store::EventStore& store, WallTime now) {
  absl::StatusOr<std::vector<store::Silence>> silences =
      store.ListSilences(now, /*include_expired=*/false);
  if (!silences.ok()) return silences.status();
  return SilenceSet::Build(*silences);
}

}  // namespace tailguard::notify
