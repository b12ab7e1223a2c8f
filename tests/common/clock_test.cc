// The fake clock moves only when told to; the real clock moves forward; durations format.
#include "tailguard/clock.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/format.h"

namespace tailguard {
namespace {

TEST(FakeClockTest, AdvancesBothReadingsTogether) {
  FakeClock clock;
  const MonoTime m0 = clock.MonotonicNow();
  const WallTime w0 = clock.WallNow();
  EXPECT_EQ(w0, FakeClock::DefaultStart());
  EXPECT_EQ(clock.MonotonicNow(), m0);  // does not move by itself
  clock.Advance(std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.MonotonicNow() - m0, std::chrono::milliseconds(1500));
  EXPECT_EQ(clock.WallNow() - w0, std::chrono::milliseconds(1500));
}

TEST(RealClockTest, MonotonicNeverGoesBack) {
  const Clock& c = Clock::Real();
  MonoTime prev = c.MonotonicNow();
  for (int i = 0; i < 1000; ++i) {
    const MonoTime now = c.MonotonicNow();
    ASSERT_GE(now, prev);
    prev = now;
  }
  // Some time after 2020 and before 2100.
  const auto secs =
      std::chrono::duration_cast<std::chrono::seconds>(c.WallNow().time_since_epoch()).count();
  EXPECT_GT(secs, 1577836800);
  EXPECT_LT(secs, 4102444800);
}

TEST(FormatTest, DurationsUseThreeSignificantDigits) {
  EXPECT_EQ(FormatDuration(950), "950ns");
  EXPECT_EQ(FormatDuration(12'340), "12.3us");
  EXPECT_EQ(FormatDuration(4'561'000), "4.56ms");
  EXPECT_EQ(FormatDuration(123'400'000), "123ms");
  EXPECT_EQ(FormatDuration(1.2e9), "1.20s");
  EXPECT_EQ(FormatDuration(150e9), "2.5min");
}

TEST(FormatTest, BytesAndCounts) {
  EXPECT_EQ(FormatBytes(512), "512B");
  EXPECT_EQ(FormatBytes(1536), "1.50KiB");
  EXPECT_EQ(FormatBytes(12.3 * 1024 * 1024), "12.3MiB");
  EXPECT_EQ(FormatCount(7), "7");
  EXPECT_EQ(FormatCount(2.5), "2.50");
  EXPECT_EQ(FormatCount(1500), "1.50k");
  EXPECT_EQ(FormatCount(12.3e6), "12.3M");
  EXPECT_EQ(FormatCount(std::nan("")), "NaN");
}

}  // namespace
}  // namespace tailguard
