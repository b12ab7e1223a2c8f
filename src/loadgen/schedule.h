// The open-loop schedule: phases of a rate pattern (constant, ramp, steps, bursts) turned into the
// intended send time of every request, deterministically for a given random source.
#ifndef TAILGUARD_LOADGEN_SCHEDULE_H_
#define TAILGUARD_LOADGEN_SCHEDULE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tailguard/clock.h"

namespace tailguard::loadgen {

// How requests are spaced at a given rate.
enum class Distribution {
  kConstant,  // evenly: at rate r, one request every 1/r seconds
  kPoisson,   // a Poisson process: exponential gaps with mean 1/r (bursty like real users)
};

// "constant" or "poisson".
const char* DistributionName(Distribution d);
// Parses DistributionName(); nullopt for anything else.
std::optional<Distribution> ParseDistribution(std::string_view name);

// A stretch of time whose rate goes linearly from `from` to `to` requests per second (equal for a
// constant rate). Rates are >= 0; a rate of 0 is a pause.
struct RateSegment {
  Duration duration{};
  double from = 0;
  double to = 0;
};

// An HTTP header, name and value as sent.
using Header = std::pair<std::string, std::string>;

// What a phase changes in the request; unset fields keep the run's defaults. Headers are added
// to the defaults, replacing those of the same name (case-insensitive).
struct RequestOverrides {
  std::optional<std::string> method;
  std::optional<std::string> path;  // path and query, starting with '/'
  std::optional<std::string> body;
  std::vector<Header> headers;
};

// One phase of a run: a rate pattern over time, how requests are spaced, and what they look like.
struct Phase {
  std::string name;                   // for reports; "phase N" (1-based) when empty
  std::vector<RateSegment> segments;  // the rate over the phase, in order
  Distribution distribution = Distribution::kConstant;
  RequestOverrides request;
  std::string pattern;  // how the rate was written, for reports: "constant 500/s"

  // The sum of the segments' durations.
  Duration duration() const;
  // The number of requests the pattern asks for: the integral of the rate.
  double expected_requests() const;
};

// Rate patterns. Every rate is >= 0 requests per second; durations are > 0.
// `rate` for all of `duration`.
std::vector<RateSegment> ConstantRate(Duration duration, double rate);
// Linearly from `from` to `to` over `duration`.
std::vector<RateSegment> RampRate(Duration duration, double from, double to);
// Each step holds its rate for its duration.
std::vector<RateSegment> StepRates(const std::vector<std::pair<Duration, double>>& steps);
// `base` rate, except that every `every` (starting at the phase's start) the rate is
// `burst_rate` for `length`. REQUIRES: 0 < length <= every.
std::vector<RateSegment> BurstRate(Duration duration, double base, Duration every, Duration length,
                                   double burst_rate);

// A phase at a constant `rate` for `duration`: the common single-phase run.
Phase ConstantPhase(Duration duration, double rate,
                    Distribution distribution = Distribution::kConstant);

// The display name of phase `index` (0-based): its name, or "phase N".
std::string PhaseName(const std::vector<Phase>& phases, size_t index);

// One request of the schedule.
struct ScheduledRequest {
  Duration at{};          // intended send time, from the start of the run
  uint32_t phase = 0;     // index into the phases
  uint64_t sequence = 0;  // 0, 1, 2, ... over the whole run
};

// Generates the intended send times of a run, in order.
//
// The algorithm: the rate over the whole run is a piecewise-linear function r(t), and
// L(t) = integral of r from 0 to t is the number of requests due by t. Request k is sent when L
// reaches its target: the targets are 0, 1, 2, ... for constant spacing (so 500/s for 2 s is
// exactly 1000 requests at 0, 2 ms, 4 ms, ...), and the arrival times of a unit-rate Poisson
// process (cumulative Exp(1) gaps) for Poisson spacing, which by time rescaling gives a Poisson
// process of rate r(t) however the rate changes. Each gap follows the distribution of the phase
// the previous target fell in.
//
// Not thread-safe. Deterministic: the same phases and random source give the same schedule.
class Schedule {
 public:
  // Returns values uniform in [0, 1); called once per request of a Poisson phase.
  using UniformSource = std::function<double()>;

  // REQUIRES: every segment has duration >= 0 and finite rates >= 0.
  Schedule(const std::vector<Phase>& phases, uint64_t seed);
  Schedule(const std::vector<Phase>& phases, UniformSource uniform);

  // The next request, or nullopt once the schedule is over.
  std::optional<ScheduledRequest> Next();

  // The length of the run: the sum of the phases' durations.
  Duration total_duration() const { return total_; }
  // L at the end of the run: the expected number of requests.
  double expected_requests() const { return segments_.empty() ? 0 : segments_.back().lambda_end; }

 private:
  struct Segment {
    int64_t start_ns;
    int64_t length_ns;
    double from, to;  // requests per second
    double lambda_start, lambda_end;
    uint32_t phase;
    Distribution distribution;
  };

  void Init(const std::vector<Phase>& phases);
  double Gap(Distribution d);

  std::vector<Segment> segments_;
  Duration total_{};
  UniformSource uniform_;  // empty: draw from rng_
  std::mt19937_64 rng_;
  size_t segment_ = 0;  // the segment the last target fell in
  double target_ = 0;
  uint64_t sequence_ = 0;
  bool started_ = false;
};

}  // namespace tailguard::loadgen

#endif  // TAILGUARD_LOADGEN_SCHEDULE_H_
