// The load generator's report: the latency spectrum measured from intended send times, achieved
// against intended rate, send lag, errors by kind and drops; as a table or as JSON.
#ifndef TAILGUARD_LOADGEN_REPORT_H_
#define TAILGUARD_LOADGEN_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "loadgen/dispatcher.h"
#include "tailguard/clock.h"
#include "tailguard/histogram.h"

namespace tailguard::loadgen {

// The value at quantile `q` in [0, 1] of `h`: the bucket holding the ceil(q * count)-th value,
// interpolated linearly by rank inside that bucket (as if its values were spread evenly over
// the bucket, narrowed to [min, max]). Within the bucket's width (1/64 of its value) of the true
// quantile, like Histogram::Quantile(), and closer when many values share the bucket: a narrow
// distribution (a fixed 20 ms delay) falls in one or two buckets 262 us wide, where reporting
// the midpoint alone would be off by up to 0.65 %. 0 for an empty histogram.
uint64_t InterpolatedQuantile(const Histogram& h, double q);

// Percentiles of a latency histogram, in nanoseconds, by InterpolatedQuantile() (each within 1 %
// of the true value, the histogram's resolution). All zero when the histogram is empty.
struct LatencySummary {
  uint64_t count = 0;
  uint64_t min_ns = 0;
  uint64_t p50_ns = 0;
  uint64_t p75_ns = 0;
  uint64_t p90_ns = 0;
  uint64_t p95_ns = 0;
  uint64_t p99_ns = 0;
  uint64_t p999_ns = 0;
  uint64_t p9999_ns = 0;
  uint64_t max_ns = 0;
  double mean_ns = 0;

  static LatencySummary Of(const Histogram& h);
};

// One phase of the run.
struct PhaseReport {
  std::string name;
  std::string pattern;       // "constant 500/s"
  Duration duration{};       // planned
  double intended_rate = 0;  // the pattern's requests / duration
  double achieved_rate = 0;  // requests sent / duration
  Counts counts;
  LatencySummary latency;
};

// The result of a run.
struct Report {
  std::string target;  // the URL
  int connections = 0;
  Duration timeout{};
  Duration planned_duration{};   // the schedule's length
  Duration elapsed{};            // from the start to the end of the last request
  double expected_requests = 0;  // what the schedule asks for
  double intended_rate = 0;      // expected_requests / planned_duration
  // Requests sent per second, over the planned duration or, when sends fell behind, up to the
  // last send.
  double achieved_rate = 0;
  double throughput = 0;  // completed requests per second of elapsed time
  Counts counts;
  uint64_t abandoned = 0;  // in flight or queued when the run was stopped
  bool stopped = false;    // Stop() ended the run early
  Histogram latency;       // from intended send time to the end: responses and timeouts
  Histogram send_lag;      // actual minus intended send time, of every request sent
  LatencySummary latency_summary;
  LatencySummary send_lag_summary;
  std::vector<PhaseReport> phases;
};

// The report as a table for people.
std::string FormatReportText(const Report& report);

// The report as one JSON object (docs/loadgen.md lists the fields); latencies in seconds.
std::string FormatReportJson(const Report& report);

}  // namespace tailguard::loadgen

#endif  // TAILGUARD_LOADGEN_REPORT_H_
