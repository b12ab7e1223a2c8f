// Schedule generation: see schedule.h for the algorithm.
#include "loadgen/schedule.h"

#include <algorithm>
#include <cmath>

#include "common/strings.h"

namespace tailguard::loadgen {

const char* DistributionName(Distribution d) {
  return d == Distribution::kPoisson ? "poisson" : "constant";
}

std::optional<Distribution> ParseDistribution(std::string_view name) {
  if (name == "constant") return Distribution::kConstant;
  if (name == "poisson") return Distribution::kPoisson;
  return std::nullopt;
}

Duration Phase::duration() const {
  Duration d{};
  for (const RateSegment& s : segments) d += s.duration;
  return d;
}

double Phase::expected_requests() const {
  double n = 0;
  for (const RateSegment& s : segments) {
    n += (s.from + s.to) / 2 * std::chrono::duration<double>(s.duration).count();
  }
  return n;
}

std::vector<RateSegment> ConstantRate(Duration duration, double rate) {
  return {{duration, rate, rate}};
}

std::vector<RateSegment> RampRate(Duration duration, double from, double to) {
  return {{duration, from, to}};
}

std::vector<RateSegment> StepRates(const std::vector<std::pair<Duration, double>>& steps) {
  std::vector<RateSegment> out;
  for (const auto& [d, r] : steps) out.push_back({d, r, r});
  return out;
}

std::vector<RateSegment> BurstRate(Duration duration, double base, Duration every, Duration length,
                                   double burst_rate) {
  std::vector<RateSegment> out;
  if (every <= Duration::zero() || length <= Duration::zero()) return ConstantRate(duration, base);
  for (Duration t{}; t < duration; t += every) {
    const Duration burst = std::min(length, duration - t);
    out.push_back({burst, burst_rate, burst_rate});
    const Duration rest = std::min(every - length, duration - t - burst);
    if (rest > Duration::zero()) out.push_back({rest, base, base});
  }
  return out;
}

Phase ConstantPhase(Duration duration, double rate, Distribution distribution) {
  Phase p;
  p.segments = ConstantRate(duration, rate);
  p.distribution = distribution;
  p.pattern = Cat(DistributionName(distribution), ' ', rate, "/s");
  return p;
}

std::string PhaseName(const std::vector<Phase>& phases, size_t index) {
  if (index < phases.size() && !phases[index].name.empty()) return phases[index].name;
  return Cat("phase ", index + 1);
}

Schedule::Schedule(const std::vector<Phase>& phases, uint64_t seed) : rng_(seed) { Init(phases); }

Schedule::Schedule(const std::vector<Phase>& phases, UniformSource uniform)
    : uniform_(std::move(uniform)) {
  Init(phases);
}

void Schedule::Init(const std::vector<Phase>& phases) {
  int64_t start = 0;
  double lambda = 0;
  for (size_t p = 0; p < phases.size(); ++p) {
    for (const RateSegment& s : phases[p].segments) {
      const int64_t length = s.duration.count();
      if (length <= 0) continue;
      double end = lambda + (s.from + s.to) / 2 * static_cast<double>(length) * 1e-9;
      // Snap to a whole number of requests when rounding left it a hair off (0.1 s at 1000/s),
      // so that 100 requests are asked for and not 100.00000000000001 (which would add one).
      if (const double whole = std::round(end);
          std::fabs(end - whole) < 1e-9 * std::max(1.0, whole)) {
        end = whole;
      }
      segments_.push_back({start, length, s.from, s.to, lambda, end, static_cast<uint32_t>(p),
                           phases[p].distribution});
      start += length;
      lambda = end;
    }
  }
  total_ = Duration(start);
}

double Schedule::Gap(Distribution d) {
  if (d == Distribution::kConstant) return 1.0;
  // Exp(1) by inversion; 1 - u is in (0, 1], so the log is finite.
  // The seeded generator unless a source was given (a lambda over rng_ would dangle once the
  // Schedule is moved).
  const double u = std::clamp(
      uniform_ ? uniform_() : std::uniform_real_distribution<double>(0.0, 1.0)(rng_), 0.0, 1.0);
  return -std::log1p(-std::min(u, 1.0 - 1e-16));
}

std::optional<ScheduledRequest> Schedule::Next() {
  if (segments_.empty()) return std::nullopt;
  if (!started_) {
    started_ = true;
    // The first target: 0 for constant spacing (the first request goes out at once), one
    // Exp(1) gap for a Poisson process.
    target_ =
        segments_[0].distribution == Distribution::kConstant ? 0.0 : Gap(segments_[0].distribution);
  } else {
    target_ += Gap(segments_[segment_].distribution);
  }
  // The segment where L passes the target: lambda_start <= target < lambda_end. Segments of
  // rate 0 have lambda_start == lambda_end and are skipped.
  while (segment_ < segments_.size() && !(target_ < segments_[segment_].lambda_end)) ++segment_;
  if (segment_ == segments_.size()) {
    segment_ = segments_.size() - 1;
    return std::nullopt;
  }
  const Segment& s = segments_[segment_];
  // Solve lambda_start + from*u + (to - from)*u^2/(2 L) = target for u in seconds; written as
  // u = 2c / (b + sqrt(b^2 + 4ac)), which is stable for a ramp up, down or flat.
  const double c = std::max(0.0, target_ - s.lambda_start);
  const double length_s = static_cast<double>(s.length_ns) * 1e-9;
  const double a = (s.to - s.from) / (2 * length_s);
  const double b = s.from;
  const double disc = std::max(0.0, b * b + 4 * a * c);
  const double denom = b + std::sqrt(disc);
  const double u = denom > 0 ? 2 * c / denom : 0.0;
  const int64_t offset =
      std::clamp<int64_t>(std::llround(u * 1e9), 0, std::max<int64_t>(s.length_ns - 1, 0));
  return ScheduledRequest{Duration(s.start_ns + offset), s.phase, sequence_++};
}

}  // namespace tailguard::loadgen
