// Helpers shared by the alert tests: fixed instants, observations and event filters.
#ifndef TAILGUARD_TESTS_ALERT_ALERT_TEST_UTIL_H_
#define TAILGUARD_TESTS_ALERT_ALERT_TEST_UTIL_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "tailguard/alert.h"

namespace tailguard::alert_test {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

inline constexpr std::string_view kMetric = "tailguard_request_duration_seconds";

// Wednesday 2025-11-05 00:00:00 UTC.
inline WallTime T0() { return WallTime(seconds(1762300800)); }

// The instant of a civil time in `zone` (e.g. "Asia/Shanghai").
inline WallTime Local(const char* zone, int y, int mo, int d, int h, int mi, int s = 0) {
  absl::TimeZone tz;
  if (!absl::LoadTimeZone(zone, &tz)) std::abort();
  const absl::Time t = absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), tz);
  return WallTime(std::chrono::nanoseconds(absl::ToUnixNanos(t)));
}

// An observation of P99 `p99` seconds against baseline `baseline` (NaN: unknown).
inline Observation P99(WallTime t, const Labels& labels, double p99, double baseline = 0.100) {
  Observation o;
  o.time = t;
  o.metric = kMetric;
  o.labels = labels;
  o.p99 = p99;
  o.baseline_p99 = baseline;
  return o;
}

inline std::vector<AlertEventKind> Kinds(const std::vector<AlertEvent>& events) {
  std::vector<AlertEventKind> out;
  for (const AlertEvent& e : events) out.push_back(e.kind);
  return out;
}

inline int CountKind(const std::vector<AlertEvent>& events, AlertEventKind kind) {
  int n = 0;
  for (const AlertEvent& e : events) n += e.kind == kind;
  return n;
}

}  // namespace tailguard::alert_test

#endif  // TAILGUARD_TESTS_ALERT_ALERT_TEST_UTIL_H_
