// Time source for everything in tailguard: a real clock for production and a fake clock that
// tests (and offline replay) advance by hand, so nothing depends on wall time or sleeps.
#ifndef TAILGUARD_CLOCK_H_
#define TAILGUARD_CLOCK_H_

#include <atomic>
#include <chrono>

namespace tailguard {

// Durations are std::chrono; latencies are integer nanoseconds.
using Duration = std::chrono::nanoseconds;
// A monotonic instant, for measuring latencies.
using MonoTime = std::chrono::steady_clock::time_point;
// A calendar instant, for slot alignment, history and reports.
using WallTime = std::chrono::time_point<std::chrono::system_clock, std::chrono::nanoseconds>;

// A source of monotonic and wall-clock time.
// Thread-safe: implementations may be called from any thread.
class Clock {
 public:
  virtual ~Clock() = default;

  // Monotonic time; never goes backwards. Used for latencies.
  virtual MonoTime MonotonicNow() const = 0;

  // Wall-clock time (UTC). Used to align window slots and to stamp events.
  virtual WallTime WallNow() const = 0;

  // The process-wide real clock (std::chrono::steady_clock and system_clock). Never null.
  static const Clock& Real();
};

// A clock that only moves when told to. Both readings advance together.
// Thread-safe: Advance() may race with readers; each reading is consistent on its own.
class FakeClock final : public Clock {
 public:
  // Starts at `wall_start` (default 2026-01-01T00:00:00Z) and at monotonic time 1 s.
  explicit FakeClock(WallTime wall_start = DefaultStart());

  MonoTime MonotonicNow() const override;
  WallTime WallNow() const override;

  // Moves both readings forward by `d`. REQUIRES: d >= 0.
  void Advance(Duration d);

  static WallTime DefaultStart();

 private:
  // Atomic so a test thread can advance time while workers read it; relaxed is enough because
  // the clock carries no other data.
  std::atomic<int64_t> elapsed_ns_{0};
  const WallTime wall_start_;
};

}  // namespace tailguard

#endif  // TAILGUARD_CLOCK_H_
