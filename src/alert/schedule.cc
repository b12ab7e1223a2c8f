// Schedule evaluation in a time zone, cached per minute.
#include "alert/schedule.h"

namespace tailguard::alert_internal {

absl::Time ToAbsl(WallTime t) { return absl::FromUnixNanos(t.time_since_epoch().count()); }

WallTime FromAbsl(absl::Time t) { return WallTime(Duration(absl::ToUnixNanos(t))); }

bool WeeklyActive(const Schedule& s, int weekday, int minute) {
  const auto on = [&](int day) { return (s.days >> day & 1) != 0; };
  if (s.start_minute < s.end_minute) {
    return on(weekday) && minute >= s.start_minute && minute < s.end_minute;
  }
  // Wraps past midnight: the evening of a listed day, or the early hours after one.
  return (on(weekday) && minute >= s.start_minute) ||
         (on((weekday + 6) % 7) && minute < s.end_minute);
}

ScheduleClock::ScheduleClock(absl::TimeZone zone, const std::vector<Schedule>& schedules)
    : zone_(zone), schedules_(schedules) {
  for (const Schedule& s : schedules_) has_weekly_ |= s.kind == Schedule::Kind::kWeekly;
}

uint64_t ScheduleClock::ActiveAt(WallTime t) {
  if (t >= lo_ && t < hi_) return mask_;
  mask_ = Compute(t);
  // The minute that holds t, cut at any campaign edge inside it.
  const Duration minute = std::chrono::minutes(1);
  Duration since_epoch = t.time_since_epoch();
  Duration floor = since_epoch - ((since_epoch % minute) + minute) % minute;
  lo_ = WallTime(floor);
  hi_ = lo_ + minute;
  for (const Schedule& s : schedules_) {
    if (s.kind != Schedule::Kind::kWindow) continue;
    for (WallTime edge : {s.from, s.to}) {
      if (edge > lo_ && edge <= t) lo_ = edge;
      if (edge > t && edge < hi_) hi_ = edge;
    }
  }
  return mask_;
}

uint64_t ScheduleClock::Compute(WallTime t) const {
  int weekday = 0;
  int minute = 0;
  if (has_weekly_) {
    const absl::CivilSecond local = zone_.At(ToAbsl(t)).cs;
    weekday = static_cast<int>(absl::GetWeekday(absl::CivilDay(local)));
    minute = local.hour() * 60 + local.minute();
  }
  uint64_t mask = 0;
  for (size_t i = 0; i < schedules_.size(); ++i) {
    const Schedule& s = schedules_[i];
    const bool active = s.kind == Schedule::Kind::kWindow ? (t >= s.from && t < s.to)
                                                          : WeeklyActive(s, weekday, minute);
    if (active) mask |= uint64_t{1} << i;
  }
  return mask;
}

}  // namespace tailguard::alert_internal
