// Silences on the alert side: a silence's selector checked before the event store keeps it (the
// store holds it as text), and the store's silences compiled for matching alert labels.
#ifndef TAILGUARD_ALERT_NOTIFY_SILENCES_H_
#define TAILGUARD_ALERT_NOTIFY_SILENCES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "alert/selector.h"
#include "store/event_store.h"
#include "tailguard/alert.h"
#include "tailguard/clock.h"

namespace tailguard::notify {

// Silences compiled for matching: regexes are built once.
// Immutable after Build(); const methods are thread-safe.
class SilenceSet {
 public:
  SilenceSet() = default;

  // InvalidArgument "silence <id>: ..." for a selector that does not parse, has no matcher or a
  // regex that does not compile.
  static absl::StatusOr<SilenceSet> Build(const std::vector<store::Silence>& silences);

  // True when a silence in effect at `t` (starts_at <= t < ends_at) matches every one of its
  // matchers against `labels` (an absent label matches as ""; regexes match whole values).
  bool Matches(LabelSpan labels, WallTime t) const { return MatchingSilence(labels, t) != 0; }
  // The id of the first such silence, or 0.
  int64_t MatchingSilence(LabelSpan labels, WallTime t) const;

  size_t size() const { return silences_.size(); }
  bool empty() const { return silences_.empty(); }

 private:
  struct Compiled {
    int64_t id;
    WallTime starts_at;
    WallTime ends_at;
    alert_internal::SeriesSelector selector;
  };
  std::vector<Compiled> silences_;
};

// Checks `s.matchers` and stores `s` in `store`; returns its id. InvalidArgument "silence
// matchers: ..." when the selector does not parse, has no matcher or a regex that does not
// compile; otherwise as EventStore::AddSilence() (times, created_by, comment).
absl::StatusOr<int64_t> AddSilence(store::EventStore& store, const store::Silence& s);

// The silences of `store` not expired at `now` (including those not started yet), compiled.
absl::StatusOr<SilenceSet> ActiveSilences(store::EventStore& store, WallTime now);

}  // namespace tailguard::notify

#endif  // TAILGUARD_ALERT_NOTIFY_SILENCES_H_
