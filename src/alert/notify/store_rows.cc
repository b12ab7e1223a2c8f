#include "alert/notify/store_rows.h"

#include <string>

namespace tailguard::notify {

store::TransitionRow StoreRow(const AlertEvent& e) {
  using store::EpisodeChange;
  using store::EpisodeState;
  store::TransitionRow r;
  r.time = e.time;
  r.state = e.to_state == AlertState::kAlert ? EpisodeState::kAlert : EpisodeState::kPreAlert;
  switch (e.kind) {
    case AlertEventKind::kPreAlert:
      r.change = EpisodeChange::kStart;
      break;
    case AlertEventKind::kFire:
    case AlertEventKind::kEscalate:
    case AlertEventKind::kDeescalate:
      r.change = EpisodeChange::kUpdate;
      break;
    case AlertEventKind::kNoData:
      r.change = EpisodeChange::kNoData;
      break;
    case AlertEventKind::kCancel:
      r.change = EpisodeChange::kEnd;
      r.state = EpisodeState::kCancelled;
      break;
    case AlertEventKind::kResolve:
      r.change = EpisodeChange::kEnd;
      r.state = EpisodeState::kResolved;
      break;
  }
  r.kind = AlertEventKindName(e.kind);
  r.from_state = AlertStateName(e.from_state);
  r.to_state = AlertStateName(e.to_state);
  r.from_tier = e.from_tier;
  r.to_tier = e.to_tier;
  r.rule = e.rule;
  r.series = e.series;
  r.metric = e.metric;
  r.labels = e.labels;
  r.stat = StatisticName(e.stat);
  r.unit = UnitName(e.unit);
  r.severity = e.severity;
  r.value = e.value;
  r.threshold = e.threshold;
  r.baseline_p99 = e.baseline_p99;
  r.breach_start = e.breach_start;
  r.schedule = e.schedule;
  r.actions = e.actions;
  return r;
}

store::NotificationRow StoreRow(const Notification& n) {
  store::NotificationRow r;
  r.time = n.time;
  r.receiver = n.receiver;
  r.group_key = n.group_key;
  r.status = NotifyStatusName(n.status);
  r.sequence = n.sequence;
  r.repeat = n.repeat;
  r.idempotency_key = n.idempotency_key;
  r.alerts.reserve(n.alerts.size());
  for (const NotifiedAlert& a : n.alerts) {
    r.alerts.push_back({.rule = a.rule,
                        .series = a.series,
                        .labels = a.labels,
                        .annotations = a.annotations,
                        .status = std::string(NotifyStatusName(a.status)),
                        .tier = a.tier,
                        .severity = a.severity,
                        .value = a.value,
                        .threshold = a.threshold,
                        .baseline_p99 = a.baseline_p99,
                        .starts_at = a.starts_at,
                        .ends_at = a.ends_at});
  }
  return r;
}

}  // namespace tailguard::notify
