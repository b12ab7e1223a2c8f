// SlidingWindows on a fake clock: window contents, expiry, roll-up into coarse slots, late data.
#include "tailguard/windows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "metrics/compact_histogram.h"

namespace tailguard {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

Histogram Of(uint64_t value, uint64_t n = 1) {
  Histogram h;
  h.RecordN(value, n);
  return h;
}

class WindowsTest : public ::testing::Test {
 protected:
  // Feeds one slot per second, `n` seconds, value = seconds since the start + 1.
  void Feed(SlidingWindows& w, int n) {
    for (int i = 0; i < n; ++i) {
      w.Add(clock_.WallNow(), Of(static_cast<uint64_t>(++fed_)));
      clock_.Advance(seconds(1));
    }
  }
  FakeClock clock_;
  int fed_ = 0;
};

TEST_F(WindowsTest, StandardWindowsHoldTheirSlots) {
  SlidingWindows w;
  Feed(w, 400);
  const WallTime now = clock_.WallNow();
  const Histogram h10 = w.Window(kWindow10s, now);
  EXPECT_EQ(h10.count(), 10u);
  EXPECT_EQ(h10.min(), 391u);
  EXPECT_EQ(h10.max(), 400u);
  EXPECT_EQ(w.Window(kWindow1m, now).count(), 60u);
  EXPECT_EQ(w.Window(kWindow5m, now).count(), 300u);
  EXPECT_EQ(w.Window(kWindow1m, now).min(), 341u);
}

TEST_F(WindowsTest, DataExpiresAsTheClockMovesOn) {
  SlidingWindows w;
  Feed(w, 20);
  EXPECT_EQ(w.Window(kWindow10s, clock_.WallNow()).count(), 10u);
  clock_.Advance(seconds(5));
  EXPECT_EQ(w.Window(kWindow10s, clock_.WallNow()).count(), 5u);
  clock_.Advance(seconds(6));
  EXPECT_TRUE(w.Window(kWindow10s, clock_.WallNow()).empty());
  EXPECT_EQ(w.Window(kWindow1m, clock_.WallNow()).count(), 20u);
  clock_.Advance(minutes(2));
  EXPECT_TRUE(w.Window(kWindow1m, clock_.WallNow()).empty());
}

TEST_F(WindowsTest, AnHourComesFromCoarseSlots) {
  SlidingWindows w;
  Feed(w, 3 * 3600);
  const Histogram hour = w.Window(kWindow1h, clock_.WallNow());
  // Exact to the minute at the old edge.
  EXPECT_GE(hour.count(), 3600u - 60u);
  EXPECT_LE(hour.count(), 3600u);
  EXPECT_GE(hour.min(), uint64_t{2 * 3600});
  EXPECT_EQ(hour.max(), uint64_t{3 * 3600});
  // A window past everything kept returns what is kept, no more.
  EXPECT_LE(w.Window(hours(5), clock_.WallNow()).count(), 3600u + 300u);
  EXPECT_EQ(w.span(), minutes(5) + hours(1));
}

TEST_F(WindowsTest, ValuesInOneSlotMerge) {
  SlidingWindows w;
  const WallTime t = clock_.WallNow();
  w.Add(t, Of(10));
  w.Add(t + milliseconds(999), Of(20));
  clock_.Advance(seconds(1));
  const Histogram h = w.Window(seconds(1), clock_.WallNow());
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.max(), 20u);
}

TEST_F(WindowsTest, LateDataWithinTheRingIsKeptOlderIsCountedAsDropped) {
  SlidingWindows w;
  Feed(w, 400);
  const WallTime now = clock_.WallNow();
  w.Add(now - seconds(30), Of(7, 5));  // still in the fine ring
  EXPECT_EQ(w.Window(kWindow1m, now).count(), 65u);
  w.Add(now - minutes(10), Of(7, 3));  // older than the fine ring
  EXPECT_EQ(w.late_drops(), 3u);
}

TEST_F(WindowsTest, EmptySlotsAdvanceTimeAndRollUp) {
  SlidingWindows w;
  Feed(w, 30);
  for (int i = 0; i < 3600; ++i) {
    w.Add(clock_.WallNow(), Histogram());
    clock_.Advance(seconds(1));
  }
  EXPECT_TRUE(w.Window(kWindow5m, clock_.WallNow()).empty());
  EXPECT_TRUE(w.Window(kWindow1h, clock_.WallNow()).empty());
}

TEST_F(WindowsTest, CustomSlotLength) {
  SlidingWindows w(
      {.slot = milliseconds(100), .fine_slots = 10, .coarse_factor = 10, .coarse_slots = 6});
  for (int i = 0; i < 100; ++i) {
    w.Add(clock_.WallNow(), Of(1));
    clock_.Advance(milliseconds(100));
  }
  EXPECT_EQ(w.Window(seconds(1), clock_.WallNow()).count(), 10u);
  EXPECT_EQ(w.Window(milliseconds(500), clock_.WallNow()).count(), 5u);
  EXPECT_EQ(w.Window(seconds(6), clock_.WallNow()).count(), 60u);
}

TEST(CompactHistogramTest, OneSecondSlotOfTypicalLatenciesFitsInEightKiB) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(std::log(1e6), std::log(2e9));
  Histogram h;
  for (int i = 0; i < 10'000; ++i) h.Record(static_cast<uint64_t>(std::exp(u(rng))));
  const CompactHistogram c(h);
  EXPECT_LE(c.MemoryBytes(), 8u * 1024);
  Histogram back;
  c.MergeInto(back);
  EXPECT_EQ(back, h);
}

TEST(CompactHistogramTest, HugeCountsKeepSixtyFourBits) {
  Histogram h;
  h.RecordN(1000, uint64_t{1} << 40);
  h.Record(2000);
  Histogram back;
  CompactHistogram(h).MergeInto(back);
  EXPECT_EQ(back, h);
}

}  // namespace
}  // namespace tailguard
