// The debounce state machine of one (rule, series): Normal / PreAlert / Alert plus the tier.
#ifndef TAILGUARD_ALERT_DEBOUNCE_H_
#define TAILGUARD_ALERT_DEBOUNCE_H_

#include <array>
#include <cstdint>

#include "tailguard/alert.h"

namespace tailguard::alert_internal {

// One change made by DebounceMachine::Step().
struct Transition {
  AlertEventKind kind;
  AlertState from_state;
  AlertState to_state;
  int from_tier;
  int to_tier;
};

// Everything a DebounceMachine holds, for saving and restoring the engine's state.
struct DebounceSnapshot {
  AlertState state = AlertState::kNormal;
  int tier = -1;
  WallTime since{};
  WallTime breach_start{};
  std::array<uint32_t, kMaxAlertTiers> streak{};
  std::array<WallTime, kMaxAlertTiers> clean_since{};
};

// The algorithm (see AlertEngine in alert.h for the contract):
//   Each evaluation brings the highest breached tier b (-1: none). For every tier k the machine
//   keeps streak[k], the number of consecutive evaluations with b >= k, and clean_since[k], the
//   first evaluation of the current run with b < k. Breaches of tier k imply breaches of every
//   lower tier, so streak[] never increases with k.
//   - Normal -> PreAlert when streak[0] reaches pre_alert_after, at the highest tier whose
//     streak also reached it.
//   - PreAlert -> Alert when the time since the first evaluation of streak[0] reaches
//     alert_after (possibly in the same step as Normal -> PreAlert).
//   - PreAlert -> Normal at the first evaluation with b < 0.
//   - Alert -> Normal when b < 0 and clean_since[0] is resolve_after old.
//   - In PreAlert and Alert: escalate to the highest k above the tier with streak[k] >=
//     escalate_after; otherwise de-escalate when the tier's clean_since is deescalate_after
//     old, to the highest lower tier breached within deescalate_after (at least 0).
// Costs O(tiers) per step and never allocates.
//
// Not thread-safe; one per (rule, series), fed by the engine's thread.
class DebounceMachine {
 public:
  // The most transitions one Step() makes (Normal -> PreAlert -> Alert, or re-tier + fire).
  static constexpr int kMaxTransitions = 2;

  DebounceMachine() { clean_since_.fill(WallTime::min()); }

  // Feeds the evaluation at `t` with highest breached tier `breached` (-1 .. tiers-1), for a
  // rule with `tiers` tiers. Writes the transitions made to `out` and returns their count.
  // REQUIRES: t later than the previous step; 1 <= tiers <= kMaxAlertTiers.
  int Step(WallTime t, int breached, int tiers, const DebounceOptions& options,
           Transition out[kMaxTransitions]);

  AlertState state() const { return state_; }
  // -1 in Normal.
  int tier() const { return tier_; }
  // When the current state was entered (zero before the first transition).
  WallTime since() const { return since_; }
  // First evaluation of the current breach (meaningful while streak[0] > 0 or not Normal).
  WallTime breach_start() const { return breach_start_; }

  // Data came back at `t` after a gap during which the machine was not stepped (the statistic
  // was missing). Clean time seen before the gap does not count toward resolving or
  // de-escalating: an alert resolves only after resolve_after of clean data after the gap.
  void DataResumed(WallTime t);

  // True when the machine behaves like a new one at every step after `t` for a rule whose
  // resolve_after and deescalate_after are at most `horizon`: Normal, no breach being counted,
  // and every tier clean for at least `horizon` at `t`.
  bool IsIdleAt(WallTime t, Duration horizon) const;

  DebounceSnapshot Save() const;
  // Replaces the state. REQUIRES: s.tier < tiers of the rule it will be stepped for (-1 only in
  // Normal).
  void Load(const DebounceSnapshot& s);

 private:
  // True when tier k has not been breached for at least `d` by time t.
  bool CleanFor(int k, WallTime t, Duration d) const;
  // Escalation or de-escalation at `t`; writes at most one transition.
  int Retier(WallTime t, int tiers, const DebounceOptions& options, Transition* out);

  AlertState state_ = AlertState::kNormal;
  int tier_ = -1;
  WallTime since_{};
  WallTime breach_start_{};
  std::array<uint32_t, kMaxAlertTiers> streak_{};
  // WallTime::min() for a tier never breached.
  std::array<WallTime, kMaxAlertTiers> clean_since_;
};

}  // namespace tailguard::alert_internal

#endif  // TAILGUARD_ALERT_DEBOUNCE_H_
