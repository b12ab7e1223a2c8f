// Real and fake clocks.
#include "tailguard/clock.h"

namespace tailguard {
namespace {

class RealClock final : public Clock {
 public:
  MonoTime MonotonicNow() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
};

}  // namespace

const Clock& Clock::Real() {
  static const RealClock* const kClock = new RealClock();
  return *kClock;
}

FakeClock::FakeClock(WallTime wall_start) : wall_start_(wall_start) {}

WallTime FakeClock::DefaultStart() {
  // 2026-01-01T00:00:00Z, a Thursday.
  return WallTime(std::chrono::seconds(1767225600));
}

MonoTime FakeClock::MonotonicNow() const {
  return MonoTime(std::chrono::seconds(1) + Duration(elapsed_ns_.load(std::memory_order_relaxed)));
}

WallTime FakeClock::WallNow() const {
  return wall_start_ + Duration(elapsed_ns_.load(std::memory_order_relaxed));
}

void FakeClock::Advance(Duration d) { elapsed_ns_.fetch_add(d.count(), std::memory_order_relaxed); }

}  // namespace tailguard
