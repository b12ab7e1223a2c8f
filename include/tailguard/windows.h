// Sliding windows: a ring of 1 s slot histograms merged into 10 s, 1 min, 5 min and 1 h windows.
#ifndef TAILGUARD_WINDOWS_H_
#define TAILGUARD_WINDOWS_H_

#include <memory>

#include "tailguard/clock.h"
#include "tailguard/histogram.h"

namespace tailguard {

struct WindowOptions {
  // Length of one slot: the resolution of every window. Default 1 s.
  Duration slot = std::chrono::seconds(1);
  // Number of recent slots kept one by one. Windows up to fine_slots * slot long are exact to the
  // slot. Default 300 (5 minutes at 1 s).
  int fine_slots = 300;
  // Older data is kept in coarse slots of this many fine slots each. Default 60 (1 minute).
  int coarse_factor = 60;
  // Number of coarse slots kept. Default 60 (1 hour at 1 minute).
  int coarse_slots = 60;
};

// The standard windows that the analysis reads.
inline constexpr Duration kWindow10s = std::chrono::seconds(10);
inline constexpr Duration kWindow1m = std::chrono::minutes(1);
inline constexpr Duration kWindow5m = std::chrono::minutes(5);
inline constexpr Duration kWindow1h = std::chrono::hours(1);

// A ring of slot histograms for one series.
//
// Not thread-safe; the caller synchronises (Series does).
//
// Slots are aligned to multiples of `slot` since the Unix epoch. Each slot is stored compactly:
// only the range of buckets between its smallest and largest value, with 32-bit counts where
// they fit (a 1 s slot of values between 1 ms and 2 s takes about 3 KiB). Time comes from the
// caller, so tests drive it with a FakeClock.
class SlidingWindows {
 public:
  // REQUIRES: options.slot > 0, fine_slots >= 1, coarse_factor >= 1, coarse_slots >= 0.
  explicit SlidingWindows(WindowOptions options = {});
  ~SlidingWindows();
  SlidingWindows(SlidingWindows&&) noexcept;
  SlidingWindows& operator=(SlidingWindows&&) noexcept;

  // Adds `interval`, recorded during the slot that contains `t`. Adding to a slot that already
  // has data merges into it. Data for a slot older than the fine ring (fine_slots behind the
  // newest slot seen) is dropped and counted in late_drops(); late data inside the fine ring is
  // also merged into its coarse slot when that slot is still kept.
  void Add(WallTime t, const Histogram& interval);

  // Merges the slots that start in [now - length, now). Windows longer than fine_slots * slot
  // are assembled from coarse slots and may leave out up to one coarse slot at their old edge.
  // Slots older than what is kept contribute nothing, so expired data disappears by itself.
  Histogram Window(Duration length, WallTime now) const;
  void WindowInto(Duration length, WallTime now, Histogram& out) const;

  // Longest window that can be answered: fine_slots * slot + coarse_slots * coarse slot length.
  Duration span() const;

  // Values (in range or not) that arrived too late to be kept.
  uint64_t late_drops() const;

  // Bytes held by the stored slots (not counting the options and ring bookkeeping).
  size_t MemoryBytes() const;

  const WindowOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailguard

#endif  // TAILGUARD_WINDOWS_H_
