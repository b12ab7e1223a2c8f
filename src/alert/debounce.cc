// The debounce state machine; the algorithm is described in debounce.h.
#include "alert/debounce.h"

namespace tailguard::alert_internal {

bool DebounceMachine::CleanFor(int k, WallTime t, Duration d) const {
  if (streak_[k] > 0) return false;
  if (clean_since_[k] == WallTime::min()) return true;
  return t - clean_since_[k] >= d;
}

bool DebounceMachine::IsIdleAt(WallTime t, Duration horizon) const {
  if (state_ != AlertState::kNormal) return false;
  for (int k = 0; k < kMaxAlertTiers; ++k) {
    if (streak_[k] > 0) return false;
    if (clean_since_[k] != WallTime::min() && t - clean_since_[k] < horizon) return false;
  }
  return true;
}

void DebounceMachine::DataResumed(WallTime t) {
  for (int k = 0; k < kMaxAlertTiers; ++k) {
    // Tiers never breached stay so: they do not hold a de-escalation back.
    if (streak_[k] == 0 && clean_since_[k] != WallTime::min()) clean_since_[k] = t;
  }
}

DebounceSnapshot DebounceMachine::Save() const {
  return {state_, tier_, since_, breach_start_, streak_, clean_since_};
}

void DebounceMachine::Load(const DebounceSnapshot& s) {
  state_ = s.state;
  tier_ = s.tier;
  since_ = s.since;
  breach_start_ = s.breach_start;
  streak_ = s.streak;
  clean_since_ = s.clean_since;
}

int DebounceMachine::Retier(WallTime t, int tiers, const DebounceOptions& o, Transition* out) {
  int up = tier_;
  for (int k = tiers - 1; k > tier_; --k) {
    if (streak_[k] >= static_cast<uint32_t>(o.escalate_after)) {
      up = k;
      break;
    }
  }
  if (up > tier_) {
    *out = {AlertEventKind::kEscalate, state_, state_, tier_, up};
    tier_ = up;
    return 1;
  }
  if (tier_ <= 0 || !CleanFor(tier_, t, o.deescalate_after)) return 0;
  int down = 0;
  for (int k = tier_ - 1; k > 0; --k) {
    if (!CleanFor(k, t, o.deescalate_after)) {
      down = k;
      break;
    }
  }
  *out = {AlertEventKind::kDeescalate, state_, state_, tier_, down};
  tier_ = down;
  return 1;
}

int DebounceMachine::Step(WallTime t, int breached, int tiers, const DebounceOptions& o,
                          Transition out[kMaxTransitions]) {
  for (int k = 0; k < tiers; ++k) {
    if (k <= breached) {
      if (streak_[k] == 0 && k == 0) breach_start_ = t;
      if (streak_[k] != UINT32_MAX) ++streak_[k];
    } else if (streak_[k] > 0) {
      streak_[k] = 0;
      clean_since_[k] = t;
    }
  }

  int n = 0;
  switch (state_) {
    case AlertState::kNormal: {
      const auto need = static_cast<uint32_t>(o.pre_alert_after);
      if (streak_[0] < need) return 0;
      int tier = 0;
      while (tier + 1 < tiers && streak_[tier + 1] >= need) ++tier;
      out[n++] = {AlertEventKind::kPreAlert, AlertState::kNormal, AlertState::kPreAlert, -1, tier};
      state_ = AlertState::kPreAlert;
      tier_ = tier;
      since_ = t;
      break;
    }
    case AlertState::kPreAlert:
      if (breached < 0) {
        out[n++] = {AlertEventKind::kCancel, state_, AlertState::kNormal, tier_, -1};
        state_ = AlertState::kNormal;
        tier_ = -1;
        since_ = t;
        return n;
      }
      n += Retier(t, tiers, o, &out[n]);
      break;
    case AlertState::kAlert:
      if (breached < 0 && CleanFor(0, t, o.resolve_after)) {
        out[n++] = {AlertEventKind::kResolve, state_, AlertState::kNormal, tier_, -1};
        state_ = AlertState::kNormal;
        tier_ = -1;
        since_ = t;
        return n;
      }
      return Retier(t, tiers, o, &out[n]);
  }
  // In PreAlert here, with the breach still on.
  if (t - breach_start_ >= o.alert_after) {
    out[n++] = {AlertEventKind::kFire, AlertState::kPreAlert, AlertState::kAlert, tier_, tier_};
    state_ = AlertState::kAlert;
    since_ = t;
  }
  return n;
}

}  // namespace tailguard::alert_internal
