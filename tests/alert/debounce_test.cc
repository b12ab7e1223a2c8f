// The debounce state machine on its own: every transition, flapping, tiers.
#include "alert/debounce.h"

#include <gtest/gtest.h>

#include "alert_test_util.h"

namespace tailguard::alert_internal {
namespace {

using alert_test::minutes;
using alert_test::seconds;
using alert_test::T0;

// Feeds one evaluation a second and records what the machine does.
class Driver {
 public:
  explicit Driver(int tiers = 1, DebounceOptions options = {}) : tiers_(tiers), options_(options) {}

  // One evaluation at the next second with highest breached tier `b`; returns its transitions.
  std::vector<Transition> Step(int b) {
    Transition out[DebounceMachine::kMaxTransitions];
    const int n = machine_.Step(now_, b, tiers_, options_, out);
    now_ += seconds(1);
    std::vector<Transition> v(out, out + n);
    all_.insert(all_.end(), v.begin(), v.end());
    return v;
  }
  // `count` evaluations at tier `b`.
  void Run(int b, int count) {
    for (int i = 0; i < count; ++i) Step(b);
  }

  const DebounceMachine& machine() const { return machine_; }
  const std::vector<Transition>& all() const { return all_; }
  WallTime now() const { return now_; }
  int Count(AlertEventKind k) const {
    int n = 0;
    for (const Transition& t : all_) n += t.kind == k;
    return n;
  }

 private:
  int tiers_;
  DebounceOptions options_;
  DebounceMachine machine_;
  WallTime now_ = T0();
  std::vector<Transition> all_;
};

TEST(DebounceTest, NormalToPreAlertAfterThreeConsecutiveBreaches) {
  Driver d;
  EXPECT_TRUE(d.Step(0).empty());
  EXPECT_TRUE(d.Step(0).empty());
  std::vector<Transition> t = d.Step(0);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kPreAlert);
  EXPECT_EQ(t[0].from_state, AlertState::kNormal);
  EXPECT_EQ(t[0].to_state, AlertState::kPreAlert);
  EXPECT_EQ(t[0].from_tier, -1);
  EXPECT_EQ(t[0].to_tier, 0);
  EXPECT_EQ(d.machine().breach_start(), T0());
}

TEST(DebounceTest, AClearEvaluationRestartsTheCount) {
  Driver d;
  d.Run(0, 2);
  d.Run(-1, 1);
  d.Run(0, 2);
  EXPECT_EQ(d.machine().state(), AlertState::kNormal);
  EXPECT_EQ(d.Step(0).size(), 1u);
  EXPECT_EQ(d.machine().state(), AlertState::kPreAlert);
}

TEST(DebounceTest, PreAlertToAlertOnceTheBreachLasted30s) {
  Driver d;
  d.Run(0, 30);  // t = 0 .. 29 s: PreAlert at 2 s, not yet 30 s
  EXPECT_EQ(d.machine().state(), AlertState::kPreAlert);
  std::vector<Transition> t = d.Step(0);  // t = 30 s after the first breach
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kFire);
  EXPECT_EQ(t[0].from_state, AlertState::kPreAlert);
  EXPECT_EQ(t[0].to_state, AlertState::kAlert);
  EXPECT_EQ(d.machine().since(), T0() + seconds(30));
}

TEST(DebounceTest, PreAlertToNormalWhenTheBreachStops) {
  Driver d;
  d.Run(0, 10);
  std::vector<Transition> t = d.Step(-1);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kCancel);
  EXPECT_EQ(t[0].from_state, AlertState::kPreAlert);
  EXPECT_EQ(t[0].to_state, AlertState::kNormal);
  EXPECT_EQ(t[0].to_tier, -1);
  // A new breach starts from scratch: three more evaluations, then 30 s again.
  d.Run(0, 2);
  EXPECT_EQ(d.machine().state(), AlertState::kNormal);
}

TEST(DebounceTest, AlertToNormalAfterOneMinuteContinuouslyClear) {
  Driver d;
  d.Run(0, 31);
  ASSERT_EQ(d.machine().state(), AlertState::kAlert);
  d.Run(-1, 30);
  d.Run(0, 1);  // a breach in the middle restarts the recovery clock
  d.Run(-1, 60);
  EXPECT_EQ(d.machine().state(), AlertState::kAlert);
  std::vector<Transition> t = d.Step(-1);  // 60 s after the first clear evaluation
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kResolve);
  EXPECT_EQ(t[0].from_state, AlertState::kAlert);
  EXPECT_EQ(t[0].to_state, AlertState::kNormal);
  EXPECT_EQ(t[0].from_tier, 0);
  EXPECT_EQ(d.Count(AlertEventKind::kFire), 1);
}

TEST(DebounceTest, CountsAndDurationsAreConfigurable) {
  DebounceOptions o;
  o.pre_alert_after = 1;
  o.alert_after = seconds(0);
  o.resolve_after = seconds(0);
  Driver d(1, o);
  std::vector<Transition> t = d.Step(0);
  ASSERT_EQ(t.size(), 2u);  // Normal -> PreAlert -> Alert in one evaluation
  EXPECT_EQ(t[0].kind, AlertEventKind::kPreAlert);
  EXPECT_EQ(t[1].kind, AlertEventKind::kFire);
  t = d.Step(-1);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kResolve);

  DebounceOptions slow;
  slow.pre_alert_after = 10;
  slow.alert_after = minutes(2);
  Driver s(1, slow);
  s.Run(0, 9);
  EXPECT_EQ(s.machine().state(), AlertState::kNormal);
  s.Run(0, 1);
  EXPECT_EQ(s.machine().state(), AlertState::kPreAlert);
  s.Run(0, 110);  // 119 s into the breach
  EXPECT_EQ(s.machine().state(), AlertState::kPreAlert);
  s.Run(0, 1);
  EXPECT_EQ(s.machine().state(), AlertState::kAlert);
}

TEST(DebounceTest, AlternatingBreachesNeverLeaveNormal) {
  Driver d;
  for (int i = 0; i < 10000; ++i) d.Step(i % 2 == 0 ? 0 : -1);
  EXPECT_TRUE(d.all().empty());
}

TEST(DebounceTest, BurstsOfTwoBreachesNeverLeaveNormal) {
  Driver d;
  for (int i = 0; i < 3000; ++i) {
    d.Run(0, 2);
    d.Run(-1, 1);
  }
  EXPECT_TRUE(d.all().empty());
}

TEST(DebounceTest, ShortBurstsNeverFire) {
  // Ten-second bursts pass PreAlert but never last 30 s: two events a burst, no Alert.
  Driver d;
  for (int i = 0; i < 100; ++i) {
    d.Run(0, 10);
    d.Run(-1, 5);
  }
  EXPECT_EQ(d.Count(AlertEventKind::kFire), 0);
  EXPECT_EQ(d.Count(AlertEventKind::kPreAlert), 100);
  EXPECT_EQ(d.Count(AlertEventKind::kCancel), 100);
}

TEST(DebounceTest, FlappingAroundAFiringAlertDoesNotResolveOrRefire) {
  Driver d;
  d.Run(0, 31);
  ASSERT_EQ(d.machine().state(), AlertState::kAlert);
  for (int i = 0; i < 1000; ++i) d.Step(i % 2 == 0 ? -1 : 0);
  EXPECT_EQ(d.machine().state(), AlertState::kAlert);
  EXPECT_EQ(d.all().size(), 2u);  // the PreAlert and the Fire only
}

TEST(DebounceTest, PreAlertStartsAtTheTierHeldThroughTheCount) {
  Driver d(3);
  d.Step(2);
  d.Step(1);
  std::vector<Transition> t = d.Step(2);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].to_tier, 1);  // tier 2 was not breached three times in a row
}

TEST(DebounceTest, EscalatesAfterThreeEvaluationsAboveAHigherTier) {
  Driver d(3);
  d.Run(0, 31);
  ASSERT_EQ(d.machine().state(), AlertState::kAlert);
  ASSERT_EQ(d.machine().tier(), 0);
  EXPECT_TRUE(d.Step(2).empty());
  EXPECT_TRUE(d.Step(2).empty());
  std::vector<Transition> t = d.Step(2);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kEscalate);
  EXPECT_EQ(t[0].from_state, AlertState::kAlert);
  EXPECT_EQ(t[0].to_state, AlertState::kAlert);
  EXPECT_EQ(t[0].from_tier, 0);
  EXPECT_EQ(t[0].to_tier, 2);
}

TEST(DebounceTest, DeescalatesAfterAMinuteBelowTheTierThenResolves) {
  Driver d(3);
  d.Run(2, 31);
  ASSERT_EQ(d.machine().tier(), 2);
  d.Run(1, 60);  // below tier 2 but above tier 1, from t = 31 s to 90 s
  EXPECT_EQ(d.machine().tier(), 2);
  std::vector<Transition> t = d.Step(1);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kDeescalate);
  EXPECT_EQ(t[0].to_tier, 1);
  d.Run(-1, 60);
  ASSERT_EQ(d.machine().state(), AlertState::kAlert);
  t = d.Step(-1);  // a minute clear: tier 1 and tier 0 together, so it resolves
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kResolve);
  EXPECT_EQ(t[0].from_tier, 1);
}

TEST(DebounceTest, DeescalationSkipsTiersClearForTheWholeMinute) {
  DebounceOptions o;
  o.resolve_after = minutes(5);
  Driver d(3, o);
  d.Run(2, 31);
  d.Run(0, 61);  // only tier 0 still breached, for a minute
  EXPECT_EQ(d.machine().tier(), 0);
  EXPECT_EQ(d.Count(AlertEventKind::kDeescalate), 1);
  EXPECT_EQ(d.machine().state(), AlertState::kAlert);
}

TEST(DebounceTest, TierFlappingIsBounded) {
  // A value bouncing between tier 1 and tier 2 every evaluation escalates at most once.
  Driver d(3);
  d.Run(1, 31);
  for (int i = 0; i < 1000; ++i) d.Step(i % 2 == 0 ? 2 : 1);
  EXPECT_EQ(d.Count(AlertEventKind::kEscalate), 0);
  // Bursts of three at tier 2, each followed by 20 s at tier 1: one escalation, no
  // de-escalation, because tier 2 never stays clear for a minute.
  for (int i = 0; i < 50; ++i) {
    d.Run(2, 3);
    d.Run(1, 20);
  }
  EXPECT_EQ(d.Count(AlertEventKind::kEscalate), 1);
  EXPECT_EQ(d.Count(AlertEventKind::kDeescalate), 0);
}

TEST(DebounceTest, EscalatesInPreAlertToo) {
  Driver d(2);
  d.Run(0, 3);
  ASSERT_EQ(d.machine().state(), AlertState::kPreAlert);
  d.Run(1, 2);
  std::vector<Transition> t = d.Step(1);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].kind, AlertEventKind::kEscalate);
  EXPECT_EQ(t[0].to_state, AlertState::kPreAlert);
  d.Run(1, 25);  // through t = 30 s: fires at tier 1
  EXPECT_EQ(d.machine().state(), AlertState::kAlert);
  EXPECT_EQ(d.machine().tier(), 1);
}

}  // namespace
}  // namespace tailguard::alert_internal
