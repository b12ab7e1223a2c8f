// Which schedules are active at an instant, read in the configured time zone.
#ifndef TAILGUARD_ALERT_SCHEDULE_H_
#define TAILGUARD_ALERT_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "tailguard/alert.h"

namespace tailguard::alert_internal {

// absl::Time of a WallTime, and back.
absl::Time ToAbsl(WallTime t);
WallTime FromAbsl(absl::Time t);

// True when `s` is active at local weekday `weekday` (Monday = 0) and minute of day `minute`.
bool WeeklyActive(const Schedule& s, int weekday, int minute);

// Answers "which schedules are active at t" as a bit set (bit i: schedules[i]).
// The answer is cached for the UTC minute that holds t, cut at campaign edges, so a tick of
// observations converts to civil time once; weekly periods are whole local minutes, which every
// current IANA zone (whole-minute UTC offsets) keeps aligned with UTC minutes.
// Not thread-safe (it caches); the engine's thread uses it.
class ScheduleClock {
 public:
  // `schedules` must outlive this object. REQUIRES: schedules.size() <= kMaxSchedules.
  ScheduleClock(absl::TimeZone zone, const std::vector<Schedule>& schedules);

  uint64_t ActiveAt(WallTime t);

 private:
  uint64_t Compute(WallTime t) const;

  const absl::TimeZone zone_;
  const std::vector<Schedule>& schedules_;
  bool has_weekly_ = false;
  // Cache: mask_ holds for [lo_, hi_).
  WallTime lo_ = WallTime::max();
  WallTime hi_ = WallTime::min();
  uint64_t mask_ = 0;
};

}  // namespace tailguard::alert_internal

#endif  // TAILGUARD_ALERT_SCHEDULE_H_
