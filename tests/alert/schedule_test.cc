// Schedules in a time zone: weekly periods across the weekend boundary, campaign windows, and
// rules whose thresholds follow them.
#include "alert/schedule.h"

#include <gtest/gtest.h>

#include "alert_test_util.h"

namespace tailguard {
namespace {

using alert_internal::ScheduleClock;
using alert_test::hours;
using alert_test::Local;
using alert_test::minutes;
using alert_test::P99;
using alert_test::seconds;

constexpr const char* kShanghai = "Asia/Shanghai";

absl::TimeZone Zone(const char* name) {
  absl::TimeZone tz;
  EXPECT_TRUE(absl::LoadTimeZone(name, &tz));
  return tz;
}

Schedule Weekend() {
  Schedule s;
  s.name = "weekend";
  s.days = 0x60;  // sat, sun
  return s;
}

Schedule Double11() {
  Schedule s;
  s.name = "double11";
  s.kind = Schedule::Kind::kWindow;
  s.from = Local(kShanghai, 2025, 11, 10, 20, 0);
  s.to = Local(kShanghai, 2025, 11, 12, 2, 0);
  return s;
}

TEST(ScheduleClockTest, WeekendStartsAtLocalMidnightNotUtcMidnight) {
  std::vector<Schedule> schedules = {Weekend()};
  ScheduleClock clock(Zone(kShanghai), schedules);
  // Friday 2025-11-14 23:59:59 in Shanghai is 15:59:59 UTC; a second later it is Saturday there
  // and still Friday in UTC.
  const WallTime friday_night = Local(kShanghai, 2025, 11, 14, 23, 59, 59);
  EXPECT_EQ(clock.ActiveAt(friday_night), 0u);
  EXPECT_EQ(clock.ActiveAt(friday_night + seconds(1)), 1u);
  EXPECT_EQ(friday_night + seconds(1), Local("UTC", 2025, 11, 14, 16, 0));
  // Sunday 23:59 is still the weekend; Monday 00:00 is not.
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 16, 23, 59)), 1u);
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 17, 0, 0)), 0u);

  // The same instants in UTC: the weekend starts eight hours later.
  ScheduleClock utc(absl::UTCTimeZone(), schedules);
  EXPECT_EQ(utc.ActiveAt(friday_night + seconds(1)), 0u);
  EXPECT_EQ(utc.ActiveAt(Local("UTC", 2025, 11, 15, 0, 0)), 1u);
}

TEST(ScheduleClockTest, CampaignWindowEdgesAreExactEvenInsideACachedMinute) {
  std::vector<Schedule> schedules = {Double11()};
  ScheduleClock clock(Zone(kShanghai), schedules);
  const WallTime from = schedules[0].from;
  const WallTime to = schedules[0].to;
  EXPECT_EQ(clock.ActiveAt(from - seconds(30)), 0u);
  EXPECT_EQ(clock.ActiveAt(from - std::chrono::nanoseconds(1)), 0u);
  EXPECT_EQ(clock.ActiveAt(from), 1u);
  EXPECT_EQ(clock.ActiveAt(from + seconds(1)), 1u);
  EXPECT_EQ(clock.ActiveAt(to - std::chrono::nanoseconds(1)), 1u);
  EXPECT_EQ(clock.ActiveAt(to), 0u);
  // Out of order queries are answered too.
  EXPECT_EQ(clock.ActiveAt(from + minutes(90)), 1u);
  EXPECT_EQ(clock.ActiveAt(from - minutes(90)), 0u);
}

TEST(ScheduleClockTest, CampaignEdgeInTheMiddleOfAMinute) {
  Schedule s = Double11();
  s.from += seconds(30);
  std::vector<Schedule> schedules = {s};
  ScheduleClock clock(Zone(kShanghai), schedules);
  EXPECT_EQ(clock.ActiveAt(s.from - seconds(10)), 0u);
  EXPECT_EQ(clock.ActiveAt(s.from + seconds(10)), 1u);
  EXPECT_EQ(clock.ActiveAt(s.from - seconds(20)), 0u);
}

TEST(ScheduleClockTest, NightShiftWrapsPastMidnight) {
  Schedule night;
  night.name = "friday_night";
  night.days = 1 << 4;  // friday
  night.start_minute = 22 * 60;
  night.end_minute = 6 * 60;
  std::vector<Schedule> schedules = {night};
  ScheduleClock clock(Zone(kShanghai), schedules);
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 14, 21, 59)), 0u);
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 14, 22, 0)), 1u);
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 15, 5, 59)), 1u);  // Saturday morning
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 15, 6, 0)), 0u);
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 15, 23, 0)), 0u);  // Saturday night
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 14, 3, 0)), 0u);   // Friday morning
}

TEST(ScheduleClockTest, SeveralSchedulesAtOnce) {
  std::vector<Schedule> schedules = {Weekend(), Double11()};
  ScheduleClock clock(Zone(kShanghai), schedules);
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 11, 12, 0)), 2u);  // Tuesday, campaign
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 15, 12, 0)), 1u);  // Saturday
  EXPECT_EQ(clock.ActiveAt(Local(kShanghai, 2025, 11, 13, 12, 0)), 0u);  // Thursday
}

// Rules follow the schedules: weekend thresholds and campaign thresholds.
class ScheduledRuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AlertConfig config;
    config.time_zone = kShanghai;
    Schedule weekend = Weekend();
    weekend.scale = 2.0;  // every rule: +10 % becomes +20 %
    config.schedules = {weekend, Double11()};
    AlertRule rule;
    rule.name = "risk";
    rule.tiers = {{Threshold::Relative(0.10), "warning", {"wecom"}, {}}};
    rule.debounce.pre_alert_after = 1;
    rule.debounce.alert_after = seconds(0);
    rule.debounce.resolve_after = seconds(0);
    rule.schedules = {{"double11", 1.0, {Threshold::Relative(0.40)}}};
    config.rules = {rule};
    auto engine = AlertEngine::Create(config, sink_);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  // Feeds a P99 of 0.115 s (+15 % over a 0.1 s baseline) at `t` and returns whether it fired.
  bool FiresAt(WallTime t) {
    sink_.Clear();
    engine_->Observe(P99(t, labels_, 0.115));
    engine_->Observe(P99(t + seconds(1), labels_, 0.090));  // and clear it again
    return alert_test::CountKind(sink_.events, AlertEventKind::kFire) == 1;
  }

  CollectingAlertSink sink_;
  std::unique_ptr<AlertEngine> engine_;
  Labels labels_ = {{"model", "risk-control"}};
};

TEST_F(ScheduledRuleTest, WeekdayUsesTheRuleThresholds) {
  EXPECT_TRUE(FiresAt(Local(kShanghai, 2025, 11, 14, 23, 59, 0)));  // Friday night
  ASSERT_FALSE(sink_.events.empty());
  EXPECT_EQ(sink_.events[0].schedule, "");
  EXPECT_NEAR(sink_.events[0].threshold, 0.110, 1e-12);
}

TEST_F(ScheduledRuleTest, WeekendScalesTheMargin) {
  // One minute later it is Saturday in Shanghai (still Friday in UTC): +20 %, no breach.
  EXPECT_FALSE(FiresAt(Local(kShanghai, 2025, 11, 15, 0, 0, 30)));
  EXPECT_TRUE(sink_.events.empty());
  // A bigger spike still fires, and says which schedule's threshold it crossed.
  sink_.Clear();
  engine_->Observe(P99(Local(kShanghai, 2025, 11, 15, 10, 0), labels_, 0.125));
  ASSERT_EQ(sink_.events.size(), 2u);
  EXPECT_EQ(sink_.events[1].kind, AlertEventKind::kFire);
  EXPECT_EQ(sink_.events[1].schedule, "weekend");
  EXPECT_NEAR(sink_.events[1].threshold, 0.120, 1e-12);
  // Monday morning: back to +10 %.
  engine_->Observe(P99(Local(kShanghai, 2025, 11, 15, 10, 1), labels_, 0.05));
  EXPECT_TRUE(FiresAt(Local(kShanghai, 2025, 11, 17, 0, 0, 30)));
}

TEST_F(ScheduledRuleTest, CampaignWindowReplacesTheThresholds) {
  const WallTime from = Local(kShanghai, 2025, 11, 10, 20, 0);
  const WallTime to = Local(kShanghai, 2025, 11, 12, 2, 0);
  EXPECT_TRUE(FiresAt(from - minutes(1)));  // before: +10 %
  EXPECT_FALSE(FiresAt(from));              // inside: +40 %
  sink_.Clear();
  engine_->Observe(P99(from + hours(3), labels_, 0.150));
  ASSERT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kFire), 1);
  EXPECT_EQ(sink_.events.back().schedule, "double11");
  EXPECT_NEAR(sink_.events.back().threshold, 0.140, 1e-12);
  engine_->Observe(P99(from + hours(3) + seconds(1), labels_, 0.05));
  EXPECT_FALSE(FiresAt(to - minutes(1)));
  EXPECT_TRUE(FiresAt(to));  // after: +10 % again (a Wednesday)
}

TEST_F(ScheduledRuleTest, CampaignOnAWeekendWinsBecauseItIsListedLater) {
  // Move the campaign onto a weekend: both are active; the later one (double11) applies.
  AlertConfig config = engine_->config();
  config.schedules[1].from = Local(kShanghai, 2025, 11, 15, 0, 0);
  config.schedules[1].to = Local(kShanghai, 2025, 11, 16, 0, 0);
  auto engine = AlertEngine::Create(config, sink_);
  ASSERT_TRUE(engine.ok());
  engine_ = *std::move(engine);
  sink_.Clear();
  engine_->Observe(P99(Local(kShanghai, 2025, 11, 15, 12, 0), labels_, 0.130));  // +30 %
  EXPECT_TRUE(sink_.events.empty());  // +40 % applies, not the weekend's +20 %
}

}  // namespace
}  // namespace tailguard
